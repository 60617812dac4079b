import type { IDataObject } from 'n8n-workflow';
import { checkChangeRequest, type ChangeRequest } from '../../../../api/blockRules';
import { blocksShardIds } from '../../../../api/blockShards';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { BLOCKS_UPDATE } from '../../../../api/runbook/contract';
import { outcomeOf, updateRequest } from '../../transport/http';
import { httpFailure, isGone, refused, updateId } from '../common/checks';
import type { Env } from '../common/types';
import { checked, seconds, siteAndDp } from './common';

const F = RUNBOOK.fields;

/** Extend / shorten (new remaining time) or remove now: an Update of the domain-port's blocks workflow. */
export async function blockChange(env: Env, kind: 'extend' | 'remove'): Promise<IDataObject> {
	const { ctx, i } = env;
	const { site, dp } = siteAndDp(env, true);
	const req: ChangeRequest = {
		entry: String(ctx.getNodeParameter('entry', i, '') ?? '').trim(),
		by: env.text(F.by, ctx.getNodeParameter('by', i, '')).trim(),
		via: 'n8n',
		...(kind === 'extend' ? { seconds: seconds(env) } : {}),
	};
	checked(env, () => checkChangeRequest(req, kind === 'extend'));
	const name = kind === 'extend' ? BLOCKS_UPDATE.extend : BLOCKS_UPDATE.remove;
	// The block is in one shard of the domain-port (api/blockShards.ts): the others answer "no active block".
	for (const workflowId of blocksShardIds(site, dp)) {
		const r = await env.call(
			'POST',
			`${env.wfUrl(workflowId)}/update/${name}`,
			updateRequest(workflowId, name, req, updateId(env, name)),
		);
		if (r.status >= 400 && isGone(r)) continue;
		if (r.status >= 400) httpFailure(env, r);
		const out = outcomeOf(r.body);
		if (!out) httpFailure(env, r);
		if (!out.ok && /^entry: no active block for /.test(out.message)) continue;
		if (!out.ok) refused(env, RUNBOOK.refused.block, out.message, RUNBOOK.refused.nothingWritten);
		return { workflowId, ...((out.value ?? {}) as IDataObject) };
	}
	return refused(
		env,
		RUNBOOK.refused.block,
		`entry: no active block for ${req.entry} on ${dp} of site ${site}`,
		RUNBOOK.refused.nothingWritten,
	);
}
