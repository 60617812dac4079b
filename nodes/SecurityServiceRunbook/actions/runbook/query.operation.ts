import { NodeOperationError, type IDataObject } from 'n8n-workflow';
import { renderReportHtml } from '../../../../api/report/html';
import { runbookReportModel, type RunbookResultLike } from '../../../../api/report/model';
import { RUNBOOK_QUERY } from '../../../../api/runbook/contract';
import { decodePayload } from '../../transport/http';
import { runbookIdOf } from '../common/checks';
import type { Env, OperationFn } from '../common/types';

/** Query: state, changes, audit trail, plan or result; or the finished runbook's Attack Report as an HTML file. */
export const execute: OperationFn = async (env) => {
	const workflowId = runbookIdOf(env);
	if (env.ctx.getNodeParameter('query', env.i) === 'report') return await report(env, workflowId);
	const q = env.ctx.getNodeParameter('query', env.i) as string;
	const v = await queryValue(env, workflowId, q, `query ${q} rejected`);
	// The audit trail is a list of entries: one item each (in order), so the next nodes filter, map or post them.
	if (q === 'audit' && Array.isArray(v))
		return v.map((entry, index) => ({ json: { workflowId, query: q, index, ...(entry as IDataObject) } }));
	return [{ json: { workflowId, query: q, result: (v ?? null) as IDataObject } }];
};

/** One query's value: full form ({payloads: [...]}) or, when a proxy ignores the header, shorthand ([value]). */
async function queryValue(env: Env, workflowId: string, q: string, rejected: string): Promise<unknown> {
	const r = await env.send('POST', `${env.wfUrl(workflowId)}/query/${q}`, { query: {} });
	if (r.queryRejected)
		throw new NodeOperationError(env.ctx.getNode(), `${rejected}: ${JSON.stringify(r.queryRejected)}`, {
			itemIndex: env.i,
		});
	const qr = r.queryResult as { payloads?: unknown[] } | unknown[] | undefined;
	return Array.isArray(qr) ? qr[0] : decodePayload(qr?.payloads?.[0]);
}

/** The Attack Report: the `result` query rendered as one self-contained HTML file in binary data. */
async function report(env: Env, workflowId: string) {
	const { ctx, i } = env;
	const field = String(ctx.getNodeParameter('binaryPropertyName', i, 'data')).trim();
	if (!field) env.fail('Put Output File in Field', 'is required');
	const result = (await queryValue(
		env,
		workflowId,
		RUNBOOK_QUERY.result,
		'query result rejected',
	)) as RunbookResultLike | null;
	if (!result || !Array.isArray(result.changes))
		throw new NodeOperationError(ctx.getNode(), `${workflowId}: no result yet`, {
			itemIndex: i,
			description: 'The report is available once the runbook has finished.',
		});
	const html = renderReportHtml(runbookReportModel(result, new Date().toISOString()));
	const binary = await ctx.helpers.prepareBinaryData(
		Buffer.from(html, 'utf8'),
		`attack-report-${workflowId}.html`,
		'text/html',
	);
	return [
		{
			json: {
				workflowId,
				outcome: result.outcome,
				siteId: result.site_id,
				eventId: result.eventId ?? null,
				fileName: binary.fileName ?? null,
			},
			binary: { [field]: binary },
		},
	];
}
