// The cluster part of the request budget (docs/rate-budget.md). Every few seconds (never per request) each worker:
//  - counts the worker processes Temporal sees polling the task queue (DescribeTaskQueue): N;
//  - tells the `rateBudget` workflow what it asked for since the last refresh (signal-with-start) and reads back every
//    worker's report and the cluster's pause (query);
//  - takes its share of `api.rateLimit` by demand (sharesByDemand): a worker that asks for little gets what it asks
//    plus a margin, the rest is split among the workers that would use more. Without reports (Temporal unreachable,
//    first refresh) the share is 1/N, or 1/unknownWorkers while N is unknown.
// A retry hint one worker receives is signalled to the same workflow: the others read it on their next refresh.
import type { Client as TemporalClient } from '@temporalio/client';
import type { RateBudget } from '../../../api/rateBudget.ts';
import {
	budgetStateQuery,
	demandSignal,
	pauseSignal,
	rateBudget,
	rateBudgetWorkflowId,
	type BudgetState,
	type DemandReport,
} from '../../../workflows/rateBudget/rateBudget.mts';

export interface ShareOptions {
	namespace: string;
	taskQueue: string;
	/** This process's worker identity (as its pollers report it). */
	identity: string;
	/** How often the share and the cluster's pause are read (ms; default 2000). */
	refreshMs?: number;
	/** Workers assumed while their number is unknown (start, Temporal unreachable): the share is 1/this (default 8). */
	unknownWorkers?: number;
	/** A poller not seen for this long no longer counts (ms; default 90 s: an idle poll lasts up to ~70 s). */
	pollerWindowMs?: number;
	onChange?: (s: { workers: number | undefined; share: number }) => void;
	/** After every refresh (the share gauge). */
	onRefresh?: () => void;
}

/** Distinct worker identities polling `taskQueue` (workflow and activity pollers) seen within the window, with `identity`. */
export async function liveWorkers(
	temporal: TemporalClient,
	o: Pick<ShareOptions, 'namespace' | 'taskQueue' | 'identity' | 'pollerWindowMs'>,
): Promise<Set<string>> {
	const ids = new Set<string>([o.identity]);
	const window = o.pollerWindowMs ?? 90_000;
	// TaskQueueType 1 = workflow, 2 = activity; TaskQueueKind 1 = normal (temporal.api.enums.v1)
	for (const taskQueueType of [1, 2]) {
		const r = await temporal.workflowService.describeTaskQueue({
			namespace: o.namespace,
			taskQueue: { name: o.taskQueue, kind: 1 },
			taskQueueType,
		});
		for (const p of r.pollers ?? []) {
			const seen = p.lastAccessTime
				? Number(p.lastAccessTime.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime.nanos ?? 0) / 1e6)
				: 0;
			if (p.identity && Date.now() - seen <= window) ids.add(p.identity);
		}
	}
	return ids;
}

/**
 * Every worker's share (0–1) of the budget, from the same reports (so they add up to 1):
 *  1. the two top classes first: each worker gets 1.25 × the mitigate/revert rate it asked for, at least a quarter
 *     of an even share (a sudden mitigation write has budget at once), and an even share when such a call waited;
 *  2. the rest by demand of the lower classes: a worker that did not wait gets 1.25 × what it asked (if the first
 *     step left it short); the workers that waited ("hungry"), or did not report, split what is left in proportion
 *     to how many lower-class calls they kept waiting on average (`lowQueue`: one per fleet-watch lane), so a
 *     worker running three watchers gets three times the share of one running a single watcher, and every watcher
 *     the same rate; a worker without a report weighs as much as the hungriest that reported;
 *  3. nobody hungry: what is left is spread evenly (work-conserving).
 */
