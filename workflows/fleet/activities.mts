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
	return {
		async [FLEET_CHECK_ACTIVITY](input: CheckBatchInput): Promise<CheckBatchResult> {
			const ids = input?.site_ids;
			if (!Array.isArray(ids) || ids.some((s) => typeof s !== 'string' || s === ''))
				throw ApplicationFailure.nonRetryable(
					`${FLEET_CHECK_ACTIVITY}: site_ids: must be a list of site ids`,
					'ValidationError',
				);
			return new CheckRun(client, rateCodes, input, ids).run();
		},
	};
}

/** One attempt of a batch: what the earlier attempts checked (heartbeat details), the lanes, the time budget. */
class CheckRun {
	private readonly ctx: Context | undefined;
	private readonly t0 = Date.now();
	private readonly budgetMs: number;
	private readonly done: Set<string>;
	private readonly attacked: string[];
	private readonly failed: [string, string][];
	private readonly checkedAt: Record<string, number> = {};
	private readonly urgent: Set<string>;
	private readonly queue: string[];
	private readonly gate = new RateGate();
	private stopped = false;
	private budgetHeld = false;

	constructor(
		private readonly client: Client,
		private readonly rateCodes: Set<number>,
		private readonly input: CheckBatchInput,
		ids: string[],
	) {
		try {
			this.ctx = Context.current();
		} catch {
			this.ctx = undefined; // called outside an activity (unit use)
		}
		const stc = this.ctx?.info.startToCloseTimeoutMs ?? 0;
		this.budgetMs = Math.max(
			500,
			Math.min(
				Number(input.budgetMs) > 0 ? Number(input.budgetMs) : Infinity,
				stc > 0 ? stc - this.callMaxMs() : Infinity,
				10 * 60_000,
			),
		);
		const prev = (this.ctx?.info.heartbeatDetails ?? undefined) as CheckProgress | undefined;
		this.done = new Set<string>(Array.isArray(prev?.done) ? prev.done : []);
		this.attacked = Array.isArray(prev?.attacked) ? [...prev.attacked] : [];
		this.failed = Array.isArray(prev?.failed) ? [...prev.failed] : [];
		this.urgent = new Set(Array.isArray(input.urgent) ? input.urgent : []);
		this.queue = ids.filter((s) => !this.done.has(s));
	}

	async run(): Promise<CheckBatchResult> {
		const concurrency = Math.max(1, Math.min(64, Math.floor(Number(this.input.concurrency) || 1)));
		const lanes = Math.min(concurrency, this.queue.length);
		await Promise.all(Array.from({ length: lanes }, (_, n) => this.lane(n)));
		return {
			attacked: this.attacked,
			deferred: [...this.queue],
			failed: this.failed,
			rateLimited: this.gate.limited,
			startedAt: this.t0,
			checkedAt: this.checkedAt,
			...(this.stopped && !this.gate.limited ? { outOfTime: true } : {}),
			...(this.budgetHeld ? { budgetHeld: true } : {}),
		};
	}

	/** Longest a call can take with the client's timeout and retries (+1 s of backoff and slack). */
	private callMaxMs() {
		const o = this.client.options;
		return (o?.timeoutMs ?? 15_000) * ((o?.retries ?? 0) + 1) + 1000;
	}

	private overBudget() {
		return this.ctx?.cancellationSignal.aborted || Date.now() - this.t0 > this.budgetMs;
	}

	private async lane(n: number) {
		while (this.queue.length) {
			if (!(await this.gate.pass(n, () => this.t0 + this.budgetMs)) || this.overBudget()) {
				this.stopped = true;
				return;
			}
			if (!(await this.check(this.queue.shift() as string))) return;
			if (this.ctx && !this.ctx.info.isLocal)
				this.ctx.heartbeat({
					done: [...this.done],
					attacked: this.attacked,
					failed: this.failed,
				} satisfies CheckProgress);
		}
	}

	/** One site's check; false when the lane stops (no turn in the request budget). */
	private async check(site_id: string): Promise<boolean> {
		try {
			const r = (await this.client.call(
				'dashboard.isUnderAttack',
				{ site_id },
				{
					priority: this.urgent.has(site_id) ? 'revert' : 'watch',
					budgetDeadline: this.t0 + this.budgetMs,
					budgetSince: this.input.dueAt?.[site_id],
				},
			)) as { status?: unknown };
			if (Number(r?.status) === 1) this.attacked.push(site_id);
			this.checkedAt[site_id] = Date.now();
			this.done.add(site_id);
			this.gate.answered();
		} catch (e) {
			if ((e as Error)?.name === 'BudgetDeferredError') {
				// No turn in the budget within the interval: not sent, checked first next tick.
				this.queue.unshift(site_id);
				this.stopped = true;
				this.budgetHeld = true;
				return false;
			}
			if (this.isRateLimited(e)) {
				// Refused, not checked: asked again first, once the back-off allows.
				this.queue.unshift(site_id);
				this.gate.refused();
			} else {
				this.failed.push([site_id, redactText((e as Error)?.message ?? String(e)).slice(0, 300)]);
				this.done.add(site_id);
				this.gate.answered();
			}
		}
		return true;
	}

	private isRateLimited(e: unknown) {
		const x = e as { name?: string; code?: number; rateLimited?: boolean };
		return (
			(x?.name === 'ApiError' && typeof x.code === 'number' && this.rateCodes.has(x.code)) ||
			(x?.name === 'TransportError' && x.rateLimited === true)
		);
	}
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
