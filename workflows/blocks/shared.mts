import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { settingKey } from '../coordinator/coordination.mts';

/**
 * Expiring blocks (docs/workflows/expiring-blocks.md): one workflow per domain-port, `blocks-<site>-<dp>`, holds
 * the timers of all its blocks. Shared by the workflow (blocks.mts), the worker's activities and client
 * (workflows/blocks/activities.mts), the CLI, the n8n Runbook node's tests and the attack response. The input rules live in
 * api/blockRules.ts (the n8n Runbook node checks with them too) and are re-exported here.
 */

export {
	blocksIdFor,
	BlockInputError,
	checkBlockRequest,
	checkBulkRequest,
	checkChangeRequest,
	checkSeconds,
	DEFAULT_MAX_PREFIX,
	MAX_BLOCK_SECONDS,
	MAX_BULK_BLOCKS,
	normalizeEntry,
	VIAS,
	type BlockRequest,
	type BulkBlockRequest,
	type ChangeRequest,
	type Via,
} from '../../api/blockRules.ts';
import type { BlockRequest, BulkBlockRequest, ChangeRequest, Via } from '../../api/blockRules.ts';

export type BlockState =
	/** claimed, write in flight */
	| 'adding'
	/** on the list, ours; removed at expiresAt */
	| 'active'
	/** the entry belongs to another holder (a runbook); passes to this block at the holder's revert */
	| 'queued'
	| 'removing'
	| 'removed'
	/**
	 * the entry is someone else's: at expiry it was not on the list as written (an operator removed or changed it), or
	 * its holder let it go without having written it and it was already listed ("already present, not ours"): nothing
	 * written
	 */
	| 'taken-over'
	/** removed from the queue before it was handed over (the holder keeps the entry) */
	| 'cancelled'
	/**
	 * outcome unknown: a retry of the add (the earlier attempt's answer lost) found the entry listed — that attempt's
	 * POST or someone else's add, nothing tells. Not the block's: ended at once, never removed; reported (check it)
	 */
	| 'unknown';

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
	/** Added with `adopt` (the attack response's own entries): an entry already listed is this block's. */
	adopt?: true;
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
/** A refusal of one entry of a bulk add (the others go on): the field and the rule, as a single add's error says. */
export interface BulkRefusal {
	entry: string;
	field: string;
	rule: string;
}
/** The answer to a bulk add: the blocks as recorded (active or queued) and the entries refused, each named. */
export interface BulkBlockResult {
	blocks: Block[];
	refused: BulkRefusal[];
}
/** Bulk add (threat feeds): many blocks of the domain-port in one Update; the validator checks every entry first. */
export const addBlocksUpdate = defineUpdate<BulkBlockResult, [BulkBlockRequest]>('addBlocks');
export const extendBlockUpdate = defineUpdate<Block, [ChangeRequest]>('extendBlock');
export const removeBlockUpdate = defineUpdate<Block, [ChangeRequest]>('removeBlock');
export const blocksQuery = defineQuery<Block[]>('blocks');
/**
 * Sent by the removal (`blocks.removeDue`) to its own run just BEFORE its DELETE: the ranges that DELETE names. The
 * workflow ignores it; the history keeps it, so a later attempt of a removal whose workflow task was lost (worker
 * killed) can tell an entry our DELETE may have removed from one someone else removed (workflows/blocks/activitiesRemoval.mts).
 */
export const removalIntentSignal = defineSignal<[{ ranges: string[] }]>('blocksRemovalIntent');

/**
 * `removeMany`: one read + one DELETE naming every due entry of a domain-port (workflows/blocks/blocks.mts batched removals);
 * `addMany`: an add batch in one activity — the
 * coordinator claim, one read, one POST per entry not yet listed, the release of the keys not written.
 */
export const BLOCKS_ACTIVITY = {
	add: 'blocks.add',
	addMany: 'blocks.addMany',
	remove: 'blocks.remove',
	removeMany: 'blocks.removeMany',
	removeDue: 'blocks.removeDue',
	register: 'blocks.register',
} as const;

/**
 * `removeDue` (a LOCAL activity, since `blocks-local-removals`): the due entries of a domain-port (one read, one
 * DELETE) and the release of keys whose removal an earlier workflow task recorded.
 */
export interface RemoveDueInput {
	site_id: string;
	domain_port_id: string;
	entries: { range: string; expiresAt: string }[];
	release?: string[];
}
export interface RemoveDueResult {
	released: number;
	/** `at`: when the entry left the list (the removal's clock; results recorded before it have none). */
	results: { entry: string; removed: boolean; note?: string; at?: string }[];
}

/** One entry of an `addMany` batch, and what became of it. */
export interface AddManyEntry {
	range: string;
	adopt?: boolean;
}
export type AddManyOutcome =
	| { range: string; outcome: 'active' }
	/** Listed on a retry after an earlier attempt recorded it was about to write: its lost POST or someone else's. */
	| { range: string; outcome: 'unknown' }
	| { range: string; outcome: 'queued'; holder: { owner: string; reason: string } }
	/** `present`: the entry was on the list before and no block wrote it (the operator's). */
	| { range: string; outcome: 'refused'; field: string; rule: string; present?: true };

/** The rule of a refused add whose entry was listed before any write of ours. */
export const notOursRule = (range: string, dp: string) =>
	`${range} is already on the blacklist of ${dp} and no block wrote it: it stays as it is (remove it first to block it for a while)`;

export const blockKey = (dp: string, range: string) => settingKey.blacklistEntry(dp, range);

export const ACTIVE_STATES: readonly BlockState[] = ['adding', 'active', 'queued', 'removing'];
