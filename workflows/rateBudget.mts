import { condition, continueAsNew, defineQuery, defineSignal, setHandler, workflowInfo } from '@temporalio/workflow';

/**
 * The cluster's rate-limit pause (docs/rate-budget.md): a worker whose request was refused with a retry hint signals
 * `budgetPause` with the time the service asked it to wait until (signal-with-start); every worker reads
 * `budgetPausedUntil` on its periodic refresh (worker/src/service/budgetShare.mts) and holds its budget until then.
 * One per task queue (rateBudgetWorkflowId). It ends a minute after the last pause is over (a new refusal starts it
 * again), so a quiet cluster has nothing running.
 */
export const pauseSignal = defineSignal<[number]>('budgetPause');
export const pausedUntilQuery = defineQuery<number>('budgetPausedUntil');

export const rateBudgetWorkflowId = (taskQueue: string) => `secsvc-rate-budget-${taskQueue}`;

/** Longest pause a signal may ask for (a broken hint never stops the cluster for long). */
const MAX_PAUSE_MS = 10 * 60_000;

export async function rateBudget(input?: { until?: number }): Promise<void> {
	let until = typeof input?.until === 'number' && Number.isFinite(input.until) ? input.until : 0;
	let signals = 0;
	setHandler(pauseSignal, (u) => {
		signals++;
		if (typeof u === 'number' && Number.isFinite(u)) until = Math.max(until, Math.min(u, Date.now() + MAX_PAUSE_MS));
	});
	setHandler(pausedUntilQuery, () => until);
	for (;;) {
		const seen = signals;
		const idleMs = Math.max(0, until - Date.now()) + 60_000;
		const more = await condition(() => signals !== seen, idleMs);
		if (!more) return;
		if (workflowInfo().historyLength > 2000) await continueAsNew<typeof rateBudget>({ until });
	}
}
