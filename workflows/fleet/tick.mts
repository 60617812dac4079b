import { ActivityFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { FLEET_CHECK_ACTIVITY, type CheckBatchResult, type SiteState } from './shared.mts';
import type { createFleetActivities } from './activities.mts';

/**
 * One tick of a fleet watcher (workflows/fleet/fleetWatch.mts): every batch of sites through the batch activity
 * (`fleet.checkSites`), the sites' states updated, and the runbooks of attacked sites started AS SOON AS THEIR BATCH
 * RETURNS (not after the whole tick):
 * - local batches run one after another; when a batch finds an attack the next batch waits until the runbooks have
 *   started (a workflow task with a local activity outstanding is not completed, so the start command would otherwise
 *   wait for the rest of the tick);
 * - regular batches run side by side, at most `parallel` at once (one activity each).
 * A rate-limited batch slows down inside its activity (worker/src/fleetActivities.mts `RateGate`) and the tick goes
 * on with the next batches within the interval (`backoff`, since `patched('fleet-tick-backoff')`); runs recorded
 * before it replay the old way: a rate-limited batch stopped the tick and the batches not started were deferred.
 */

/** The batch activity as its factory makes it (./activities.mts; a type only). */
type Acts = ReturnType<typeof createFleetActivities>;
const retry = { maximumAttempts: 3, initialInterval: '500ms' } as const;
// The batch stops sending at its budget (≤ the interval) and early enough for its calls in flight to finish inside
// the start-to-close timeout, so it is not retried as a whole for being slow.
const local = proxyLocalActivities<Acts>({ startToCloseTimeout: '60s', retry });
const regularFor = (intervalSeconds: number) =>
	proxyActivities<Acts>({
		startToCloseTimeout: '60s',
		// A killed worker's batch is retried within this (from the last heartbeat); the retry skips the sites the
		// heartbeats recorded as checked.
		heartbeatTimeout: `${Math.min(30, Math.max(3, Math.ceil(intervalSeconds / 2)))}s`,
		retry,
	});

export interface TickOptions {
	activities: 'local' | 'regular';
	concurrency: number;
	parallel: number;
	intervalSeconds: number;
	/** Time budget of the next batch (ms). */
	budgetMs: () => number;
	states: Map<string, SiteState>;
	/** Sites past their starvation bound (sent to the batch activity, which checks them in a higher class). */
	urgent?: Set<string>;
	/** Rate limiting slows the tick instead of ending it (`patched('fleet-tick-backoff')`, in the watcher). */
	backoff?: boolean;
	/** A site's check time is when its answer came (the batch's record), not when its batch returned (`fleet-check-times`). */
	checkTimes?: boolean;
	/** Starts the runbooks of these attacked sites (filtered for one per site); resolves when they are started. */
	startRunbooks: (attacked: string[]) => Promise<void>[];
}

export interface TickResult {
	deferred: string[];
	rateLimited: boolean;
	/**
	 * How much later than asked the latest batch began sending (its activity's clock minus the workflow clock when it
	 * was asked; ms, ≥ 0): a batch re-run after a lost workflow task or retried after a kill. Only sizes a timer.
	 */
	lateMs: number;
	/** A batch's call waited for the request budget past the tick's end (its sites are in `deferred`). */
	budgetHeld: boolean;
}

/** When a site's check fell due: an interval after its last check; 0 when never checked (overdue the longest). */
const dueAt = (at: number | undefined, intervalSeconds: number) => (at ? at + intervalSeconds * 1000 : 0);

export async function runTick(batches: string[][], o: TickOptions): Promise<TickResult> {
	const check = (o.activities === 'regular' ? regularFor(o.intervalSeconds) : local)[FLEET_CHECK_ACTIVITY];
	const { states } = o;
	const deferred: string[] = [];
	const starting: Promise<void>[] = [];
	let limited = false;
	let lateMs = 0;
	let budgetHeld = false;

	const defer = (batch: string[], why: string) => {
		for (const s of batch) states.set(s, { ...states.get(s), state: 'deferred', why });
		deferred.push(...batch);
	};
	/** Runs one batch; returns the runbook starts it caused. */
	const one = async (batch: string[]): Promise<Promise<void>[]> => {
		if (limited && !o.backoff) {
			defer(batch, 'rate limited: checked first next tick');
			return [];
		}
		let r: CheckBatchResult;
		const askedAt = Date.now();
		try {
			const urgent = o.urgent ? batch.filter((s) => o.urgent?.has(s)) : [];
			r = await check({
				site_ids: batch,
				concurrency: o.concurrency,
				budgetMs: o.budgetMs(),
				...(urgent.length ? { urgent } : {}),
				dueAt: Object.fromEntries(batch.map((s) => [s, dueAt(states.get(s)?.at, o.intervalSeconds)])),
			});
		} catch (e) {
			const why = e instanceof ActivityFailure ? (e.cause?.message ?? e.message) : (e as Error).message;
			for (const s of batch) states.set(s, { ...states.get(s), at: states.get(s)?.at, state: 'error', why });
			return [];
		}
		if (r.startedAt !== undefined) lateMs = Math.max(lateMs, r.startedAt - askedAt);
		const now = Date.now();
		const bad = new Map(r.failed);
		const later = new Set(r.deferred);
		const hit = new Set(r.attacked);
		const laterWhy = r.rateLimited
			? 'rate limited: checked first next tick'
			: 'not reached within the interval: checked first next tick';
		for (const s of batch) {
			const prev = states.get(s);
			const at = (o.checkTimes ? r.checkedAt?.[s] : undefined) ?? now;
			if (later.has(s)) states.set(s, { ...prev, state: 'deferred', why: laterWhy });
			else if (bad.has(s)) states.set(s, { ...prev, at: now, state: 'error', why: bad.get(s) });
			else if (hit.has(s)) states.set(s, { at, state: 'attack', runbook: prev?.runbook });
			else states.set(s, { at, state: 'quiet', runbook: prev?.runbook });
		}
		deferred.push(...r.deferred);
		if (r.rateLimited) limited = true;
		if (r.budgetHeld) budgetHeld = true;
		const started = r.attacked.length ? o.startRunbooks(r.attacked) : [];
		starting.push(...started);
		return started;
	};

	if (o.activities === 'regular') {
		let next = 0;
		const lane = async () => {
			// eslint-disable-next-line @typescript-eslint/no-floating-promises -- the runbook starts are in `starting`, awaited below
			while (next < batches.length) await one(batches[next++]);
		};
		await Promise.all(Array.from({ length: Math.max(1, Math.min(o.parallel, batches.length)) }, lane));
	} else {
		for (const batch of batches) {
			const started = await one(batch);
			if (started.length) await Promise.all(started);
		}
	}
	await Promise.all(starting);
	return { deferred, rateLimited: limited, lateMs, budgetHeld };
}
