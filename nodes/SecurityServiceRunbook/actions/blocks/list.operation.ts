import type { IDataObject } from 'n8n-workflow';
import { blocksIdFor } from '../../../../api/blockRules';
import { blocksShardIds } from '../../../../api/blockShards';
import { BLOCKS_QUERY, WORKFLOW_TYPE } from '../../../../api/runbook/contract';
import { firstValue } from '../../transport/http';
import { httpFailure } from '../common/checks';
import type { Env, OperationFn } from '../common/types';
import { siteAndDp } from './common';

/** One output item per block. */
export const execute: OperationFn = async (env) => (await blockList(env)).map((json) => ({ json }));

const STATUS_PREFIX = /^WORKFLOW_EXECUTION_STATUS_/;

/** The blocks of one domain-port (query `blocks` of each shard), or of every domain-port of the site (visibility list). */
export async function blockList(env: Env): Promise<IDataObject[]> {
	const { site, dp } = siteAndDp(env, false);
	const ids: string[] = [];
	if (dp) ids.push(...blocksShardIds(site, dp));
	else {
		let token: string | undefined;
		for (let page = 0; page < 20; page++) {
			const qs: IDataObject = {
				query: `WorkflowType = '${WORKFLOW_TYPE.blocks}' AND WorkflowId STARTS_WITH '${blocksIdFor(site, '')}'`,
				pageSize: 200,
			};
			if (token) qs.nextPageToken = token;
			const r = await env.call('GET', env.workflowsUrl, undefined, qs);
			if (r.status >= 400) httpFailure(env, r);
			for (const e of (r.body.executions ?? []) as IDataObject[]) {
				const id = String((e.execution as IDataObject | undefined)?.workflowId ?? '');
				if (id && !ids.includes(id)) ids.push(id);
			}
			token = r.body.nextPageToken ? String(r.body.nextPageToken) : undefined;
			if (!token) break;
		}
	}
	const out: IDataObject[] = [];
	for (const id of ids) {
		const d = await env.call('GET', env.wfUrl(id));
		if (d.status === 404) continue;
		if (d.status >= 400) httpFailure(env, d);
		const status = String((d.body.workflowExecutionInfo as IDataObject | undefined)?.status ?? '').replace(
			STATUS_PREFIX,
			'',
		);
		let blocks: unknown = [];
		if (status === 'RUNNING') {
			const q = await env.call('POST', `${env.wfUrl(id)}/query/${BLOCKS_QUERY.blocks}`, { query: {} });
			if (q.status >= 400) httpFailure(env, q);
			blocks = firstValue(q.body.queryResult);
		} else if (status === 'COMPLETED') {
			// a finished workflow keeps its last ended blocks in its result (the last event of its history)
			const h = await env.call('GET', `${env.wfUrl(id)}/history-reverse`, undefined, { maximumPageSize: 1 });
			if (h.status >= 400) httpFailure(env, h);
			const ev = ((h.body.history as IDataObject | undefined)?.events ?? h.body.events ?? []) as IDataObject[];
			const done = ev[0]?.workflowExecutionCompletedEventAttributes as IDataObject | undefined;
			blocks = (firstValue(done?.result) as { ended?: unknown[] } | null)?.ended ?? [];
		}
		for (const b of Array.isArray(blocks) ? (blocks as IDataObject[]) : [])
			if (b.site_id === site && (!dp || b.domain_port_id === dp)) out.push({ workflowId: id, ...b });
	}
	return out;
}
