import type { IDataObject } from 'n8n-workflow';
import { blocksIdFor, checkChangeRequest, type ChangeRequest } from '../../../../api/blockRules';
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
	const workflowId = blocksIdFor(site, dp);
	const name = kind === 'extend' ? BLOCKS_UPDATE.extend : BLOCKS_UPDATE.remove;
	const r = await env.call(
		'POST',
		`${env.wfUrl(workflowId)}/update/${name}`,
		updateRequest(workflowId, name, req, updateId(env, name)),
	);
	if (r.status >= 400 && isGone(r))
		refused(
			env,
			RUNBOOK.refused.block,
			`entry: no active block for ${req.entry} on ${dp} of site ${site}`,
			RUNBOOK.refused.nothingWritten,
		);
	if (r.status >= 400) httpFailure(env, r);
	const out = outcomeOf(r.body);
	if (!out) httpFailure(env, r);
	if (!out.ok) refused(env, RUNBOOK.refused.block, out.message, RUNBOOK.refused.nothingWritten);
	return { workflowId, ...((out.value ?? {}) as IDataObject) };
}
