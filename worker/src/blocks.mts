import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { toFailure } from './activities.mts';
import { entryRange, parseEntry, type ListEntry } from '../../workflows/ranges.mts';
import {
	addBlockUpdate,
	BLOCKS_ACTIVITY,
	blocksIdFor,
	blocksQuery,
	checkBlockRequest,
	checkChangeRequest,
	extendBlockUpdate,
	removeBlockUpdate,
	type Block,
	type BlockRequest,
	type ChangeRequest,
} from '../../workflows/blocksShared.mts';

/**
 * Expiring blocks, worker and client side (workflows/blocks.mts):
 *  - activities `blocks.add` / `blocks.remove`: one POST / one DELETE of exactly the block's entry; a retry reads the
 *    list first, so an attempt whose outcome was unknown is never repeated blindly (no duplicate write);
 *    `blocks.removeMany`: the entries of one domain-port due together, one read and one DELETE naming them all;
 *    `blocks.register`: the attack response registers its own entries as blocks (plan blacklist.expireAfterSeconds);
 *  - client calls for the CLI, the tests and the bench: add / extend / remove are Updates (the answer is the block
 *    as recorded, or a refusal naming the field), list is a query (or the result of a finished workflow).
 */

const rangeKey = (text: string) => {
	const r = parseEntry(text);
	return r ? `${r.start}-${r.end}` : undefined;
};

/** The list as written: range key (`start-end` as numbers) → the entry's text as the list shows it. */
async function liveEntries(client: Client, site_id: string, domain_port_id: string): Promise<Map<string, string>> {
	const list = await client.call<{ p_info?: { ipv4?: { black_soc?: ListEntry[] } } }>('applicationProtection.ipBlacklist.get', { site_id, domain_port_id });
	const out = new Map<string, string>();
	for (const e of list?.p_info?.ipv4?.black_soc ?? []) {
		const r = entryRange(e);
		if (r) out.set(`${r.start}-${r.end}`, e.start_ip && e.end_ip ? `${e.start_ip}-${e.end_ip}` : String(e.ip ?? e.start_ip));
	}
	return out;
}

async function liveEntry(client: Client, site_id: string, domain_port_id: string, entry: string): Promise<string | undefined> {
	const want = rangeKey(entry);
	return want === undefined ? undefined : (await liveEntries(client, site_id, domain_port_id)).get(want);
}

/** Every failure except bad input is retried: the block's write is idempotent here. */
const retryable = (op: string, e: unknown) => {
	const f = toFailure(op, e);
	if (f instanceof ApplicationFailure && f.type === 'ValidationError') return f;
	return ApplicationFailure.retryable(f.message, 'BlockWriteRetry');
};

export function createBlocksActivities(api: Client, temporal?: () => TemporalClient): Record<string, (input: Record<string, unknown>) => Promise<unknown>> {
	return {
		[BLOCKS_ACTIVITY.add]: async (input) => {
			const { site_id, domain_port_id, entry } = input as { site_id: string; domain_port_id: string; entry: string };
			const attempt = Context.current().info.attempt;
			try {
				if (attempt > 1 && (await liveEntry(api, site_id, domain_port_id, entry))) return { added: true, byEarlierAttempt: true };
				await api.call('applicationProtection.ipBlacklist.add', { site_id, domain_port_id, ip_black_list: entry });
				return { added: true };
			} catch (e) {
				const f = toFailure('applicationProtection.ipBlacklist.add', e);
				// The service refused (e.g. a full list): not retried, the add is refused. Anything else: retried.
				if (f instanceof ApplicationFailure && (f.type === 'ValidationError' || f.type === 'ApiError')) throw f;
				throw retryable('applicationProtection.ipBlacklist.add', e);
			}
		},
		[BLOCKS_ACTIVITY.remove]: async (input) => {
			const { site_id, domain_port_id, entry } = input as { site_id: string; domain_port_id: string; entry: string };
			const attempt = Context.current().info.attempt;
			try {
				const live = await liveEntry(api, site_id, domain_port_id, entry);
				if (!live) {
					// On a retry the entry may be gone because an earlier attempt removed it (its answer was lost).
					return attempt > 1 ? { removed: true, note: `removed (an earlier attempt's answer was lost; attempt ${attempt} found it gone)` } : { removed: false };
				}
				await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: [live] });
				return { removed: true };
			} catch (e) {
				throw retryable('applicationProtection.ipBlacklist.remove', e);
			}
		},
		// Every due entry of one domain-port: one read, then ONE DELETE naming those still listed as written (the spec's
		// remove takes a comma-separated list). Gone ones are `removed: false` (taken over), or, on a retry, removed by
		// the earlier attempt whose answer was lost — the same reading as `blocks.remove`.
		[BLOCKS_ACTIVITY.removeMany]: async (input) => {
			const { site_id, domain_port_id, entries } = input as { site_id: string; domain_port_id: string; entries: string[] };
			const attempt = Context.current().info.attempt;
			try {
				const live = await liveEntries(api, site_id, domain_port_id);
				const found = entries.map((entry) => ({ entry, live: live.get(rangeKey(entry) ?? '') }));
				const present = [...new Set(found.flatMap((f) => (f.live ? [f.live] : [])))];
				if (present.length) await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: present });
				return {
					results: found.map((f) =>
						f.live
							? { entry: f.entry, removed: true }
							: attempt > 1
								? { entry: f.entry, removed: true, note: `removed (an earlier attempt's answer was lost; attempt ${attempt} found it gone)` }
								: { entry: f.entry, removed: false },
					),
				};
			} catch (e) {
				throw retryable('applicationProtection.ipBlacklist.remove', e);
			}
		},
		[BLOCKS_ACTIVITY.register]: async (input) => {
			if (!temporal) throw ApplicationFailure.nonRetryable('blocks.register: the worker has no Temporal client', 'ValidationError');
			const { site_id, domain_port_id, ...req } = input as unknown as BlockRequest & { site_id: string; domain_port_id: string };
			try {
				return await addBlock(temporal(), Context.current().info.taskQueue, site_id, domain_port_id, req);
			} catch (e) {
				if (e instanceof BlockRefused) throw ApplicationFailure.nonRetryable(e.message, 'BlockRefused');
				throw e;
			}
		},
	};
}

