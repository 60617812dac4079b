import { condition, continueAsNew, defineQuery, defineSignal, setHandler, workflowInfo } from '@temporalio/workflow';
import { failOn, problems } from '../input/inputChecks.mts';

/**
 * The request budget's meeting point for the cluster (docs/rate-budget.md), one per task queue
 * (rateBudgetWorkflowId), started by the first worker that signals it:
 *  - `budgetPause`: a worker whose request was refused with a retry hint sends the time the service asked to wait
 *    until; every worker reads it on its periodic refresh (worker/src/service/budgetShare.mts) and holds its budget;
 *  - `budgetDemand`: every worker sends, on each refresh, the requests per second it asked for and whether calls
 *    waited, so the workers divide the budget by demand (work-conserving) instead of evenly.
 * It ends a minute after the last signal (workers stopped) and the last pause; history stays short by continue-as-new.
 */
export const pauseSignal = defineSignal<[number]>('budgetPause');
export const demandSignal = defineSignal<[DemandReport]>('budgetDemand');
export const pausedUntilQuery = defineQuery<number>('budgetPausedUntil');
export const budgetStateQuery = defineQuery<BudgetState>('budgetState');

export interface DemandReport {
	/** The worker's identity (as its pollers report it). */
	worker: string;
	/** Requests per second it asked for over its last refresh. */
	rps: number;
	/** Calls waited or gave up for lack of budget: it would use more. */
	hungry: boolean;
	/** Of `rps`, the two top classes (mitigate, revert): served before the others across the cluster. */
	rpsHigh?: number;
	/** A call of the two top classes waited. */
	hungryHigh?: boolean;
	/** Calls of the lower classes waiting on average (the weight of a hungry worker's claim). */
	lowQueue?: number;
	/** The workers it shared the budget with (its own count of live workers; at most 64 identities). */
	live?: string[];
}
/** One worker's last report, with when the workflow received it (workflow time). */
export type DemandEntry = Omit<DemandReport, 'worker'> & { at: number };
export interface BudgetState {
	pausedUntil: number;
	/** Reports of the last `freshMs` (workflow time), by worker. */
	demand: Record<string, DemandEntry>;
}

export const rateBudgetWorkflowId = (taskQueue: string) => `secsvc-rate-budget-${taskQueue}`;

/** Longest pause a signal may ask for (a broken hint never stops the cluster for long). */
const MAX_PAUSE_MS = 10 * 60_000;
/** A report older than this no longer counts. */
const FRESH_MS = 15_000;

export async function rateBudget(input?: Partial<BudgetState>): Promise<void> {
	failOn(
		'rate budget input',
		problems(input ?? {}, (r, v) => {
			if (!r.obj('(input)', v)) return;
			const i = v as Partial<BudgetState>;
			if (i.pausedUntil !== undefined && !(typeof i.pausedUntil === 'number' && Number.isFinite(i.pausedUntil)))
				r.bad('pausedUntil', 'must be a time in ms');
			r.obj('demand', i.demand, true);
		}),
	);
	let until = typeof input?.pausedUntil === 'number' && Number.isFinite(input.pausedUntil) ? input.pausedUntil : 0;
	const demand = new Map<string, DemandEntry>(Object.entries(input?.demand ?? {}));
	let signals = 0;
	setHandler(pauseSignal, (u) => {
		signals++;
		if (typeof u === 'number' && Number.isFinite(u)) until = Math.max(until, Math.min(u, Date.now() + MAX_PAUSE_MS));
	});
	setHandler(demandSignal, (r) => {
		signals++;
		if (
			!r ||
			typeof r.worker !== 'string' ||
			r.worker.length > 300 ||
			!(typeof r.rps === 'number' && Number.isFinite(r.rps) && r.rps >= 0)
		)
			return;
		const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
		const rpsHigh = num(r.rpsHigh);
		const lowQueue = num(r.lowQueue);
		const live =
			Array.isArray(r.live) && r.live.length <= 64 && r.live.every((x) => typeof x === 'string' && x.length <= 300)
				? r.live
				: undefined;
		demand.set(r.worker, {
			rps: r.rps,
			hungry: r.hungry === true,
			...(rpsHigh !== undefined ? { rpsHigh } : {}),
			...(r.hungryHigh === true ? { hungryHigh: true } : {}),
			...(lowQueue !== undefined ? { lowQueue } : {}),
			...(live ? { live } : {}),
			at: Date.now(),
		});
		if (demand.size > 1000) demand.delete(demand.keys().next().value as string);
	});
	const fresh = () => {
		const now = Date.now();
		for (const [k, v] of demand) if (now - v.at > FRESH_MS) demand.delete(k);
		return Object.fromEntries(demand);
	};
	setHandler(pausedUntilQuery, () => until);
	setHandler(budgetStateQuery, () => ({ pausedUntil: until, demand: fresh() }));
	for (;;) {
		const seen = signals;
		const idleMs = Math.max(0, until - Date.now()) + 60_000;
		const more = await condition(() => signals !== seen, idleMs);
		if (!more) return;
		if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > 4000)
			await continueAsNew<typeof rateBudget>({ pausedUntil: until, demand: fresh() });
	}
}
