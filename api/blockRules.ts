import { blastRadiusIssues, DEFAULT_WIDEST_PREFIX, rangeText } from './blastRadius';
import { parseIpv4Entry } from './catalog/ipv4';

/**
 * Expiring blocks: the input rules that need no I/O, shared by the blocks workflow's validators
 * (workflows/blocks/shared.mts re-exports them), the worker's client and CLI, and the n8n Runbook node (which may not
 * import workflows/). Pure: no zod, no globals — safe inside workflow code.
 */

export const blocksIdFor = (site: string, dp: string) => `blocks-${site}-${dp}`;

/** How the request came in (recorded with the block). */
export type Via = 'cli' | 'n8n' | 'http' | 'runbook' | 'api';
export const VIAS: readonly Via[] = ['cli', 'n8n', 'http', 'runbook', 'api'];

export interface BlockRequest {
	/** IPv4 address, start-end range or CIDR. */
	entry: string;
	/** Seconds from now until the entry is removed. */
	seconds: number;
	by: string;
	reason: string;
	via?: Via;
	/**
	 * The entry is already on the list, written by the caller (an attack response registering its own entries with
	 * `blacklist.expireAfterSeconds`): the block queues behind the caller's hold and takes the entry over at its revert.
	 */
	adopt?: boolean;
}

export interface ChangeRequest {
	entry: string;
	/** New remaining time in seconds from now (shorter = shorten). Absent for remove. */
	seconds?: number;
	by: string;
	via?: Via;
}

/** The blast-radius guard's widest prefix (api/blastRadius.ts): one rule for the expiring blocks and every other block. */
export const DEFAULT_MAX_PREFIX = DEFAULT_WIDEST_PREFIX;
/** 90 days: anything longer is a permanent block in disguise. */
export const MAX_BLOCK_SECONDS = 90 * 86400;

export class BlockInputError extends Error {
	constructor(
		readonly field: string,
		readonly rule: string,
	) {
		super(`${field}: ${rule}`);
		this.name = 'BlockInputError';
	}
}

/**
 * The normalized range of an entry (`a.b.c.d` or `a.b.c.d-e.f.g.h`), or a BlockInputError naming the field.
 * A new block passes the blast-radius guard's rules that need no I/O (widest prefix, special ranges); `maxPrefix`
 * null reads the entry only (changes and removals of an existing block). A `maxPrefix` wider than the worker's
 * widest prefix is still refused by the guard in the client when the block is written.
 */
export function normalizeEntry(entry: unknown, maxPrefix: number | null = DEFAULT_MAX_PREFIX, field = 'entry'): string {
	if (typeof entry !== 'string' || !entry.trim())
		throw new BlockInputError(field, 'is required (an IPv4 address, start-end range or CIDR)');
	const r = parseIpv4Entry(entry.trim());
	if (!r)
		throw new BlockInputError(
			field,
			`${JSON.stringify(entry.slice(0, 60))} must be an IPv4 address, start-end range or CIDR`,
		);
	if (maxPrefix !== null) {
		const issue = blastRadiusIssues(entry, field, { widestPrefix: maxPrefix })[0];
		// the width rule as the expiring blocks always worded it (they have no override)
		if (issue)
			throw new BlockInputError(
				field,
				issue.kind === 'widest-prefix' ? issue.rule.replace(/; an audited override.*$/, '') : issue.rule,
			);
	}
	return rangeText(r);
}

export function checkSeconds(seconds: unknown, field = 'seconds'): number {
	if (typeof seconds !== 'number' || !Number.isInteger(seconds))
		throw new BlockInputError(field, 'must be an integer number of seconds');
	if (seconds < 1)
		throw new BlockInputError(field, 'must be at least 1 (a block that has ended is removed with remove)');
	if (seconds > MAX_BLOCK_SECONDS) throw new BlockInputError(field, `must be at most ${MAX_BLOCK_SECONDS} (90 days)`);
	return seconds;
}

function checkText(v: unknown, field: string, max: number): void {
	if (typeof v !== 'string' || !v.trim()) throw new BlockInputError(field, 'is required');
	if (v.length > max) throw new BlockInputError(field, `must be at most ${max} characters`);
}

/**
 * Every check of an add request that needs no I/O (the workflow's validator; the CLI and n8n run it before sending).
 * `at` prefixes the field names (a bulk add: `blocks[3].`).
 */
export function checkBlockRequest(req: BlockRequest, maxPrefix = DEFAULT_MAX_PREFIX, at = ''): string {
	if (!req || typeof req !== 'object')
		throw new BlockInputError(at ? at.replace(/\.$/, '') : 'block', 'must be an object');
	const range = normalizeEntry(req.entry, maxPrefix, `${at}entry`);
	checkSeconds(req.seconds, `${at}seconds`);
	checkText(req.by, `${at}by`, 200);
	checkText(req.reason, `${at}reason`, 500);
	if (req.via !== undefined && !VIAS.includes(req.via))
		throw new BlockInputError(`${at}via`, `must be one of ${VIAS.join(', ')}`);
	return range;
}

export function checkChangeRequest(req: ChangeRequest, withSeconds: boolean): string {
	if (!req || typeof req !== 'object') throw new BlockInputError('request', 'must be an object');
	const range = normalizeEntry(req.entry, null);
	if (withSeconds) checkSeconds(req.seconds);
	checkText(req.by, 'by', 200);
	return range;
}

/** At most this many entries in one bulk add (one `addBlocks` Update): a threat feed is sent in chunks. */
export const MAX_BULK_BLOCKS = 1000;

/** A bulk add: many blocks of one domain-port in one Update (threat feeds); each entry has its own duration. */
export interface BulkBlockRequest {
	blocks: BlockRequest[];
}

/**
 * Every check of a bulk add that needs no I/O: each entry as `checkBlockRequest`, its field named with its place
 * (`blocks[3].entry: …`), and no range twice. Returns the normalized ranges, in order.
 */
export function checkBulkRequest(req: BulkBlockRequest, maxPrefix = DEFAULT_MAX_PREFIX): string[] {
	if (!req || typeof req !== 'object' || !Array.isArray(req.blocks))
		throw new BlockInputError('blocks', 'must be a list of blocks');
	if (!req.blocks.length) throw new BlockInputError('blocks', 'must name at least one block');
	if (req.blocks.length > MAX_BULK_BLOCKS)
		throw new BlockInputError('blocks', `must name at most ${MAX_BULK_BLOCKS} blocks (send more in several adds)`);
	const seen = new Map<string, number>();
	return req.blocks.map((b, i) => {
		const range = checkBlockRequest(b, maxPrefix, `blocks[${i}].`);
		const first = seen.get(range);
		if (first !== undefined)
			throw new BlockInputError(
				`blocks[${i}].entry`,
				`${b.entry} is the same range as blocks[${first}] (${range}): name each range once`,
			);
		seen.set(range, i);
		return range;
	});
}
