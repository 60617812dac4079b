import {
	WithStartWorkflowOperation,
	WorkflowNotFoundError,
	WorkflowUpdateFailedError,
	type Client as TemporalClient,
} from '@temporalio/client';
import {
	ACTIVE_STATES,
	addBlocksUpdate,
	addBlockUpdate,
	blocksIdFor,
	blocksQuery,
	checkBlockRequest,
	checkBulkRequest,
	checkChangeRequest,
	extendBlockUpdate,
	removeBlockUpdate,
	type Block,
	type BlockRequest,
	type BulkBlockRequest,
	type BulkBlockResult,
	type ChangeRequest,
} from '../../../workflows/blocks/shared.mts';
import { holds as coordinatorHolds } from './coordination.mts';
import { printable } from './printable.mts';
import { blockCarryBytes, carriedBytes, checkBlockCapacity } from '../../../api/blockCapacity.ts';
import { WORKFLOW_TYPE } from '../../../api/runbook/contract.ts';
import type { blocks } from '../../../workflows/blocks/blocks.mts';

/**
 * Expiring blocks, client side (the CLI, the tests and the bench; workflows/blocks/blocks.mts): add / extend / remove are
 * Updates (the answer is the block as recorded, or a refusal naming the field), list is a query (or the result of a
 * finished workflow).
 */

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

/** The domain-port's blocks workflow, started by the add if it is not running (Update-with-start). */
const startBlocks = (taskQueue: string, site: string, dp: string, maxPrefix?: number) =>
	new WithStartWorkflowOperation<typeof blocks>(WORKFLOW_TYPE.blocks, {
		workflowId: blocksIdFor(site, dp),
		taskQueue,
		args: [{ site_id: site, domain_port_id: dp, ...(maxPrefix ? { maxPrefix } : {}) }],
		workflowIdConflictPolicy: 'USE_EXISTING',
	});

export async function addBlock(
	client: TemporalClient,
	taskQueue: string,
	site: string,
	dp: string,
	req: BlockRequest,
	maxPrefix?: number,
): Promise<Block> {
	checkBlockRequest(req, maxPrefix); // bad input: named, nothing sent
	try {
		return await client.workflow.executeUpdateWithStart(addBlockUpdate, {
			args: [req],
			startWorkflowOperation: startBlocks(taskQueue, site, dp, maxPrefix),
		});
	} catch (e) {
		throw refusedFrom(e);
	}
}

/**
 * Bulk add: many blocks of one domain-port in ONE Update (`addBlocks`, Update-with-start). Every entry is checked first
 * (a bad one is named, `blocks[3].entry: …`, and nothing is sent); the answer lists the blocks as recorded and the
 * entries refused at the service or the coordinator, each named.
 */
export async function addBlocks(
	client: TemporalClient,
	taskQueue: string,
	site: string,
	dp: string,
	req: BulkBlockRequest,
	maxPrefix?: number,
): Promise<BulkBlockResult> {
	checkBulkRequest(req, maxPrefix);
	try {
		return await client.workflow.executeUpdateWithStart(addBlocksUpdate, {
			args: [req],
			startWorkflowOperation: startBlocks(taskQueue, site, dp, maxPrefix),
		});
	} catch (e) {
		throw refusedFrom(e);
	}
}

async function change(
	client: TemporalClient,
	site: string,
	dp: string,
	req: ChangeRequest,
	kind: 'extend' | 'remove',
): Promise<Block> {
	checkChangeRequest(req, kind === 'extend');
	try {
		return await client.workflow
			.getHandle(blocksIdFor(site, dp))
			.executeUpdate(kind === 'extend' ? extendBlockUpdate : removeBlockUpdate, { args: [req] });
	} catch (e) {
		if (e instanceof WorkflowNotFoundError || /not found|already completed/i.test(String((e as Error)?.message)))
			throw new BlockRefused(`entry: no active block for ${req.entry} on ${dp} of site ${site}`);
		throw refusedFrom(e);
	}
}

export const extendBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) =>
	change(client, site, dp, req, 'extend');
export const removeBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) =>
	change(client, site, dp, req, 'remove');

/** The blocks of a site (every domain-port, or one), active first, then the recently ended ones. */
export async function listBlocks(client: TemporalClient, site: string, dp?: string): Promise<Block[]> {
	const ids: string[] = [];
	if (dp) ids.push(blocksIdFor(site, dp));
	else {
		const prefix = blocksIdFor(site, '');
		for await (const w of client.workflow.list({
			query: `WorkflowType = '${WORKFLOW_TYPE.blocks}' AND WorkflowId STARTS_WITH '${prefix.replace(/'/g, '')}'`,
		})) {
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

/**
 * Before the first Update of a feed: the whole feed must fit what the site's coordinator and the domain-port's blocks
 * workflow can carry (api/blockCapacity.ts), else it is refused naming `field` and nothing is sent — the Updates go in
 * chunks of MAX_BULK_BLOCKS, so a refusal by a later chunk would come after earlier POSTs.
 */
export async function checkFeedFits(
	client: TemporalClient,
	site: string,
	dp: string,
	reqs: BlockRequest[],
	ranges: string[],
	field: string,
): Promise<void> {
	const siteHeld = (await coordinatorHolds(client, site)).filter((h) => h.owner.startsWith('blocks-')).length;
	const active = (await listBlocks(client, site, dp)).filter((b) => ACTIVE_STATES.includes(b.state));
	const addingBytes = reqs.reduce((n, r, i) => n + blockCarryBytes(site, dp, ranges[i], r), 0);
	checkBlockCapacity({ field, site, dp, adding: reqs.length, addingBytes, carried: carriedBytes(active), siteHeld });
}

export function formatBlocks(blocks: Block[]): string {
	if (!blocks.length) return 'no blocks';
	return blocks
		.map((b) =>
			printable(
				`${b.site_id}  ${b.domain_port_id}  ${b.range}  expires ${b.expiresAt}  by ${b.by} (${b.via})  ${b.state}  — ${b.reason}${b.note ? ` [${b.note}]` : ''}`,
			),
		)
		.join('\n');
}
