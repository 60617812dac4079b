// The cluster part of the request budget (docs/rate-budget.md): this process's share of `api.rateLimit` follows the
// worker processes Temporal sees polling the task queue (DescribeTaskQueue, refreshed every few seconds, never per
// request), and a retry hint one worker receives pauses every worker (the `rateBudget` workflow: signal-with-start by
// the refused worker, read by the others on the same refresh).
import { WorkflowNotFoundError, type Client as TemporalClient } from '@temporalio/client';
import type { RateBudget } from '../../../api/rateBudget.ts';
import { pauseSignal, pausedUntilQuery, rateBudget, rateBudgetWorkflowId } from '../../../workflows/rateBudget.mts';

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
}

/** Distinct worker identities polling `taskQueue` (workflow and activity pollers) seen within the window. */
export async function liveWorkers(temporal: TemporalClient, o: Pick<ShareOptions, 'namespace' | 'taskQueue' | 'identity' | 'pollerWindowMs'>): Promise<number> {
	const ids = new Set<string>([o.identity]);
	const window = o.pollerWindowMs ?? 90_000;
	// TaskQueueType 1 = workflow, 2 = activity; TaskQueueKind 1 = normal (temporal.api.enums.v1)
	for (const taskQueueType of [1, 2]) {
		const r = await temporal.workflowService.describeTaskQueue({ namespace: o.namespace, taskQueue: { name: o.taskQueue, kind: 1 }, taskQueueType });
		for (const p of r.pollers ?? []) {
			const seen = p.lastAccessTime ? Number(p.lastAccessTime.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime.nanos ?? 0) / 1e6) : 0;
			if (p.identity && Date.now() - seen <= window) ids.add(p.identity);
		}
	}
	return ids.size;
}

export interface ClusterShare {
	/** Tells the cluster the service asked to wait `ms` (signal-with-start of the pause workflow). */
	retryHint(ms: number): void;
	readonly workers: number | undefined;
	stop(): void;
}

export function startClusterShare(budget: RateBudget, temporal: () => TemporalClient, o: ShareOptions): ClusterShare {
	const refreshMs = o.refreshMs ?? 2000;
	const unknown = o.unknownWorkers ?? 8;
	let workers: number | undefined;
	let failures = 0;
	let stopped = false;
	let signalled = 0;
	const wfId = rateBudgetWorkflowId(o.taskQueue);
	budget.setShare(1 / unknown);
	const apply = (n: number | undefined) => {
		const changed = n !== workers;
		workers = n;
		budget.setShare(1 / (n ?? unknown));
		if (changed) o.onChange?.({ workers: n, share: budget.currentShare });
	};
	const refresh = async () => {
		try {
			apply(await liveWorkers(temporal(), o));
			failures = 0;
		} catch {
			// Temporal unreachable: the last count a little longer, then the safe share.
			if (++failures >= 3) apply(undefined);
		}
		try {
			const h = temporal().workflow.getHandle(wfId);
			const d = await h.describe();
			if (d.status.name === 'RUNNING') budget.pauseUntil(await h.query(pausedUntilQuery));
		} catch (e) {
			if (!(e instanceof WorkflowNotFoundError)) {
				/* read again next refresh */
			}
		}
	};
	let timer: NodeJS.Timeout | undefined;
	const loop = async () => {
		if (stopped) return;
		await refresh();
		if (!stopped) timer = setTimeout(loop, refreshMs).unref();
	};
	void loop();
	return {
		retryHint(ms: number) {
			const until = Date.now() + ms;
			// one signal per distinct pause (many refused calls in flight carry the same hint)
			if (until <= signalled + 250) return;
			signalled = until;
			void temporal()
				.workflow.signalWithStart(rateBudget, { workflowId: wfId, taskQueue: o.taskQueue, args: [{ until }], signal: pauseSignal, signalArgs: [until] })
				.catch((e) => console.warn(`secsvc worker: could not tell the cluster of a retry hint (${(e as Error).message}); this worker pauses alone`));
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
