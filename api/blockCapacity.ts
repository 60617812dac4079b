import { BlockInputError, type BlockRequest } from './blockRules';

/**
 * What expiring blocks can carry: every active block lives in its domain-port's blocks workflow and holds
 * its entry's key at the site's coordinator; both carry ALL of it across continue-as-new as one payload, and
 * Temporal refuses a payload over 2 MB (the run is TERMINATED: its blocks would never expire). So an add that would
 * take either over its budget is refused before anything is sent, naming the field and the rule — by the CLI for a
 * whole feed (before its first Update), by the blocks workflow's validators, and by the coordinator's claim validator.
 * Pure: no globals — safe inside workflow code.
 */

/** Expiring blocks held at once per site (coordinator holds of owners `blocks-…`; a hold is ~250 bytes carried). */
export const MAX_SITE_BLOCKS = 2000;
/** Bytes of active blocks one domain-port's workflow carries (JSON); the rest of its 2 MB is for ended blocks and notes. */
export const MAX_BLOCKS_CARRY_BYTES = 1_000_000;

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

/** Bytes the active blocks of a domain-port weigh now (what its next continue-as-new carries). */
export const carriedBytes = (blocks: Iterable<object>) => {
	let n = 0;
	for (const b of blocks) n += utf8Length(JSON.stringify(b)) + 1;
	return n;
};

/**
 * Refuses (BlockInputError naming `field`) an add of `adding` blocks weighing `addingBytes` to a domain-port whose
 * active blocks weigh `carried` bytes, on a site holding `siteHeld` blocks (undefined: not known here).
 */
export function checkBlockCapacity(o: {
	field: string;
	site: string;
	dp: string;
	adding: number;
	addingBytes: number;
	carried: number;
	siteHeld?: number;
}): void {
	if (o.siteHeld !== undefined && o.siteHeld + o.adding > MAX_SITE_BLOCKS)
		throw new BlockInputError(
			o.field,
			`${o.adding} new blocks: site ${o.site} would hold ${o.siteHeld + o.adding} expiring blocks at once, more than ${MAX_SITE_BLOCKS} (${o.siteHeld} held now; its coordinator carries every hold across continue-as-new, within Temporal's 2 MB payload limit): split the feed, or wait for blocks to expire. Nothing was sent`,
		);
	if (o.carried + o.addingBytes > MAX_BLOCKS_CARRY_BYTES)
		throw new BlockInputError(
			o.field,
			`${o.adding} new blocks: the active blocks of ${o.dp} would weigh ${o.carried + o.addingBytes} bytes, more than ${MAX_BLOCKS_CARRY_BYTES} (its workflow carries them across continue-as-new, within Temporal's 2 MB payload limit; ${o.carried} now): fewer entries or shorter reasons. Nothing was sent`,
		);
}

/** The coordinator's rule: a claim by a blocks workflow may not take the site's block holds past MAX_SITE_BLOCKS. */
export function checkSiteBlockHolds(
	owner: string,
	keys: readonly string[],
	holds: Iterable<{ key: string; owner: string }>,
): void {
	if (!owner.startsWith('blocks-')) return;
	let held = 0;
	const mine = new Set<string>();
	for (const h of holds) {
		if (!h.owner.startsWith('blocks-')) continue;
		held++;
		if (h.owner === owner) mine.add(h.key);
	}
	const adding = keys.filter((k) => !mine.has(k)).length;
	if (adding && held + adding > MAX_SITE_BLOCKS)
		throw new Error(
			`keys: ${adding} new block holds would make ${held + adding} on this site, more than ${MAX_SITE_BLOCKS} (the coordinator carries every hold across continue-as-new, within Temporal's 2 MB payload limit)`,
		);
}
