import {
	allHandlersFinished,
	ApplicationFailure,
	condition,
	ContinueAsNew,
	continueAsNew,
	log as wlog,
	workflowInfo,
} from '@temporalio/workflow';
import type { AttackResponseInput, RunbookCarry } from '../../api/runbook/contract.ts';
import { CONTINUE_AS_NEW_EVENTS } from '../../api/runbook/planItems.ts';
import type { PlanContext, Runbook } from './context.mts';

/**
 * Step 5b — a long wait never reaches Temporal's history limits (warning at 10,240 events; the run is TERMINATED at
 * 51,200 events or 50 MB, which would leave the mitigation in place and never revert it). Between two polls, once
 * the run's history has plan.execution.continueAsNewAfterEvents events (default 2,000) or Temporal suggests it, the
 * runbook continues as new: same workflow id (its holds at the site coordinator, keyed by workflow id, stay its
 * own; queries, signals and Updates reach the new run), whole state carried (RunbookCarry), and the new run goes
 * straight back to the wait (attackResponse.mts: `mitigateThenRevert` without the apply). A PINNED runbook's new
 * run stays on its build (Temporal inherits the pinned version on continue-as-new). Runs recorded before this step
 * replay unchanged (`patched`).
 */
export const CONTINUE_PATCH = 'runbook-continue-as-new';

/** Carried payloads stay well below Temporal's 2 MB payload limit (audit and samples are bounded; this is the net). */
const MAX_CARRY_CHARS = 1_500_000;

export function historyFull(ctx: PlanContext): boolean {
	const info = workflowInfo();
	// A plan parsed by an older worker (recorded in an older history) has no threshold: the default applies.
	return (
		info.continueAsNewSuggested ||
		info.historyLength >= (ctx.plan.execution.continueAsNewAfterEvents ?? CONTINUE_AS_NEW_EVENTS.default)
	);
}

export function carryOf(rb: Runbook): RunbookCarry {
	if (rb.wait.mitigatedMs === undefined) throw new Error('continue-as-new outside the wait');
	const carry: RunbookCarry = {
		v: 1,
		startedMs: rb.started,
		state: { ...rb.state, continuedAsNew: (rb.state.continuedAsNew ?? 0) + 1 },
		changes: rb.changes,
		audit: rb.audit,
		skipped: rb.skipped,
		heldByOthers: rb.heldByOthers,
		waitedForApiSeconds: rb.waitedForApiSeconds,
		...(rb.approval ? { approval: rb.approval } : {}),
		...(rb.approvers ? { approvers: rb.approvers } : {}),
		samples: rb.obs.samples(),
		wait: {
			mitigatedMs: rb.wait.mitigatedMs,
			...(rb.wait.endedAtMs !== undefined ? { endedAtMs: rb.wait.endedAtMs } : {}),
		},
	};
	// Net under the bounds: thin the samples, then keep only the audit's head and tail, until it fits.
	while (JSON.stringify(carry).length > MAX_CARRY_CHARS && (carry.samples.length > 10 || carry.audit.length > 20)) {
		carry.samples = carry.samples.filter((_, i) => i % 2 === 1);
		if (carry.audit.length > 20) {
			const drop = Math.ceil((carry.audit.length - 20) / 2);
			carry.audit = [
				...carry.audit.slice(0, 10),
				{
					at: carry.audit[10].at,
					step: carry.audit[10].step,
					what: `${drop} audit entries omitted`,
					why: 'the carried state must fit in one payload',
					result: 'omitted',
				},
				...carry.audit.slice(10 + drop + 1),
			];
			carry.state.auditOmitted = (carry.state.auditOmitted ?? 0) + drop;
		}
	}
	return carry;
}

/**
 * Called between two polls of the wait. Continues as new when the history is full (returns only when it is not, or
 * for runs recorded before this step). Nothing is in flight then: no activity (the poll round has finished), and
 * signal and Update handlers are let finish first.
 */
export async function continueIfFull(rb: Runbook, ctx: PlanContext): Promise<void> {
	if (!historyFull(ctx) || rb.state.aborted || !rb.patches.continueAsNew) return;
	await condition(allHandlersFinished);
	if (rb.state.aborted) return; // an abort arrived meanwhile: the wait ends in this run
	const info = workflowInfo();
	const run = (rb.state.continuedAsNew ?? 0) + 2;
	rb.log(
		'waiting',
		`continued as new (run ${run})`,
		`the run's history had ${info.historyLength} events${info.continueAsNewSuggested ? ' (Temporal suggested it)' : ''}: the wait goes on in a fresh run with the same workflow id`,
	);
	const carry = carryOf(rb);
	wlog.info('attack response continues as new', {
		site_id: ctx.site,
		historyLength: info.historyLength,
		continuedAsNew: carry.state.continuedAsNew,
	});
	rb.obs.handOff();
	await continueAsNew<(input: AttackResponseInput) => Promise<unknown>>({
		plan: rb.input.plan,
		...(rb.input.dryRun ? { dryRun: true } : {}),
		carry,
	});
}

export const isContinueAsNew = (e: unknown): boolean => e instanceof ContinueAsNew;

/** A carried state must come from a runbook's own continue-as-new: anything else fails the run, naming the field. */
export function checkCarry(input: AttackResponseInput): void {
	const c = input?.carry as Partial<RunbookCarry> | undefined;
	if (c === undefined) return;
	const bad = (field: string, rule: string) =>
		ApplicationFailure.nonRetryable(
			`carry.${field}: ${rule} (set only by the runbook's own continue-as-new)`,
			'ValidationError',
		);
	if (typeof c !== 'object' || c === null) throw bad('(carry)', 'must be an object');
	if (c.v !== 1) throw bad('v', 'must be 1');
	if (typeof c.startedMs !== 'number' || !Number.isFinite(c.startedMs)) throw bad('startedMs', 'must be a time in ms');
	if (!c.state || typeof c.state !== 'object' || c.state.phase !== 'waiting')
		throw bad('state', "must be a runbook state in phase 'waiting'");
	for (const f of ['changes', 'audit', 'skipped', 'heldByOthers', 'samples'] as const)
		if (!Array.isArray(c[f])) throw bad(f, 'must be a list');
	if (!c.wait || typeof c.wait.mitigatedMs !== 'number') throw bad('wait.mitigatedMs', 'must be a time in ms');
}
