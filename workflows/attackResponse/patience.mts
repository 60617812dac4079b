import { ActivityFailure, ApplicationFailure, sleep } from '@temporalio/workflow';
import type { PlanContext, Runbook } from './context.mts';
import { errText } from './settings.mts';

/**
 * Never give up on a transient API failure too early where giving up would disarm the site or leave it tightened
 * (the mitigation writes and the revert): repeats `fn`
 * (whose activities already retried a few times) with backoff up to 30 s while the failure is transient (API down,
 * timeouts, rate limiting), up to plan.apiPatienceSeconds. Records how long it waited in the audit and in
 * `rb.waitedForApiSeconds`. A permanent failure (validation, a refused request) is thrown at once.
 */
export async function withPatience<T>(rb: Runbook, ctx: PlanContext, what: string, fn: () => Promise<T>, giveUp: () => boolean = () => false): Promise<T> {
	const start = Date.now();
	let blindFrom: number | undefined;
	let delay = 1000;
	for (;;) {
		const attemptStart = Date.now();
		try {
			const r = await fn();
			if (blindFrom !== undefined) {
				const s = Math.round((Date.now() - blindFrom) / 1000);
				rb.waitedForApiSeconds += s;
				rb.log(rb.state.phase, `${what}: the API answered again`, `waited ${s}s for the API`);
			}
			return r;
		} catch (e) {
			if (!isTransient(e) || giveUp() || Date.now() - start >= ctx.plan.apiPatienceSeconds * 1000) throw e;
			if (blindFrom === undefined) {
				blindFrom = attemptStart;
				rb.log(rb.state.phase, `${what}: the API is not answering`, `${errText(e)}; retrying until it answers (up to ${ctx.plan.apiPatienceSeconds}s)`);
			}
			await sleep(delay);
			delay = Math.min(delay * 2, 30_000);
		}
	}
}

/** Transient: anything but a failure the activity marked non-retryable (validation, a refused request, unknown outcome). */
export function isTransient(e: unknown): boolean {
	const cause = e instanceof ActivityFailure ? e.cause : e;
	return !(cause instanceof ApplicationFailure && cause.nonRetryable);
}
