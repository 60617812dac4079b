import { BlockInputError, type BlockRequest } from './blockRules';

/**
 * What expiring blocks can carry (docs/expiring-blocks-capacity.md). A domain-port's blocks live in up to MAX_SHARDS
 * blocks workflows (shards, api/blockShards.ts), each carrying its active blocks across continue-as-new as one payload;
 * the site's coordinator holds one key per block (a merged range) and carries them all packed (key text only).
 * Temporal refuses a payload over 2 MB (the run is TERMINATED: its blocks would never expire), so an add that would
 * take a shard or the site over its budget is refused before anything is sent, naming the field and the rule — by the
 * CLI for a whole feed (before its first Update), by the blocks workflow's validators, by the coordinator's claim
 * validator. Pure: no globals — safe inside workflow code.
 */

/** Active blocks one shard (one blocks workflow) carries. */
export const MAX_SHARD_BLOCKS = 2000;
/** Bytes of active blocks one shard carries (JSON); the rest of its 2 MB is for ended blocks and notes. */
export const MAX_BLOCKS_CARRY_BYTES = 1_000_000;
/** Shards per domain-port: `blocks-<site>-<dp>` and `blocks-<site>-<dp>-1` … `-7`. */
export const MAX_SHARDS = 8;
/** Block holds a site's coordinator carries (packed: each hold is its key's text, ~45 bytes). */
export const MAX_SITE_BLOCKS = 24_000;
/** Bytes of a site's holds as its coordinator carries them packed (keys and group headers), whatever their count. */
export const MAX_SITE_HOLD_BYTES = 1_200_000;
/** Block holds of a coordinator run recorded before packed holds (it carries one ~250-byte object per hold). */
export const MAX_SITE_BLOCKS_UNPACKED = 2000;
/**
 * The senders' limit of expiring blocks per site (the CLI's `--max-site-blocks` / `SECSVC_MAX_SITE_BLOCKS`): a feed
 * over it is refused whole before anything is sent. At most MAX_SITE_BLOCKS.
 */
export const DEFAULT_SITE_BLOCK_LIMIT = 20_000;

/** UTF-8 length of a string (what a JSON payload of it weighs). */
export function utf8Length(s: string): number {
	let n = 0;
	for (let i = 0; i < s.length; i++) {
		const c = s.charCodeAt(i);
		if (c < 0x80) n += 1;
		else if (c < 0x800) n += 2;
		else if (c >= 0xd800 && c <= 0xdbff) {
			n += 4;
			i++;
		} else n += 3;
	}
	return n;
}

/** Bytes a block of this request will weigh in its workflow's carry (its longest state, ISO times, a note's room). */
export function blockCarryBytes(site: string, dp: string, range: string, req: BlockRequest): number {
	const at = '2000-01-01T00:00:00.000Z';
	const shape = {
		site_id: site,
		domain_port_id: dp,
		range,
		entry: String(req.entry).trim(),
		expiresAt: at,
		by: req.by,
		reason: req.reason,
		via: req.via ?? 'api',
		state: 'taken-over',
		addedAt: at,
	};
	return utf8Length(JSON.stringify(shape)) + 16;
}

/** Bytes the active blocks of a shard weigh now (what its next continue-as-new carries). */
export const carriedBytes = (blocks: Iterable<object>) => {
	let n = 0;
	for (const b of blocks) n += utf8Length(JSON.stringify(b)) + 1;
	return n;
};

/** A site limit from configuration (`SECSVC_MAX_SITE_BLOCKS`, `--max-site-blocks`): 1..MAX_SITE_BLOCKS, or undefined. */
export function siteBlockLimitProblem(v: number): string | undefined {
	return Number.isInteger(v) && v >= 1 && v <= MAX_SITE_BLOCKS
		? undefined
		: `must be an integer from 1 to ${MAX_SITE_BLOCKS} (the block holds a site's coordinator can carry)`;
}

/**
 * Refuses (BlockInputError naming `field`) an add of `adding` blocks weighing `addingBytes` to a shard holding
 * `active` blocks weighing `carried` bytes, on a site holding `siteHeld` blocks of at most `siteLimit` (undefined:
 * not known here).
 */