/** A refusal returned by the blocks workflow (validator or handler): names the field; nothing was written. */
export class BlockRefused extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'BlockRefused';
	}
}

const refusedFrom = (e: unknown) => {
	if (e instanceof WorkflowUpdateFailedError) return new BlockRefused(String(e.cause?.message ?? e.message));
	return e;
};

export async function addBlock(client: TemporalClient, taskQueue: string, site: string, dp: string, req: BlockRequest, maxPrefix?: number): Promise<Block> {
	checkBlockRequest(req, maxPrefix); // bad input: named, nothing sent
	try {
		return await client.workflow.executeUpdateWithStart(addBlockUpdate, {
			args: [req],
			startWorkflowOperation: new WithStartWorkflowOperation('blocks', {
				workflowId: blocksIdFor(site, dp),
				taskQueue,
				args: [{ site_id: site, domain_port_id: dp, ...(maxPrefix ? { maxPrefix } : {}) }],
				workflowIdConflictPolicy: 'USE_EXISTING',
			}),
		});
	} catch (e) {
		throw refusedFrom(e);
	}
}

async function change(client: TemporalClient, site: string, dp: string, req: ChangeRequest, kind: 'extend' | 'remove'): Promise<Block> {
	checkChangeRequest(req, kind === 'extend');
	try {
		return await client.workflow.getHandle(blocksIdFor(site, dp)).executeUpdate(kind === 'extend' ? extendBlockUpdate : removeBlockUpdate, { args: [req] });
	} catch (e) {
		if (e instanceof WorkflowNotFoundError || /not found|already completed/i.test(String((e as Error)?.message)))
			throw new BlockRefused(`entry: no active block for ${req.entry} on ${dp} of site ${site}`);
		throw refusedFrom(e);
	}
}

export const extendBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) => change(client, site, dp, req, 'extend');
export const removeBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) => change(client, site, dp, req, 'remove');

/** The blocks of a site (every domain-port, or one), active first, then the recently ended ones. */
export async function listBlocks(client: TemporalClient, site: string, dp?: string): Promise<Block[]> {
	const ids: string[] = [];
	if (dp) ids.push(blocksIdFor(site, dp));
	else {
		const prefix = blocksIdFor(site, '');
		for await (const w of client.workflow.list({ query: `WorkflowType = 'blocks' AND WorkflowId STARTS_WITH '${prefix.replace(/'/g, '')}'` })) {
			if (!ids.includes(w.workflowId)) ids.push(w.workflowId);
		}
	}
	const out: Block[] = [];
	for (const id of ids) {
		const h = client.workflow.getHandle(id);
		try {
			const d = await h.describe();
			if (d.status.name === 'RUNNING') out.push(...(await h.query(blocksQuery)));
			else if (d.status.name === 'COMPLETED') out.push(...(((await h.result()) as { ended?: Block[] }).ended ?? []));
		} catch (e) {
			if (!(e instanceof WorkflowNotFoundError)) throw e;
		}
	}
	return out;
}

export function formatBlocks(blocks: Block[]): string {
	if (!blocks.length) return 'no blocks';
	return blocks
		.map((b) => `${b.site_id}  ${b.domain_port_id}  ${b.range}  expires ${b.expiresAt}  by ${b.by} (${b.via})  ${b.state}  — ${b.reason}${b.note ? ` [${b.note}]` : ''}`)
		.join('\n');
}
