import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { settingKey } from './coordination.mts';

/**
 * Expiring blocks (workflows/README.md "Expiring blocks"): one workflow per domain-port, `blocks-<site>-<dp>`, holds
 * the timers of all its blocks. Shared by the workflow (blocks.mts), the worker's activities and client
 * (worker/src/blocks.mts), the CLI, the n8n Runbook node's tests and the attack response. The input rules live in
 * api/blockRules.ts (the n8n Runbook node checks with them too) and are re-exported here.
 */

export {
	blocksIdFor,
	BlockInputError,
	checkBlockRequest,
	checkChangeRequest,
	checkSeconds,
	DEFAULT_MAX_PREFIX,
	MAX_BLOCK_SECONDS,
	normalizeEntry,
	VIAS,
	type BlockRequest,
	type ChangeRequest,
	type Via,
} from '../api/blockRules.ts';
import type { BlockRequest, ChangeRequest, Via } from '../api/blockRules.ts';

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

export const addBlockUpdate = defineUpdate<Block, [BlockRequest]>('addBlock');
export const extendBlockUpdate = defineUpdate<Block, [ChangeRequest]>('extendBlock');
export const removeBlockUpdate = defineUpdate<Block, [ChangeRequest]>('removeBlock');
export const blocksQuery = defineQuery<Block[]>('blocks');
export const stopBlocksSignal = defineSignal('stopBlocks');

/** `removeMany`: one read + one DELETE naming every due entry of a domain-port (workflows/blocks.mts batched removals). */
export const BLOCKS_ACTIVITY = { add: 'blocks.add', remove: 'blocks.remove', removeMany: 'blocks.removeMany', register: 'blocks.register' } as const;

export const blockKey = (dp: string, range: string) => settingKey.blacklistEntry(dp, range);

export const ACTIVE_STATES: readonly BlockState[] = ['adding', 'active', 'queued', 'removing'];