export function sharesByDemand(live: Set<string>, demand: BudgetState['demand'], rps: number): Map<string, number> {
	const ids = [...live].sort();
	const n = ids.length;
	const fair = 1 / n;
	const floor = 0.25 / n;
	const base = new Map<string, number>();
	for (const id of ids) {
		const d = demand[id];
		const high = d ? (1.25 * Math.min(d.rps, d.rpsHigh ?? 0)) / rps : 0;
		base.set(id, Math.max(floor, high, d?.hungryHigh ? fair : 0));
	}
	const baseSum = [...base.values()].reduce((a, b) => a + b, 0);
	if (baseSum >= 1) return new Map(ids.map((id) => [id, (base.get(id) as number) / baseSum]));
	const out = new Map(base);
	let rest = 1 - baseSum;
	// capped claims (did not wait): what they asked, beyond what step 1 gave them
	const hungry: string[] = [];
	const capped: [string, number][] = [];
	for (const id of ids) {
		const d = demand[id];
		if (!d || d.hungry) hungry.push(id);
		else capped.push([id, Math.max(0, (1.25 * d.rps) / rps - (base.get(id) as number))]);
	}
	const weights = new Map<string, number>();
	const reported = hungry.map((id) => demand[id]?.lowQueue).filter((x): x is number => x !== undefined);
	const unknownWeight = Math.max(1, ...reported);
	for (const id of hungry) {
		const q = demand[id]?.lowQueue;
		weights.set(id, demand[id] ? Math.max(1, q ?? 1) : unknownWeight);
	}
	const capSum = capped.reduce((a, [, c]) => a + c, 0);
	if (!hungry.length) {
		// nobody would use more: each gets what it asked, and the rest evenly
		const k = capSum > rest ? rest / capSum : 1;
		for (const [id, c] of capped) out.set(id, (out.get(id) as number) + c * k);
		const left = rest - Math.min(capSum, rest);
		for (const id of ids) out.set(id, (out.get(id) as number) + left / n);
		return out;
	}
	// weighted water-filling: the capped claims are met when the hungry get at least as much per weight unit
	const wSum = [...weights.values()].reduce((a, b) => a + b, 0);
	const sortedCaps = [...capped].sort((x, y) => x[1] - y[1]);
	let wTotal = wSum + sortedCaps.length;
	for (const [id, c] of sortedCaps) {
		if (c <= rest / wTotal) {
			out.set(id, (out.get(id) as number) + c);
			rest -= c;
			wTotal -= 1;
		} else break;
	}
	const level = rest / wTotal;
	for (const [id, c] of sortedCaps)
		if (out.get(id) === base.get(id) && c > 0) out.set(id, (out.get(id) as number) + level);
	for (const id of hungry) out.set(id, (out.get(id) as number) + level * (weights.get(id) as number));
	return out;
}

/**
 * The lower classes' queue as reported (the weight of a hungry worker in sharesByDemand): a running mean (each
 * refresh half the weight), and the last report kept while that mean stays within 15 % of it. The queue of a steady
 * watch wobbles from refresh to refresh (lanes between batches); every wobble moved the split, and a larger share
 * waits a refresh for the others (startClusterShare), so each move left budget unused. A real change (a watcher more
 * or less) is reported within a few refreshes.
 */
export function steadyQueue(): (measured: number) => number {
	let mean: number | undefined;
	let reported = 0;
	return (measured) => {
		mean = mean === undefined ? measured : (mean + measured) / 2;
		if (Math.abs(mean - reported) > 0.15 * Math.max(reported, 1) || reported === 0)
			reported = Math.round(mean * 100) / 100;
		return reported;
	};
}

export interface ClusterShare {
	/** Tells the cluster the service asked to wait `ms` (signal-with-start of the budget workflow). */
	retryHint(ms: number): void;
	readonly workers: number | undefined;
	stop(): void;
}

/**
 * The share this worker takes after a report: its share by demand (sharesByDemand) of the budget workflow's state,
 * a larger one held back until the others have read the report that asked for it (below). `history` keeps this
 * worker's recent reports and the share each gave it.
 */
function shareFrom(
	state: BudgetState,
	live: Set<string>,
	report: DemandReport,
	identity: string,
	rps: number,
	history: { at: number; share: number }[],
	current: number,
	now: number,
): number {
	const mine = state.demand[identity];
	let share =
		sharesByDemand(live, { ...state.demand, [identity]: { ...report, at: mine?.at ?? now } }, rps).get(identity) ??
		1 / live.size;
	// A larger share waits until the others have read the report that asked for it: each other worker that
	// reports took its own share from the last report of this one it read (the newest made before its own),
	// so this worker takes at most the smallest share any of those reports gave it; a smaller share applies
	// at once. So the cluster never holds more than the budget while the split moves (within one report).
	const at = mine?.at ?? now;
	history.push({ at, share });
	if (history.length > 16) history.shift();
	if (share > current + 1e-9) {
		let allowed = share;
		for (const [id, x] of Object.entries(state.demand)) {
			if (id === identity || !live.has(id)) continue;
			// a worker that did not count this one yet left it nothing
			const seen = x.live && !x.live.includes(identity) ? undefined : history.filter((h) => h.at < x.at).at(-1);
			allowed = Math.min(allowed, seen ? seen.share : current);
		}
		share = Math.max(current, allowed);
	}
	return share;
}

