import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { COORDINATION, type ClaimRequest, type ClaimResult, type HandoverResult, type Hold } from './coordination.mts';
import { claim, handover, holds, release } from './client.mts';

/** The `coordination.*` activities as workflow code calls them (workflows/coordinator/claims.mts, `import type`). */
export interface CoordinationActivities {
	[COORDINATION.claim]: (input: { site_id: string } & Omit<ClaimRequest, 'owner'>) => Promise<ClaimResult>;
	[COORDINATION.release]: (input: {
		site_id: string;
		keys?: string[];
		queuedOnly?: true;
	}) => Promise<{ released: number; dequeued?: number }>;
	[COORDINATION.handover]: (input: { site_id: string; keys: string[] }) => Promise<HandoverResult>;
	[COORDINATION.holds]: (input: { site_id: string; keys?: string[] }) => Promise<Hold[]>;
}

/**
 * The playbooks' way to the site coordinator: activities that send it an Update or a query
 * (client.mts). The owner of a claim is the calling workflow's id, taken from the activity context,
 * never from the input. `client` = the worker's own Temporal connection.
 */
export function createCoordinationActivities(client: () => Client): CoordinationActivities {
	const callerId = () => {
		const id = Context.current().info.workflowExecution?.workflowId;
		if (!id) throw ApplicationFailure.nonRetryable('coordination: only workflows hold settings', 'ValidationError');
		return id;
	};
	return {
		[COORDINATION.claim]: async (input) => {
			const ctx = Context.current();
			// Asked again only while this attempt lives (the server has not timed it out nor cancelled it).
			const alive = async () => ctx.cancellationSignal.throwIfAborted();
			return heartbeating(() => claim(client(), { ...input, owner: callerId() }, ctx.info.taskQueue, alive));
		},
		[COORDINATION.release]: async (input) =>
			heartbeating(() => release(client(), input.site_id, callerId(), input.keys, input.queuedOnly)),
		[COORDINATION.handover]: async (input) =>
			heartbeating(() => handover(client(), input.site_id, callerId(), input.keys ?? [])),
		// Only the holds of `keys` when given: every hold of a site with thousands of expiring blocks would pass the
		// 2 MB an activity result may carry.
		[COORDINATION.holds]: async (input) =>
			heartbeating(async () => {
				const all = await holds(client(), input.site_id);
				const only = input.keys ? new Set(input.keys) : undefined;
				return only ? all.filter((h) => only.has(h.key)) : all;
			}),
	};
}

/**
 * Heartbeats every 2 s while `fn` runs: a claim may wait minutes (start-to-close 10 min), so without heartbeats a
 * worker that dies during one leaves the runbook stuck until that timeout; with them (heartbeat timeout in
 * workflows/coordinator/claims.mts) the claim is retried on another worker within seconds. Claims are idempotent per owner.
 * No heartbeat at the start: the server counts the heartbeat timeout from the attempt's start, and most calls end in
 * milliseconds (the SDK sends a first heartbeat at once: one more server write for each of them).
 */
async function heartbeating<T>(fn: () => Promise<T>): Promise<T> {
	const ctx = Context.current();
	const t = setInterval(() => ctx.heartbeat(), 2000);
	try {
		return await fn();
	} finally {
		clearInterval(t);
	}
}
