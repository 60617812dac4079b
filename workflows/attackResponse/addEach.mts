import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { WriteResult } from '../../api/runbook/contract.ts';
import { ADD_EACH_ACTIVITY, type AddEachInput, type AddEachResult } from '../pure/activityNames.mts';
import type { PlanContext } from './context.mts';

/**
 * Patch (issue 42): a change's blacklist adds are one activity (worker/src/activities/exactBatch.mts), not one per
 * entry — one task round trip for the group instead of one per entry. Each entry is still held before it is
 * written, read before its POST and answered with what it wrote, with its own record. Runbooks recorded before it
 * ran one activity per entry.
 */
export const ADD_EACH_PATCH = 'blacklist-adds-one-task';

/** What the runbook does with each entry's answer: record it, or skip an entry the guard refused. */
export interface EachAnswer {
	written(w: WriteResult | undefined, entry: string): void;
	refused?(entry: string, why: string): void;
}

export type AddEach = (dp: string, entries: string[], concurrency: number, on: EachAnswer) => Promise<void>;

/** The guard's reason in a refusal's message (`<op>: invalid input — ip_black_list: <why>`). */
export const refusalText = (message: string | undefined) =>
	(message ?? '').replace(/^[\w.]+: invalid input — (ip_black_list: )?/, '');

/**
 * The entries of one domain-port in one activity; each answer handed over in the entries' order. A failure still
 * hands over what was answered before it (the failure's details, or the record of an attempt that timed out): the
 * runbook owns those entries and reverts them.
 */
export const addEachIn =
	(ctx: PlanContext): AddEach =>
	async (dp, entries, concurrency, on) => {
		if (!entries.length) return;
		const seconds = ctx.plan.activityTimeoutSeconds * Math.max(1, Math.ceil(entries.length / Math.max(1, concurrency)));
		const act = proxyActivities<{ [ADD_EACH_ACTIVITY]: (i: AddEachInput) => Promise<AddEachResult> }>({
			startToCloseTimeout: `${seconds}s`,
			// A killed worker's attempt is retried within 60 s, not after the whole group's time. Not shorter: the SDK
			// sends heartbeats at most every 0.8 × this, and a loaded worker's attempt that timed out while it kept
			// sending would have its retry send beside it (the blocks writes' 10 s timeout did: 451ecb5).
			...(seconds > 60 ? { heartbeatTimeout: '60s' } : {}),
			retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 8 },
		});
		let failure: unknown;
		let answers: AddEachResult['answers'];
		try {
			answers = (await act[ADD_EACH_ACTIVITY]({ ...ctx.dpParams(dp), entries, concurrency })).answers;
		} catch (e) {
			failure = e;
			answers = answersOf(e);
		}
		for (const entry of entries) {
			const a = answers.find((x) => x.entry === entry);
			if (!a) continue;
			if (!('refused' in a)) on.written(a.answer as WriteResult | undefined, entry);
			else if (on.refused) on.refused(entry, refusalText(a.refused));
			else failure ??= ApplicationFailure.nonRetryable(a.refused, 'BlastRadius');
		}
		if (failure) throw failure;
	};

/**
 * The answers a failed activity carries: its details' last element, or the record of an attempt that timed out (its
 * records keyed by `field`: an add's entry, or a write step's key).
 */
export function answersOf(e: unknown, field: 'entry' | 'key' = 'entry'): AddEachResult['answers'] {
	const cause = e instanceof ActivityFailure ? e.cause : undefined;
	if (cause instanceof ApplicationFailure) {
		const last = cause.details?.at(-1) as Partial<AddEachResult> | undefined;
		return Array.isArray(last?.answers) ? last.answers : [];
	}
	if (cause instanceof TimeoutFailure) {
		const rec = (cause.lastHeartbeatDetails as { entries?: Record<string, { answer?: unknown }> } | undefined)?.entries;
		return Object.entries(rec ?? {})
			.filter(([, d]) => d && typeof d === 'object' && 'answer' in d)
			.map(([k, d]) => ({ [field]: k, answer: d.answer }) as AddEachResult['answers'][number]);
	}
	return [];
}
