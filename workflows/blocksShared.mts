import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { settingKey } from './coordination.mts';
import { formatRange, parseEntry } from './ranges.mts';

/**
 * Expiring blocks (workflows/README.md "Expiring blocks"): one workflow per domain-port, `blocks-<site>-<dp>`, holds
 * the timers of all its blocks. Shared by the workflow (blocks.mts), the worker's activities and client
 * (worker/src/blocks.mts), the CLI, the n8n Runbook node's tests and the attack response. No zod: pure checks.
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

export type BlockState =
	/** claimed, write in flight */
	| 'adding'
	/** on the list, ours; removed at expiresAt */
	| 'active'
	/** the entry belongs to another holder (a runbook); passes to this block at the holder's revert */
	| 'queued'
	| 'removing'
	| 'removed'
	/** at expiry the entry was not on the list as written (an operator removed or changed it): nothing written */
	| 'taken-over'
	/** removed from the queue before it was handed over (the holder keeps the entry) */
	| 'cancelled';

export interface Block {
	site_id: string;
	domain_port_id: string;
	/** Normalized start-end range (or one address): the coordinator key's range. */
	range: string;
	/** As the requester wrote it. */
	entry: string;
	expiresAt: string;
	by: string;
	reason: string;
	via: Via;
	state: BlockState;
	addedAt: string;
	endedAt?: string;
	/** Who ended it early (remove now) or who held it (queued). */
	note?: string;
	/** Times the expiry was changed (extend / shorten). */
	changes?: { at: string; by: string; expiresAt: string }[];
}

export interface BlocksInput {
	site_id: string;
	domain_port_id: string;
	/** Widest CIDR allowed (prefix length; default 16 — a /16 is 65,536 addresses). */
	maxPrefix?: number;
	/** Carried over continue-as-new. */
	blocks?: Block[];
	ended?: Block[];
}

export interface ChangeRequest {
	entry: string;
	/** New remaining time in seconds from now (shorter = shorten). Absent for remove. */
	seconds?: number;
	by: string;
	via?: Via;
}

export const addBlockUpdate = defineUpdate<Block, [BlockRequest]>('addBlock');
export const extendBlockUpdate = defineUpdate<Block, [ChangeRequest]>('extendBlock');
export const removeBlockUpdate = defineUpdate<Block, [ChangeRequest]>('removeBlock');
export const blocksQuery = defineQuery<Block[]>('blocks');
export const stopBlocksSignal = defineSignal('stopBlocks');

/** `removeMany`: one read + one DELETE naming every due entry of a domain-port (workflows/blocks.mts batched removals). */
export const BLOCKS_ACTIVITY = { add: 'blocks.add', remove: 'blocks.remove', removeMany: 'blocks.removeMany', register: 'blocks.register' } as const;

export const DEFAULT_MAX_PREFIX = 16;
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

/** The normalized range of an entry, or a BlockInputError naming the field. */
export function normalizeEntry(entry: unknown, maxPrefix = DEFAULT_MAX_PREFIX): string {
	if (typeof entry !== 'string' || !entry.trim()) throw new BlockInputError('entry', 'is required (an IPv4 address, start-end range or CIDR)');
	const r = parseEntry(entry.trim());
	if (!r) throw new BlockInputError('entry', `${JSON.stringify(entry.slice(0, 60))} must be an IPv4 address, start-end range or CIDR`);
	const width = r.end - r.start + 1;
	if (width > 2 ** (32 - maxPrefix))
		throw new BlockInputError('entry', `${entry} covers ${width} addresses: wider than the widest block allowed (/${maxPrefix}, ${2 ** (32 - maxPrefix)} addresses; maxPrefix)`);
	return formatRange(r);
}

export const blockKey = (dp: string, range: string) => settingKey.blacklistEntry(dp, range);

export function checkSeconds(seconds: unknown, field = 'seconds'): number {
	if (typeof seconds !== 'number' || !Number.isInteger(seconds)) throw new BlockInputError(field, 'must be an integer number of seconds');
	if (seconds < 1) throw new BlockInputError(field, 'must be at least 1 (a block that has ended is removed with remove)');
	if (seconds > MAX_BLOCK_SECONDS) throw new BlockInputError(field, `must be at most ${MAX_BLOCK_SECONDS} (90 days)`);
	return seconds;
}

const text = (v: unknown, field: string, max: number) => {
	if (typeof v !== 'string' || !v.trim()) throw new BlockInputError(field, 'is required');
	if (v.length > max) throw new BlockInputError(field, `must be at most ${max} characters`);
};

/** Every check of an add request that needs no I/O (the workflow's validator; the CLI runs it before sending). */
export function checkBlockRequest(req: BlockRequest, maxPrefix = DEFAULT_MAX_PREFIX): string {
	if (!req || typeof req !== 'object') throw new BlockInputError('block', 'must be an object');
	const range = normalizeEntry(req.entry, maxPrefix);
	checkSeconds(req.seconds);
	text(req.by, 'by', 200);
	text(req.reason, 'reason', 500);
	if (req.via !== undefined && !VIAS.includes(req.via)) throw new BlockInputError('via', `must be one of ${VIAS.join(', ')}`);
	return range;
}

export function checkChangeRequest(req: ChangeRequest, withSeconds: boolean): string {
	if (!req || typeof req !== 'object') throw new BlockInputError('request', 'must be an object');
	const range = normalizeEntry(req.entry, 0);
	if (withSeconds) checkSeconds(req.seconds);
	text(req.by, 'by', 200);
	return range;
}

export const ACTIVE_STATES: readonly BlockState[] = ['adding', 'active', 'queued', 'removing'];
