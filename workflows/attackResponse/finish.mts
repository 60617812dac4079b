import { ApplicationFailure } from '@temporalio/workflow';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import type { Runbook } from './context.mts';

/** Step 7 — the result: times (detect / mitigate / revert), outcome; a failure or cancellation is rethrown after the revert. */
export function finish(rb: Runbook, ending: { failure?: unknown; cancelError?: unknown }): AttackResponseResult {
	const { state, changes } = rb;
	rb.phase('done');
	const reverted = state.revertedAt ? Date.parse(state.revertedAt) : Date.now();
	const eventStartMs = state.eventStart !== undefined ? state.eventStart * 1000 : undefined;
	const base = eventStartMs ?? rb.started;
	const times: Partial<AttackResponseResult> = {
		timeToDetectSeconds: eventStartMs !== undefined ? Math.max(0, (rb.started - eventStartMs) / 1000) : undefined,
		timeToMitigateSeconds: state.mitigatedAt ? (Date.parse(state.mitigatedAt) - base) / 1000 : undefined,
		timeToRevertSeconds: state.attackEndedAt ? (reverted - Date.parse(state.attackEndedAt)) / 1000 : undefined,
	};
	const revertFailed = changes.filter((c) => c.status === 'revert-failed');
	const cancelled = ending.cancelError !== undefined;
	if (ending.failure !== undefined || cancelled || revertFailed.length) {
		const r = rb.result(cancelled ? 'cancelled-reverted' : 'failed-reverted', { ...times, error: state.error });
		rb.lastResult = r;
		rb.obs.finish(r);
		if (cancelled && !revertFailed.length) throw ending.cancelError;
		throw ApplicationFailure.nonRetryable(
			`runbook failed (${state.error ?? 'revert failed'}); ${revertFailed.length ? `${revertFailed.length} change(s) could not be reverted` : 'changes reverted'}`,
			revertFailed.length ? 'RevertFailed' : 'RunbookFailed',
			r,
		);
	}
	rb.lastResult = rb.result(
		state.aborted ? 'aborted-reverted' : state.endedBy === 'max-duration' ? 'max-duration-reverted' : 'reverted',
		times,
	);
	rb.obs.finish(rb.lastResult);
	return rb.lastResult;
}
