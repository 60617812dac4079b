import { coordinatorQueueFor } from '../../worker/src/process/admission.mts';
import { ApplicationFailure } from '@temporalio/common';
import {
	WithStartWorkflowOperation,
	WorkflowNotFoundError,
	WorkflowUpdateFailedError,
	type Client,
} from '@temporalio/client';
import {
	claimUpdate,
	coordinatorIdFor,
	handoverUpdate,
	holdsPageQuery,
	holdsQuery,
	HOLDS_PAGE,
	releaseSignal,
	releaseUpdate,
	MAX_KEYS,
	type HandoverResult,
	type ClaimRequest,
	type ClaimResult,
	type Hold,
} from './coordination.mts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { siteCoordinator } from './siteCoordinator.mts';

/**
 * The way to the site coordinator (workflows/coordinator/siteCoordinator.mts) over a Temporal client: claim / release / handover
 * as Updates (started on first use: Update-with-start), holds as a query. Used by the coordination activities
 * (activities.mts), the blocks and operation activities, and the CLI.
 */

export interface CoordinationInput {
	site_id: string;
	keys?: string[];
	mode?: ClaimRequest['mode'];
	reason?: string;
	ttlSeconds?: number;
	wait?: boolean;
	/** hold: queue as successor for keys another hold has (expiring blocks). */
	queue?: boolean;
	/** A waiting claim: seconds per ask (default CLAIM_WAIT_SECONDS); 0 = ask once and answer `waiting`. */
	waitSeconds?: number;
	/** hold: when the caller's reads of the keys went out (coordination.mts ClaimRequest `since`). */
	since?: string;
	/** release: only withdraw successor places. */
	queuedOnly?: boolean;
	/** Release / claim on behalf of this owner instead of the calling workflow (CLI force-release only). */
	owner?: string;
}

const notRunning = (e: unknown) =>
	e instanceof WorkflowNotFoundError ||
	/not found|already completed|workflow execution already completed/i.test(String((e as Error)?.message));

/** How long one claim Update waits at the coordinator before its caller asks again (coordination.mts `waitSeconds`). */
export const CLAIM_WAIT_SECONDS = 5;

/**
 * A claim. One that waits (a hold, a lease with `wait`) is asked CLAIM_WAIT_SECONDS at a time, again and again while
 * `alive` lets it (it throws once the caller may no longer wait: its attempt cancelled or timed out, its lease lost):
 * a caller that is gone leaves no claim in flight at the coordinator for longer than that.
 */
export async function claim(
	client: Client,
	input: CoordinationInput & { owner: string },
	taskQueue: string,
	alive: () => Promise<unknown> = async () => undefined,
): Promise<ClaimResult> {
	const waits = (input.mode ?? 'lease') === 'hold' || input.wait === true;
	for (;;) {
		const r = await claimOnce(client, input, taskQueue, waits ? (input.waitSeconds ?? CLAIM_WAIT_SECONDS) : undefined);
		if (!r.waiting || input.waitSeconds === 0) return r; // 0: asked once, the caller waits its own way
		await alive();
	}
}

async function claimOnce(
	client: Client,
	input: CoordinationInput & { owner: string },
	taskQueue: string,
	waitSeconds: number | undefined,
): Promise<ClaimResult> {
	const req: ClaimRequest = {
		owner: input.owner,
		keys: input.keys ?? [],
		mode: input.mode ?? 'lease',
		reason: input.reason ?? '',
		...(input.ttlSeconds !== undefined ? { ttlSeconds: input.ttlSeconds } : {}),
		...(input.wait ? { wait: true } : {}),
		...(input.queue ? { queue: true } : {}),
		...(waitSeconds !== undefined ? { waitSeconds } : {}),
		...(input.since !== undefined ? { since: input.since } : {}),
	};
	try {
		return await client.workflow.executeUpdateWithStart(claimUpdate, {
			args: [req],
			startWorkflowOperation: new WithStartWorkflowOperation<typeof siteCoordinator>(WORKFLOW_TYPE.siteCoordinator, {
				workflowId: coordinatorIdFor(input.site_id),
				// own task queue (admission.mts): never behind runbooks a worker's admission limit holds back
				taskQueue: coordinatorQueueFor(taskQueue),
				args: [{ site_id: input.site_id }],
				workflowIdConflictPolicy: 'USE_EXISTING',
			}),
		});
	} catch (e) {
		// A claim the coordinator's validator refused will be refused again: do not retry it.
		if (e instanceof WorkflowUpdateFailedError)
			throw ApplicationFailure.nonRetryable(`claim refused: ${e.cause?.message ?? e.message}`, 'ValidationError');
		throw e;
	}
}

export async function release(
	client: Client,
	site: string,
	owner: string,
	keys?: string[],
	queuedOnly?: boolean,
): Promise<{ released: number; dequeued?: number }> {
	try {
		return await client.workflow.getHandle(coordinatorIdFor(site)).executeUpdate(releaseUpdate, {
			args: [{ owner, ...(keys ? { keys } : {}), ...(queuedOnly ? { queuedOnly: true } : {}) }],
		});
	} catch (e) {
		if (notRunning(e)) return { released: 0, dequeued: 0 }; // no coordinator: nothing held
		throw e;
	}
}

/**
 * The same release as a signal sent by the worker (expiring blocks' removal, workflows/blocks/blocks.mts): no answer awaited,
 * so no slot waits for the coordinator and the coordinator takes many in one task. Not running: nothing is held.
 */
export async function releaseBySignal(client: Client, site: string, owner: string, keys: string[]): Promise<void> {
	for (let i = 0; i < keys.length; i += MAX_KEYS) {
		try {
			await client.workflow
				.getHandle(coordinatorIdFor(site))
				.signal(releaseSignal, { owner, keys: keys.slice(i, i + MAX_KEYS) });
		} catch (e) {
			if (!notRunning(e)) throw e;
		}
	}
}

/** The holder's keys that have a successor pass to it now (the holder must then leave those settings as they are). */
export async function handover(client: Client, site: string, owner: string, keys: string[]): Promise<HandoverResult> {
	if (!keys.length) return { handedOver: [] };
	try {
		return await client.workflow
			.getHandle(coordinatorIdFor(site))
			.executeUpdate(handoverUpdate, { args: [{ owner, keys }] });
	} catch (e) {
		if (notRunning(e)) return { handedOver: [] };
		throw e;
	}
}

/**
 * Every hold of the site: a page at a time (`holdsPage`: thousands of expiring blocks would not fit one answer), or
 * all at once from a coordinator whose build has no such query.
 */
export async function holds(client: Client, site: string): Promise<Hold[]> {
	try {
		const h = client.workflow.getHandle(coordinatorIdFor(site));
		const d = await h.describe();
		if (d.status.name !== 'RUNNING') return [];
		const out: Hold[] = [];
		for (let offset = 0; ; offset += HOLDS_PAGE) {
			let page: { total: number; holds: Hold[] };
			try {
				page = await h.query(holdsPageQuery, { offset, limit: HOLDS_PAGE });
			} catch (e) {
				if (offset === 0 && /holdsPage/.test(String((e as Error)?.message))) return await h.query(holdsQuery);
				throw e;
			}
			out.push(...page.holds);
			// Holds released between two pages shift the rest: a key is told once.
			if (!page.holds.length || offset + HOLDS_PAGE >= page.total)
				return [...new Map(out.map((x) => [x.key, x])).values()];
		}
	} catch (e) {
		if (notRunning(e)) return [];
		throw e;
	}
}
