import { setHandler } from '@temporalio/workflow';
import { abortSignal, approveSignal, auditQuery, changesQuery, extendCooldownSignal, planQuery, resultQuery, stateQuery } from '../defs.mts';
import type { Runbook } from './context.mts';
import { checkDecision, decideUpdate } from './approval.mts';

/** Queries (state, plan, changes, audit, result) and signals (approve, abort, extendCooldown) of a runbook. */
export function registerHandlers(rb: Runbook): void {
	const { state, changes, log } = rb;
	setHandler(stateQuery, () => ({ ...state, changes: changes.length, conflicts: changes.filter((c) => c.status === 'conflict').length }));
	setHandler(planQuery, () => rb.input?.plan);
	setHandler(changesQuery, () => changes);
	setHandler(resultQuery, () => rb.lastResult);
	setHandler(auditQuery, () => rb.audit);
	// Kept for runbooks started by older builds (and scripts that still signal): no check, no answer, via 'signal'.
	setHandler(approveSignal, (a) => {
		if (rb.approval === undefined) rb.approval = { approved: Boolean(a?.approved), by: a?.by, reason: a?.reason, via: 'signal', at: new Date(Date.now()).toISOString() };
		log('signal', a?.approved ? 'approve' : 'reject', a?.reason ?? 'operator decision', { result: `by ${a?.by ?? 'unknown'} via signal` });
	});
	setHandler(
		decideUpdate,
		(req) => {
			const at = new Date(Date.now()).toISOString();
			const by = req.by.trim();
			const via = req.via ?? 'api';
			rb.approval = { approved: req.approved, by, reason: req.reason, via, at };
			log('signal', req.approved ? 'approve' : 'reject', req.reason ?? 'operator decision', { result: `by ${by} via ${via} at ${at}` });
			return { accepted: true as const, decision: req.approved ? 'approved' : 'rejected', by, at, via, ...(req.reason ? { reason: req.reason } : {}) };
		},
		{ validator: (req) => checkDecision(rb, req) },
	);
	setHandler(abortSignal, (a) => {
		state.aborted = true;
		state.abortReason = a?.reason ?? 'abort signal';
		log('signal', 'abort', state.abortReason, { result: a?.by });
	});
	setHandler(extendCooldownSignal, (a) => {
		const s = Math.max(0, Math.floor(Number(a?.seconds) || 0));
		state.extraCooldownSeconds += s;
		log('signal', `extend cooldown by ${s}s`, 'operator request', { result: a?.by });
	});
}
