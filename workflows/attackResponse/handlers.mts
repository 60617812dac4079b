import { setHandler } from '@temporalio/workflow';
import { abortSignal, approveSignal, auditQuery, changesQuery, extendCooldownSignal, planQuery, resultQuery, stateQuery } from '../defs.mts';
import type { Runbook } from './context.mts';

/** Queries (state, plan, changes, audit, result) and signals (approve, abort, extendCooldown) of a runbook. */
export function registerHandlers(rb: Runbook): void {
	const { state, changes, log } = rb;
	setHandler(stateQuery, () => ({ ...state, changes: changes.length, conflicts: changes.filter((c) => c.status === 'conflict').length }));
	setHandler(planQuery, () => rb.input?.plan);
	setHandler(changesQuery, () => changes);
	setHandler(resultQuery, () => rb.lastResult);
	setHandler(auditQuery, () => rb.audit);
	setHandler(approveSignal, (a) => {
		if (rb.approval === undefined) rb.approval = { approved: Boolean(a?.approved), by: a?.by, reason: a?.reason };
		log('signal', a?.approved ? 'approve' : 'reject', a?.reason ?? 'operator decision', { result: a?.by });
	});
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
