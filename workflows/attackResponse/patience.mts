import { ActivityFailure, ApplicationFailure, sleep } from '@temporalio/workflow';
import type { PlanContext, Runbook } from './context.mts';
import { errText } from './settings.mts';

/**
 * Never give up on a transient API failure too early where giving up would disarm the site or leave it tightened
 * (the mitigation writes and the revert): repeats `fn`
 * (whose activities already retried a few times) with backoff while the failure is transient (API down, timeouts,
 * rate limiting), up to plan.apiPatienceSeconds. Records how long it waited in the audit and in
 * `rb.waitedForApiSeconds`. A permanent failure (validation, a refused request) is thrown at once.
 * The backoff (`patienceDelayMs`) stays short while an outage is short and grows with it, so a day-long outage adds a
 * few thousand history events, not ~30,000 (each attempt is an activity, a timer and their workflow tasks; these
 * steps are not continued as new, and Temporal terminates a run at 51,200 events).
 */
export async function withPatience<T>(
	rb: Runbook,
	ctx: PlanContext,
	what: string,
	fn: () => Promise<T>,
	giveUp: () => boolean = () => false,
): Promise<T> {
	const start = Date.now();
	let blindFrom: number | undefined;
	let attempt = 0;
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
				rb.log(
					rb.state.phase,
					`${what}: the API is not answering`,
					`${errText(e)}; retrying until it answers (up to ${ctx.plan.apiPatienceSeconds}s)`,
				);
			}
			await sleep(patienceDelayMs(attempt++, Date.now() - blindFrom));
		}
	}
}

/**
 * Wait before the next attempt: 1 s doubling per attempt, at most 30 s during the first 10 minutes of an outage,
 * 2 min until it has lasted an hour, then 5 min (a 24 h outage: ~330 attempts instead of ~2,900).
 */
export function patienceDelayMs(attempt: number, blindMs: number): number {
	const cap = blindMs < 600_000 ? 30_000 : blindMs < 3_600_000 ? 120_000 : 300_000;
	return Math.min(1000 * 2 ** Math.min(attempt, 20), cap);
}

/** Transient: anything but a failure the activity marked non-retryable (validation, a refused request, unknown outcome). */
export function isTransient(e: unknown): boolean {
	const cause = e instanceof ActivityFailure ? e.cause : e;
	return !(cause instanceof ApplicationFailure && cause.nonRetryable);
}
