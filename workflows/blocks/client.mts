import {
	WithStartWorkflowOperation,
	WorkflowNotFoundError,
	WorkflowUpdateFailedError,
	type Client as TemporalClient,
} from '@temporalio/client';
import {
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
} from './shared.mts';
import { printable } from '../../worker/src/temporal/printable.mts';
import { blocksShardId, blocksShardIds, SHARD_FULL_RE } from '../../api/blockShards.ts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { blocks } from './blocks.mts';

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

/** A shard of the domain-port's blocks, started by the add if it is not running (Update-with-start). */
const startBlocks = (taskQueue: string, site: string, dp: string, maxPrefix?: number, shard = 0) =>
	new WithStartWorkflowOperation<typeof blocks>(WORKFLOW_TYPE.blocks, {
		workflowId: blocksShardId(site, dp, shard),
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
	// The first shard with room takes it (api/blockShards.ts): a full shard refuses in its validator, nothing written.
	const shards = blocksShardIds(site, dp).length;
	for (let shard = 0; ; shard++) {
		try {
			return await client.workflow.executeUpdateWithStart(addBlockUpdate, {
				args: [req],
				startWorkflowOperation: startBlocks(taskQueue, site, dp, maxPrefix, shard),
			});
		} catch (e) {
			const r = refusedFrom(e);
			if (shard + 1 < shards && r instanceof BlockRefused && SHARD_FULL_RE.test(r.message)) continue;
			throw r;
		}
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
	shard = 0,
): Promise<BulkBlockResult> {
	checkBulkRequest(req, maxPrefix);
	try {
		return await client.workflow.executeUpdateWithStart(addBlocksUpdate, {
			args: [req],
			startWorkflowOperation: startBlocks(taskQueue, site, dp, maxPrefix, shard),
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
	const none = new BlockRefused(`entry: no active block for ${req.entry} on ${dp} of site ${site}`);
	// The block is in one shard of the domain-port: asked shard by shard, the others answer "no active block".
	for (const id of blocksShardIds(site, dp)) {
		try {
			return await client.workflow
				.getHandle(id)
				.executeUpdate(kind === 'extend' ? extendBlockUpdate : removeBlockUpdate, { args: [req] });
		} catch (e) {
			if (e instanceof WorkflowNotFoundError || /not found|already completed/i.test(String((e as Error)?.message)))
				continue;
			const r = refusedFrom(e);
			if (r instanceof BlockRefused && /^entry: no active block for /.test(r.message)) continue;
			throw r;
		}
	}
	throw none;
}

export const extendBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) =>
	change(client, site, dp, req, 'extend');
export const removeBlock = (client: TemporalClient, site: string, dp: string, req: ChangeRequest) =>
	change(client, site, dp, req, 'remove');

/** The blocks of a site (every domain-port, or one: each of its shards), active first, then the recently ended ones. */
export async function listBlocks(client: TemporalClient, site: string, dp?: string): Promise<Block[]> {
	const ids: string[] = [];
	if (dp) ids.push(...blocksShardIds(site, dp));
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
			let got: Block[] = [];
			if (d.status.name === 'RUNNING') got = await h.query(blocksQuery);
			else if (d.status.name === 'COMPLETED') got = ((await h.result()) as { ended?: Block[] }).ended ?? [];
			// `blocks-<site>-` also starts the ids of a site whose id continues with `-…`: only this site's (and dp's).
			out.push(...got.filter((b) => b.site_id === site && (!dp || b.domain_port_id === dp)));
		} catch (e) {
			if (!(e instanceof WorkflowNotFoundError)) throw e;
		}
	}
	return out;
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
