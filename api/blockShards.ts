import { BlockInputError, blocksIdFor } from './blockRules';
import { MAX_BLOCKS_CARRY_BYTES, MAX_SHARD_BLOCKS, MAX_SHARDS } from './blockCapacity';

/**
 * Shards of a domain-port's expiring blocks (docs/expiring-blocks-capacity.md): shard 0 is `blocks-<site>-<dp>` (the
 * one workflow of before), shard n ≥ 1 is `blocks-<site>-<dp>-<n>`; each is one blocks workflow of the same type that
 * carries at most MAX_SHARD_BLOCKS active blocks (MAX_BLOCKS_CARRY_BYTES). Adds fill the shards in order: a sender
 * (the CLI's bulk add, the Runbook node's Add) routes each slice to the first shard with room; extend / remove look for
 * the entry's block shard by shard. Pure.
 */

export function blocksShardId(site: string, dp: string, shard: number): string {
	return shard === 0 ? blocksIdFor(site, dp) : `${blocksIdFor(site, dp)}-${shard}`;
}

/** Every shard id of a domain-port, shard 0 first. */
export function blocksShardIds(site: string, dp: string): string[] {
	return Array.from({ length: MAX_SHARDS }, (_, n) => blocksShardId(site, dp, n));
}

/** What a shard carries now. */
export interface ShardLoad {
	active: number;
	carried: number;
}

/**
 * Cuts `bytes` (one per new block, in order) into slices, one per shard, filling shard 0 first, then 1, …; `loads`
 * is what each shard carries now (missing: empty). Returns the slices as [shard, first index, end index). A feed the
 * shards cannot carry is refused naming `field`, before anything is sent.
 */
export function planShards(
	field: string,
	dp: string,
	loads: readonly (ShardLoad | undefined)[],
	bytes: readonly number[],
): [number, number, number][] {
	const out: [number, number, number][] = [];
	let i = 0;
	for (let s = 0; s < MAX_SHARDS && i < bytes.length; s++) {
		const load = loads[s] ?? { active: 0, carried: 0 };
		let n = load.active;
		let carried = load.carried;
		const from = i;
		while (i < bytes.length && n < MAX_SHARD_BLOCKS && carried + bytes[i] <= MAX_BLOCKS_CARRY_BYTES) {
			carried += bytes[i++];
			n++;
		}
		if (i > from) out.push([s, from, i]);
	}
	if (i < bytes.length) {
		const active = loads.reduce((n, l) => n + (l?.active ?? 0), 0);
		throw new BlockInputError(
			field,
			`${bytes.length} new blocks (merged ranges) for ${dp}: its ${MAX_SHARDS} shards carry at most ${MAX_SHARDS * MAX_SHARD_BLOCKS} active blocks (${MAX_SHARD_BLOCKS} or ${MAX_BLOCKS_CARRY_BYTES} bytes each; ${active} active now), ${bytes.length - i} do not fit: split the feed, or wait for blocks to expire. Nothing was sent`,
		);
	}
	return out;
}

/** A shard's refusal for want of room (api/blockCapacity.ts): the sender tries the next shard. */
export const SHARD_FULL_RE = /this shard of \S+ would (carry|weigh)/;
