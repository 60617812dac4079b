import { ApplicationFailure, log as wlog, metricMeter, setHandler } from '@temporalio/workflow';
import {
	abortSignal,
	approveSignal,
	auditQuery,
	changesQuery,
	extendCooldownSignal,
	planQuery,
	resultQuery,
	stateQuery,
	decideUpdate,
} from './messages.mts';
import type { Runbook } from './context.mts';
import { checkDecision, deciderOf, type DecideRequest } from './approval.mts';
import { identityText } from '../../api/decideRules.ts';
import { abortInputProblem, extendInputProblem } from '../../api/signalRules.ts';

/** Refused signals spelled out in the audit (the rest are counted in `state.refusedSignals`): a flood cannot push the runbook's own entries out. */
export const MAX_REFUSED_IN_AUDIT = 20;
export const SIGNALS_REFUSED_METRIC = 'secsvc_signals_refused';

/**
 * Queries (state, plan, changes, audit, result), the `decide` Update and the signals (approve, abort, extendCooldown).
 * Every way in obeys one set of rules: the `approve` signal is a decision like `decide` (checkDecision in
 * approval.mts, the single place where a decision's rules live) and the other signals are checked too
 * (api/signalRules.ts). A signal cannot answer, so one that breaks a rule changes nothing and is recorded as
 * refused: an audit entry `refused: <field>: <rule>` (the first MAX_REFUSED_IN_AUDIT), `state.refusedSignals`, the
 * counter `secsvc_signals_refused{signal}` and a worker log warning.
 */
export function registerHandlers(rb: Runbook): void {
	registerQueries(rb);
	const refuse = refuser(rb);
	registerDecisions(rb, refuse);
	registerOperatorSignals(rb, refuse);
}

function registerQueries(rb: Runbook): void {
	const { state, changes } = rb;
	setHandler(stateQuery, () => ({
		...state,
		changes: changes.length,
		conflicts: changes.filter((c) => c.status === 'conflict').length,
	}));
	setHandler(planQuery, () => rb.input?.plan);
	setHandler(changesQuery, () => changes);
	setHandler(resultQuery, () => rb.lastResult);
	setHandler(auditQuery, () => rb.audit);
}

type Refuse = (signal: string, rule: string, what?: string) => void;

/** How a signal that breaks a rule is recorded: audit entry (the first few), count, metric, worker log. */
function refuser(rb: Runbook): Refuse {
	const { state, log } = rb;
	return (signal: string, rule: string, what = `${signal} signal refused`) => {
		state.refusedSignals = (state.refusedSignals ?? 0) + 1;
		if (state.refusedSignals <= MAX_REFUSED_IN_AUDIT)
			log('signal', what, 'the signal breaks a rule; nothing changed', { result: `refused: ${rule}` });
		metricMeter
			.createCounter(
				SIGNALS_REFUSED_METRIC,
				'1',
				'signals a runbook refused (a rule broken; nothing changed), by signal',
			)
			.add(1, { signal });
		wlog.warn('runbook signal refused', { signal, rule, refused: state.refusedSignals });
	};
}

const problemOf = (f: () => void): string | undefined => {
	try {
		f();
		return undefined;
	} catch (e) {
		return String((e as Error)?.message ?? e);
	}
};

/** The approval gate's ways in: the `decide` Update and the older `approve` signal, under the same rules. */
function registerDecisions(rb: Runbook, refuse: Refuse): void {
	const { log } = rb;
	// The `decide` Update's rules, for scripts that still signal: no answer, recorded via 'signal'.
	setHandler(approveSignal, (a: unknown) => {
		const raw = a && typeof a === 'object' && !Array.isArray(a) ? (a as Record<string, unknown>) : undefined;
		const req = (
			raw ? { approved: raw.approved, by: raw.by, ...(raw.reason !== undefined ? { reason: raw.reason } : {}) } : a
		) as DecideRequest;
		const problem = problemOf(() => checkDecision(rb, req));
		if (problem) return refuse('approve', problem);
		// A signal cannot carry a proof (it would be history in plain text): only compatibility mode gets here.
		const identity = { verified: 'unverified' as const, name: String(req.by).trim() };
		const at = new Date(Date.now()).toISOString();
		rb.approval = { approved: req.approved, by: identity.name, reason: req.reason, via: 'signal', at, identity };
		log('signal', req.approved ? 'approve' : 'reject', req.reason ?? 'operator decision', {
			result: `by ${identity.name} via signal at ${at} (${identityText(identity)})`,
		});
	});
	setHandler(
		decideUpdate,
		async (req) => {
			// The proof is verified outside the sandbox (local activity), then every rule applies again to the verified
			// identity (the state may have changed while it ran). A refusal changes nothing.
			const identity = await deciderOf(rb, req);
			try {
				checkDecision(rb, req, identity);
			} catch (e) {
				// A person who may not decide (not an approver, the starter) is refused here, not by the validator, so the
				// attempt is in the audit: `decide refused` by whom, with the rule. Nothing else changes.
				const rule = (e as Error).message;
				refuse('decide', rule, `decide refused (${req.approved ? 'approve' : 'reject'} by ${identity.name})`);
				throw ApplicationFailure.nonRetryable(rule, 'DecisionRefused'); // fails the Update, not the task
			}
			const at = new Date(Date.now()).toISOString();
			const by = identity.name;
			const via = req.via ?? 'api';
			rb.approval = { approved: req.approved, by, reason: req.reason, via, at, identity };
			log('signal', req.approved ? 'approve' : 'reject', req.reason ?? 'operator decision', {
				result: `by ${by} via ${via} at ${at} (${identityText(identity)})`,
			});
			return {
				accepted: true as const,
				decision: req.approved ? 'approved' : 'rejected',
				by,
				identity,
				at,
				via,
				...(req.reason ? { reason: req.reason } : {}),
			};
		},
		// Input, state and phase are checked before the Update is accepted; who decides, by the handler (audited).
		{ validator: (req) => checkDecision(rb, req, undefined, false) },
	);
}

function registerOperatorSignals(rb: Runbook, refuse: Refuse): void {
	const { state, log } = rb;
	setHandler(abortSignal, (a: unknown) => {
		const problem = abortInputProblem(a);
		if (problem) return refuse('abort', problem);
		const r = (a ?? {}) as { by?: string; reason?: string };
		state.aborted = true;
		state.abortReason = r.reason || 'abort signal';
		log('signal', 'abort', state.abortReason, { result: r.by ?? undefined });
	});
	setHandler(extendCooldownSignal, (a: unknown) => {
		const problem = extendInputProblem(a);
		if (problem) return refuse('extendCooldown', problem);
		const r = a as { seconds: number; by?: string };
		state.extraCooldownSeconds += r.seconds;
		log('signal', `extend cooldown by ${r.seconds}s`, 'operator request', { result: r.by ?? undefined });
	});
}
