import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { claim } from '../../../workflows/coordinator/client.mts';
import type { ClaimResult } from '../../../workflows/coordinator/coordination.mts';
import type { WriteStepsInput } from '../../../workflows/pure/activityNames.mts';

export type EntriesHold = NonNullable<WriteStepsInput['hold']>;
/** Asks the coordinator for the calling workflow's hold of `hold`'s keys, beside reads sent at `since` (ISO). */
export type AskHold = (hold: EntriesHold, since: string) => Promise<ClaimResult>;

/**
 * The entries' hold asked by the write activity itself (attackResponse/ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH): the
 * owner is the calling workflow, as for the `coordination.claim` activity. Asked once, never waited for here: another
 * owner's lease (`waiting`) is waited out by the workflow, as a regular claim activity.
 */
export const askHold =
	(temporal: (() => TemporalClient) | undefined): AskHold =>
	async (hold, since) => {
		const info = Context.current().info;
		const owner = info.workflowExecution?.workflowId;
		if (!temporal || !owner)
			throw ApplicationFailure.nonRetryable(
				"the entries' hold needs the worker's Temporal client and a calling workflow",
				'ValidationError',
			);
		const keys = [...new Set(Object.values(hold.keys))];
		const req = { site_id: hold.site_id, owner, keys, mode: 'hold' as const, reason: hold.reason };
		return claim(temporal(), { ...req, ttlSeconds: hold.ttlSeconds, waitSeconds: 0, since }, info.taskQueue);
	};

/** An entry not held by the calling workflow: nothing is sent for it, and it gets no answer. */
export class NotHeld extends Error {
	override name = 'NotHeld';
}

/**
 * Per entry (its answer key), what its write waits for beside its read: resolves once the entry is held, true when
 * its read must be made again (another owner's grant of a key ended after the reads went out, or the coordinator
 * cannot tell); rejects with NotHeld when it is not held. Undefined: the entry needs no hold here.
 */
export function entryGate(holding: Promise<ClaimResult> | undefined, keys: Record<string, string> = {}) {
	return (answerKey: string): Promise<boolean> | undefined => {
		const k = keys[answerKey];
		if (!holding || k === undefined) return undefined;
		return holding.then((r) => {
			if (r.waiting || !r.granted.includes(k)) throw new NotHeld(`${answerKey}: not held`);
			return r.changedSince !== false;
		});
	};
}