/** Signal-with-start of the cluster's budget workflow: a pause (a retry hint) or this worker's demand report. */
const signalBudget =
	(temporal: () => TemporalClient, wfId: string, taskQueue: string) =>
	(signal: typeof pauseSignal | typeof demandSignal, arg: number | DemandReport) =>
		signal === pauseSignal
			? temporal().workflow.signalWithStart(rateBudget, {
					workflowId: wfId,
					taskQueue: taskQueue,
					args: [{}],
					signal: pauseSignal,
					signalArgs: [arg as number],
				})
			: temporal().workflow.signalWithStart(rateBudget, {
					workflowId: wfId,
					taskQueue: taskQueue,
					args: [{}],
					signal: demandSignal,
					signalArgs: [arg as DemandReport],
				});

/** What this worker asked of the budget since its last report (per second over `secs`), and who it sees live. */
function demandReport(
	budget: RateBudget,
	identity: string,
	live: Set<string>,
	queueReport: ReturnType<typeof steadyQueue>,
	secs: number,
): DemandReport {
	const d = budget.takeDemand();
	return {
		worker: identity,
		rps: d.asked / secs,
		hungry: d.hungry,
		rpsHigh: d.askedHigh / secs,
		hungryHigh: d.hungryHigh,
		lowQueue: queueReport(d.lowQueue),
		...(live.size <= 64 ? { live: [...live].sort() } : {}),
	};
}

/** Tells the cluster a retry hint: one signal per distinct pause (many refused calls in flight carry the same hint). */
function retryHinter(start: ReturnType<typeof signalBudget>): (ms: number) => void {
	let signalled = 0;
	return (ms) => {
		const until = Date.now() + ms;
		if (until <= signalled + 250) return;
		signalled = until;
		void start(pauseSignal, until).catch((e) =>
			console.warn(
				`secsvc worker: could not tell the cluster of a retry hint (${(e as Error).message}); this worker pauses alone`,
			),
		);
	};
}

export function startClusterShare(budget: RateBudget, temporal: () => TemporalClient, o: ShareOptions): ClusterShare {
	const refreshMs = o.refreshMs ?? 2000;
	const unknown = o.unknownWorkers ?? 8;
	const rps = budget.settings.app.rps;
	let workers: number | undefined;
	let failures = 0;
	let stopped = false;
	let last = Date.now();
	let stateFailures = 0;
	const queueReport = steadyQueue();
	/** This worker's recent reports (workflow time) and the share each gave it. */
	const history: { at: number; share: number }[] = [];
	const wfId = rateBudgetWorkflowId(o.taskQueue);
	const start = signalBudget(temporal, wfId, o.taskQueue);
	budget.setShare(1 / unknown);
	const apply = (n: number | undefined, share: number) => {
		const changed = n !== workers;
		workers = n;
		budget.setShare(share);
		if (changed) o.onChange?.({ workers: n, share: budget.currentShare });
	};
	const refresh = async () => {
		let live: Set<string>;
		try {
			live = await liveWorkers(temporal(), o);
			failures = 0;
		} catch {
			// Temporal unreachable: the last share a little longer, then the safe one.
			if (++failures >= 3) apply(undefined, 1 / unknown);
			return;
		}
		const now = Date.now();
		const report = demandReport(budget, o.identity, live, queueReport, Math.max(0.2, (now - last) / 1000));
		last = now;
		let state: BudgetState | undefined;
		try {
			await start(demandSignal, report);
			state = await temporal().workflow.getHandle(wfId).query(budgetStateQuery);
			stateFailures = 0;
		} catch {
			state = undefined;
		}
		if (state) budget.pauseUntil(state.pausedUntil);
		let share: number;
		if (state) {
			share = shareFrom(state, live, report, o.identity, rps, history, budget.currentShare, now);
		} else {
			// No reports: the last share a little longer, then an even one.
			share = ++stateFailures >= 3 ? 1 / live.size : Math.min(budget.currentShare, 1 / live.size);
		}
		apply(live.size, share);
		o.onRefresh?.();
	};
	let timer: NodeJS.Timeout | undefined;
	const loop = async () => {
		if (stopped) return;
		await refresh().catch(() => {});
		if (!stopped) timer = setTimeout(loop, refreshMs).unref();
	};
	void loop();
	return {
		retryHint: retryHinter(start),
		get workers() {
			return workers;
		},
		stop() {
			stopped = true;
			if (timer) clearTimeout(timer);
		},
	};
}
