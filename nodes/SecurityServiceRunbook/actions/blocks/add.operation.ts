import type { IDataObject } from 'n8n-workflow';
import { checkBlockRequest, type BlockRequest } from '../../../../api/blockRules';
import { blocksShardIds, SHARD_FULL_RE } from '../../../../api/blockShards';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { BLOCKS_UPDATE, WORKFLOW_TYPE } from '../../../../api/runbook/contract';
import { outcomeOf, updateWithStartRequest } from '../../transport/http';
import { httpFailure, refused, updateId } from '../common/checks';
import type { Env, Http, OperationFn } from '../common/types';
import { checked, seconds, siteAndDp } from './common';
import { requirePollers } from '../common/taskQueuePollers';

const F = RUNBOOK.fields;

export const execute: OperationFn = async (env) => [{ json: await blockAdd(env) }];

/** Add: Update-with-start of blocks-<site>-<dp> (one HTTP call; retried once if the workflow was closing meanwhile). */
export async function blockAdd(env: Env): Promise<IDataObject> {
	const { ctx, i } = env;
	const { site, dp } = siteAndDp(env, true);
	const req: BlockRequest = {
		entry: String(ctx.getNodeParameter('entry', i, '') ?? '').trim(),
		seconds: seconds(env),
		by: env.text(F.by, ctx.getNodeParameter('by', i, '')).trim(),
		reason: env.text(F.reason, ctx.getNodeParameter('reason', i, '')).trim(),
		via: 'n8n',
	};
	checked(env, () => checkBlockRequest(req));
	// Options › Task Queue (the blocks workflow's worker). n8n drops a parameter its operation no longer shows, so a
	// workflow saved with the older top-level field runs on the default queue; the poller check below refuses a queue
	// nobody polls, naming the field.
	const taskQueue = env.text(F.taskQueue, ctx.getNodeParameter('blockOptions.taskQueue', i, 'secsvc-runbooks')).trim();
	if (!taskQueue || taskQueue.length > 256 || /\p{Cc}/u.test(taskQueue))
		env.fail(F.taskQueue, 'is required (at most 256 characters without control characters)');
	await requirePollers(env, F.taskQueue, taskQueue);
	// The first shard of the domain-port with room takes it (api/blockShards.ts): a full one refuses, nothing written.
	const shards = blocksShardIds(site, dp);
	let last: Http | undefined;
	for (const [n, workflowId] of shards.entries()) {
		let full = false;
		for (let attempt = 1; attempt <= 2 && !full; attempt++) {
			const uid = updateId(env, 'block');
			const body = updateWithStartRequest(
				env.ns,
				{
					workflowId,
					workflowType: WORKFLOW_TYPE.blocks,
					taskQueue,
					input: { site_id: site, domain_port_id: dp },
					requestId: `${uid}-start`,
				},
				{ name: BLOCKS_UPDATE.add, arg: req, updateId: uid },
			);
			last = await env.call('POST', `${env.workflowsUrl}/execute-multi-operation`, body as unknown as IDataObject);
			const responses = (last.body.responses ?? []) as IDataObject[];
			const out = last.status < 400 ? outcomeOf(responses[1]?.updateWorkflow) : undefined;
			full = !!out && !out.ok && n + 1 < shards.length && SHARD_FULL_RE.test(out.message);
			if (full) continue;
			if (out && !out.ok) refused(env, RUNBOOK.refused.block, out.message, RUNBOOK.refused.nothingWritten);
			if (out?.ok) return { workflowId, ...((out.value ?? {}) as IDataObject) };
			// the workflow completed (or was closing) between the start and the Update: once more starts a new run
		}
		if (!full) break;
	}
	return httpFailure(env, last as Http);
}
