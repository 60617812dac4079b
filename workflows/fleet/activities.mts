import { Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '../../api/client.ts';
import { redactText } from '../../api/redact.ts';
import { FLEET_CHECK_ACTIVITY, type CheckBatchInput, type CheckBatchResult, type CheckProgress } from './shared.mts';

/**
 * The fleet watchers' batch activity (workflows/fleet/fleetWatch.mts): `dashboard.isUnderAttack` for each site of a batch,
 * at most `concurrency` calls in flight, ONE call per site per attempt and per batch:
 * - Progress (sites checked, their answers) goes into the heartbeat details after every check; a retried attempt
 *   (worker killed, timeout) reads them and calls only the sites not checked yet, so a retry never calls a site twice.
 *   (Local activities have no heartbeat: their in-process retries happen only on bad input, which is not retried.)
 * - No new call starts after `budgetMs` (the watcher passes its interval) nor after the activity is cancelled, and
 *   never so late that the calls in flight could outlast the start-to-close timeout: the batch returns in time, so
 *   it is not retried as a whole; the sites not sent come back as `deferred` and are checked first next tick.
 * - A rate-limited answer (HTTP 429 or a rate-limit code, after the client's own retry) slows the batch, it does not
 *   end it (`RateGate`): one call at a time, backing off (full jitter, 250 ms doubling to 2 s) and asking the site
 *   again, until the service answers again or the budget is over (`rateLimited: true`: the watcher also halves its
 *   concurrency for the next tick). Only the sites the budget did not reach come back `deferred`.
 * - With a request budget (api.rateLimit, docs/rate-budget.md) the checks are class `watch` (a site past its
 *   starvation bound, `urgent`, class `revert`), and a call whose turn does not come before the budget ends is not
 *   sent: the site comes back `deferred` (the watch stretches its interval before the service refuses anything).
 * Other failures are reported per site; the activity itself fails only on bad input.
 */
export function createFleetActivities(client: Client, opts: { rateLimitCodes?: readonly number[] } = {}) {
	const rateCodes = new Set(opts.rateLimitCodes ?? [42901]);
	const isRateLimited = (e: unknown) => {
		const x = e as { name?: string; code?: number; rateLimited?: boolean };
		return (
			(x?.name === 'ApiError' && typeof x.code === 'number' && rateCodes.has(x.code)) ||
			(x?.name === 'TransportError' && x.rateLimited === true)
		);
	};
	/** Longest a call can take with the client's timeout and retries (+1 s of backoff and slack). */
	const callMaxMs = () => (client.options?.timeoutMs ?? 15_000) * ((client.options?.retries ?? 0) + 1) + 1000;
	return {
		async [FLEET_CHECK_ACTIVITY](input: CheckBatchInput): Promise<CheckBatchResult> {
			const ids = input?.site_ids;
			if (!Array.isArray(ids) || ids.some((s) => typeof s !== 'string' || s === ''))
				throw ApplicationFailure.nonRetryable(
					`${FLEET_CHECK_ACTIVITY}: site_ids: must be a list of site ids`,
					'ValidationError',
				);
			const concurrency = Math.max(1, Math.min(64, Math.floor(Number(input.concurrency) || 1)));
			let ctx: Context | undefined;
			try {
				ctx = Context.current();
			} catch {
				ctx = undefined; // called outside an activity (unit use)
			}
			const t0 = Date.now();
			const info = ctx?.info;
			const stc = info?.startToCloseTimeoutMs ?? 0;
			const budgetMs = Math.max(
				500,
				Math.min(
					Number(input.budgetMs) > 0 ? Number(input.budgetMs) : Infinity,
					stc > 0 ? stc - callMaxMs() : Infinity,
					10 * 60_000,
				),
			);
			const prev = (info?.heartbeatDetails ?? undefined) as CheckProgress | undefined;
			const done = new Set<string>(Array.isArray(prev?.done) ? prev.done : []);
			const attacked: string[] = Array.isArray(prev?.attacked) ? [...prev.attacked] : [];
			const failed: [string, string][] = Array.isArray(prev?.failed) ? [...prev.failed] : [];
			const todo = ids.filter((s) => !done.has(s));
			const deferred: string[] = [];
			const checkedAt: Record<string, number> = {};
			const heartbeat =
				info && !info.isLocal
					? () => ctx?.heartbeat({ done: [...done], attacked, failed } satisfies CheckProgress)
					: () => {};
			const gate = new RateGate();
			let stopped = false;
			let budgetHeld = false;
			const urgent = new Set(Array.isArray(input.urgent) ? input.urgent : []);
			const queue = [...todo];
			const overBudget = () => ctx?.cancellationSignal.aborted || Date.now() - t0 > budgetMs;
			const lane = async (n: number) => {
				while (queue.length) {
					if (!(await gate.pass(n, () => t0 + budgetMs)) || overBudget()) {
						stopped = true;
						return;
					}
					const site_id = queue.shift() as string;
					try {
						const r = (await client.call(
							'dashboard.isUnderAttack',
							{ site_id },
							{ priority: urgent.has(site_id) ? 'revert' : 'watch', budgetDeadline: t0 + budgetMs },
						)) as { status?: unknown };
						if (Number(r?.status) === 1) attacked.push(site_id);
						checkedAt[site_id] = Date.now();
						done.add(site_id);
						gate.answered();
					} catch (e) {
						if ((e as Error)?.name === 'BudgetDeferredError') {
							// No turn in the budget within the interval: not sent, checked first next tick.
							queue.unshift(site_id);
							stopped = true;
							budgetHeld = true;
							return;
						}
						if (isRateLimited(e)) {
							// Refused, not checked: asked again first, once the back-off allows.
							queue.unshift(site_id);
							gate.refused();
						} else {
							failed.push([site_id, redactText((e as Error)?.message ?? String(e)).slice(0, 300)]);
							done.add(site_id);
							gate.answered();
						}
					}
					heartbeat();
				}
			};
			await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, (_, n) => lane(n)));
			deferred.push(...queue);
			return {
				attacked,
				deferred,
				failed,
				rateLimited: gate.limited,
				startedAt: t0,
				checkedAt,
				...(stopped && !gate.limited ? { outOfTime: true } : {}),
				...(budgetHeld ? { budgetHeld: true } : {}),
			};
		},
	};
}

/**
 * Back-off of one batch after rate-limited answers: while the service refuses, only lane 0 sends, one call at a time,
 * each after a full-jitter pause (250 ms doubling to 2 s; the client has already retried once); the first answered
 * call ends it and every lane sends again. `pass` answers false when the pause would end after the deadline.
 */
export class RateGate {
	limited = false;
	private backoffMs = 0;
	private until = 0;
	constructor(private readonly random: () => number = Math.random) {}
	refused(): void {
		this.limited = true;
		this.backoffMs = Math.min(2000, Math.max(250, this.backoffMs * 2));
		this.until = Date.now() + this.backoffMs * (0.5 + this.random() / 2);
	}
	answered(): void {
		this.backoffMs = 0;
	}
	async pass(lane: number, deadline: () => number): Promise<boolean> {
		for (;;) {
			if (this.backoffMs === 0) return true;
			if (lane !== 0) {
				// Other lanes wait for the service to answer again (checked every 100 ms, never past the deadline).
				if (Date.now() + 100 > deadline()) return false;
				await sleep(100);
				continue;
			}
			const wait = this.until - Date.now();
			if (wait <= 0) return true;
			if (Date.now() + wait > deadline()) return false;
			await sleep(wait);
		}
	}
}
