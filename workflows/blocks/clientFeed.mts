import { WorkflowNotFoundError, type Client as TemporalClient } from '@temporalio/client';
import {
	ACTIVE_STATES,
	BlockInputError,
	blocksQuery,
	MAX_BULK_BLOCKS,
	type Block,
	type BlockRequest,
	type BulkBlockResult,
} from './shared.mts';
import { blockCarryBytes, carriedBytes, checkBlockCapacity } from '../../api/blockCapacity.ts';
import { blocksShardId, blocksShardIds, planShards, type ShardLoad } from '../../api/blockShards.ts';
import { addBlocks } from './client.mts';
import { holds as coordinatorHolds } from '../coordinator/client.mts';

/**
 * A threat feed of one site (the CLI's `block add … --file`; docs/expiring-blocks-capacity.md), already merged into
 * ranges per domain-port (api/blockFeed.ts): checked whole — the site's limit, each domain-port's shards, ranges
 * already blocked — and refused naming `field` before anything is sent; then each slice goes to its shard
 * (`blocks-<site>-<dp>[-n]`) in Updates of MAX_BULK_BLOCKS, the shards side by side.
 */

export interface FeedSlice {
	dp: string;
	shard: number;
	reqs: BlockRequest[];
}

export async function planFeed(
	client: TemporalClient,
	site: string,
	feed: Map<string, BlockRequest[]>,
	field: string,
	siteLimit: number,
): Promise<FeedSlice[]> {
	const siteHeld = (await coordinatorHolds(client, site)).filter((h) => h.owner.startsWith('blocks-')).length;
	const adding = [...feed.values()].reduce((n, r) => n + r.length, 0);
	checkBlockCapacity({ field, site, dp: '', adding, addingBytes: 0, carried: 0, siteHeld, siteLimit });
	const out: FeedSlice[] = [];
	for (const [dp, reqs] of feed) {
		const loads: ShardLoad[] = [];
		const blocked = new Map<string, Block>();
		for (const id of blocksShardIds(site, dp)) {
			const active = (await runningBlocks(client, id)).filter(
				(b) => b.site_id === site && b.domain_port_id === dp && ACTIVE_STATES.includes(b.state),
			);
			for (const b of active) blocked.set(b.range, b);
			loads.push({ active: active.length, carried: carriedBytes(active) });
		}
		for (const r of reqs) {
			const cur = blocked.get(r.entry);
			if (cur)
				throw new BlockInputError(
					field,
					`${r.entry} is already blocked on ${dp} until ${cur.expiresAt} (${cur.state}); extend it instead. Nothing was sent`,
				);
		}
		const bytes = reqs.map((r) => blockCarryBytes(site, dp, r.entry, r));
		for (const [shard, from, to] of planShards(field, dp, loads, bytes))
			out.push({ dp, shard, reqs: reqs.slice(from, to) });
	}
	return out;
}

/** The blocks a shard carries now (none when it is not running). */
async function runningBlocks(client: TemporalClient, id: string): Promise<Block[]> {
	const h = client.workflow.getHandle(id);
	try {
		return (await h.describe()).status.name === 'RUNNING' ? await h.query(blocksQuery) : [];
	} catch (e) {
		if (e instanceof WorkflowNotFoundError) return [];
		throw e;
	}
}

/** Sends every slice to its shard (slices side by side, each in Updates of MAX_BULK_BLOCKS one after another). */
export async function sendFeed(
	client: TemporalClient,
	taskQueue: string,
	site: string,
	slices: FeedSlice[],
	maxPrefix?: number,
): Promise<BulkBlockResult & { shards: Record<string, number> }> {
	const all: BulkBlockResult & { shards: Record<string, number> } = { blocks: [], refused: [], shards: {} };
	await Promise.all(
		slices.map(async ({ dp, shard, reqs }) => {
			for (let i = 0; i < reqs.length; i += MAX_BULK_BLOCKS) {
				const r = await addBlocks(
					client,
					taskQueue,
					site,
					dp,
					{ blocks: reqs.slice(i, i + MAX_BULK_BLOCKS) },
					maxPrefix,
					shard,
				);
				all.blocks.push(...r.blocks);
				all.refused.push(...r.refused);
				const id = blocksShardId(site, dp, shard);
				all.shards[id] = (all.shards[id] ?? 0) + r.blocks.length;
			}
		}),
	);
	return all;
}
