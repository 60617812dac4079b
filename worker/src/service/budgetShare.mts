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
	/** Every refresh: what was read and the share taken (the request trace, worker/src/process/requestTrace.mts). */
	onRefresh?: (r: Record<string, unknown>) => void;
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
 * This worker's share (0–1) of the budget: max-min fair by demand. Each live worker's need is 1.25 × the rate it
 * asked for (at least a quarter of an even share, so a sudden mitigation write has budget at once); a worker that
 * waited, reported nothing, or needs at least an even share is "hungry"; the hungry split what the others leave.
 * Every worker computes it from the same reports, so the shares add up to the whole (within one refresh).
 */
export function sharesByDemand(live: Set<string>, demand: BudgetState['demand'], rps: number): Map<string, number> {
	const ids = [...live].sort();
	const n = ids.length;
	const fair = 1 / n;
	const floor = 0.25 / n;
	const given = new Map<string, number>();
	const hungry: string[] = [];
	for (const id of ids) {
		const d = demand[id];
		const need = d ? Math.max(floor, (1.25 * d.rps) / rps) : Infinity;
		if (!d || d.hungry || need >= fair) hungry.push(id);
		else given.set(id, need);
	}
	const rest = 1 - [...given.values()].reduce((a, b) => a + b, 0);
	const out = new Map<string, number>();
	if (hungry.length) {
		for (const id of ids) out.set(id, given.get(id) ?? rest / hungry.length);
	} else for (const id of ids) out.set(id, (given.get(id) as number) + rest / n);
	return out;
}

export interface ClusterShare {
	/** Tells the cluster the service asked to wait `ms` (signal-with-start of the budget workflow). */
	retryHint(ms: number): void;
	readonly workers: number | undefined;
	stop(): void;
}

export function startClusterShare(budget: RateBudget, temporal: () => TemporalClient, o: ShareOptions): ClusterShare {
	const refreshMs = o.refreshMs ?? 2000;
	const unknown = o.unknownWorkers ?? 8;
	const rps = budget.settings.app.rps;
	let workers: number | undefined;
	let failures = 0;
	let stopped = false;
	let signalled = 0;
	let last = Date.now();
	const wfId = rateBudgetWorkflowId(o.taskQueue);
	const start = (signal: typeof pauseSignal | typeof demandSignal, arg: number | DemandReport) =>
		signal === pauseSignal
			? temporal().workflow.signalWithStart(rateBudget, {
					workflowId: wfId,
					taskQueue: o.taskQueue,
					args: [{}],
					signal: pauseSignal,
					signalArgs: [arg as number],
				})
			: temporal().workflow.signalWithStart(rateBudget, {
					workflowId: wfId,
					taskQueue: o.taskQueue,
					args: [{}],
					signal: demandSignal,
					signalArgs: [arg as DemandReport],
				});
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
		const d = budget.takeDemand();
		const report = { worker: o.identity, rps: d.asked / Math.max(0.2, (now - last) / 1000), hungry: d.hungry };
		last = now;
		let state: BudgetState | undefined;
		try {
			await start(demandSignal, report);
			state = await temporal().workflow.getHandle(wfId).query(budgetStateQuery);
		} catch {
			state = undefined;
		}
		if (state) budget.pauseUntil(state.pausedUntil);
		const share = state
			? (sharesByDemand(live, { ...state.demand, [o.identity]: { ...report, at: now } }, rps).get(o.identity) ??
				1 / live.size)
			: 1 / live.size;
		apply(live.size, share);
		o.onRefresh?.({
			workers: live.size,
			share: budget.currentShare,
			report,
			others: state
				? Object.entries(state.demand)
						.filter(([id]) => id !== o.identity)
						.map(([id, d]) => ({ id, ...d }))
				: null,
		});
	};
	let timer: NodeJS.Timeout | undefined;
	const loop = async () => {
		if (stopped) return;
		await refresh().catch(() => {});
		if (!stopped) timer = setTimeout(loop, refreshMs).unref();
	};
	void loop();
	return {
		retryHint(ms: number) {
			const until = Date.now() + ms;
			// one signal per distinct pause (many refused calls in flight carry the same hint)
			if (until <= signalled + 250) return;
			signalled = until;
			void start(pauseSignal, until).catch((e) =>
				console.warn(
					`secsvc worker: could not tell the cluster of a retry hint (${(e as Error).message}); this worker pauses alone`,
				),
			);
		},
		get workers() {
			return workers;
		},
		stop() {
			stopped = true;
			if (timer) clearTimeout(timer);
		},
	};
}