export function checkBlockCapacity(o: {
	field: string;
	site: string;
	dp: string;
	adding: number;
	addingBytes: number;
	carried: number;
	active?: number;
	siteHeld?: number;
	siteLimit?: number;
}): void {
	const limit = o.siteLimit ?? DEFAULT_SITE_BLOCK_LIMIT;
	if (o.siteHeld !== undefined && o.siteHeld + o.adding > limit)
		throw new BlockInputError(
			o.field,
			`${o.adding} new blocks (merged ranges): site ${o.site} would hold ${o.siteHeld + o.adding} expiring blocks at once, more than ${limit} (${o.siteHeld} held now; the limit per site is SECSVC_MAX_SITE_BLOCKS / --max-site-blocks, default ${DEFAULT_SITE_BLOCK_LIMIT}, at most ${MAX_SITE_BLOCKS}: what the site's coordinator carries across continue-as-new within Temporal's 2 MB payload limit): split the feed, or wait for blocks to expire. Nothing was sent`,
		);
	if (o.active !== undefined && o.active + o.adding > MAX_SHARD_BLOCKS)
		throw new BlockInputError(
			o.field,
			`${o.adding} new blocks: this shard of ${o.dp} would carry ${o.active + o.adding} active blocks, more than ${MAX_SHARD_BLOCKS} (${o.active} now; a shard is one blocks workflow): add to the next shard (the CLI and the Runbook node do). Nothing was sent`,
		);
	if (o.carried + o.addingBytes > MAX_BLOCKS_CARRY_BYTES)
		throw new BlockInputError(
			o.field,
			`${o.adding} new blocks: the active blocks of this shard of ${o.dp} would weigh ${o.carried + o.addingBytes} bytes, more than ${MAX_BLOCKS_CARRY_BYTES} (its workflow carries them across continue-as-new, within Temporal's 2 MB payload limit; ${o.carried} now): fewer entries or shorter reasons. Nothing was sent`,
		);
}

/** A hold as the coordinator carries it (the packed carry groups holds that share owner, mode, reason, since, until). */
export interface CarriedHold {
	key: string;
	owner: string;
	mode?: string;
	reason?: string;
	since?: string;
	until?: string;
}

/** Bytes of a packed group without its keys (owner, mode, reason, since, until and JSON's punctuation). */
const groupBytes = (h: Omit<CarriedHold, 'key'>) =>
	utf8Length(
		JSON.stringify({ owner: h.owner, mode: h.mode, reason: h.reason, since: h.since, until: h.until, keys: [] }),
	) + 1;

/**
 * The coordinator's rule: a claim by a blocks workflow may not take the site's holds past what the coordinator
 * carries — `packed` (since `coordinator-packed-holds`): MAX_SITE_BLOCKS block holds, and a packed carry (every
 * hold's key, one group header per owner / mode / reason / since / until: many single adds or extends make many
 * groups) of at most MAX_SITE_HOLD_BYTES; before it, MAX_SITE_BLOCKS_UNPACKED block holds.
 */
export function checkSiteBlockHolds(
	owner: string,
	keys: readonly string[],
	holds: Iterable<CarriedHold>,
	packed = false,
	reason = '',
): void {
	if (!owner.startsWith('blocks-')) return;
	let held = 0;
	let bytes = 0;
	const groups = new Set<string>();
	const mine = new Set<string>();
	for (const h of holds) {
		bytes += utf8Length(h.key) + 3;
		const g = JSON.stringify([h.owner, h.mode, h.reason, h.since, h.until]);
		if (!groups.has(g)) {
			groups.add(g);
			bytes += groupBytes(h);
		}
		if (!h.owner.startsWith('blocks-')) continue;
		held++;
		if (h.owner === owner) mine.add(h.key);
	}
	const fresh = keys.filter((k) => !mine.has(k));
	const adding = fresh.length;
	const max = packed ? MAX_SITE_BLOCKS : MAX_SITE_BLOCKS_UNPACKED;
	const why = `the coordinator carries every hold across continue-as-new, within Temporal's 2 MB payload limit`;
	if (adding && held + adding > max)
		throw new Error(
			`keys: ${adding} new block holds would make ${held + adding} on this site, more than ${max} (${why})`,
		);
	// The claim's keys become one new group (its since / until are new): its header and the keys not held yet.
	const after =
		bytes +
		fresh.reduce((n, k) => n + utf8Length(k) + 3, 0) +
		groupBytes({ owner, mode: 'hold', reason, since: 'x'.repeat(24), until: 'x'.repeat(24) });
	if (packed && keys.length && after > MAX_SITE_HOLD_BYTES)
		throw new Error(
			`keys: ${adding} new block holds would make the site's holds weigh ${after} bytes packed, more than ${MAX_SITE_HOLD_BYTES} (${why}; many single adds or extends weigh more than one feed)`,
		);
}
