import { NodeApiError, NodeOperationError, type IExecuteFunctions, type JsonObject } from 'n8n-workflow';
import { runbookIdFrom, WORKFLOW_ID_RE, WORKFLOW_ID_RULE } from '../../../../api/runbook/contract';
import { refusalText } from '../../transport/http';
import type { Env, Http } from './types';

export function fail(ctx: IExecuteFunctions, field: string, rule: string, itemIndex: number): never {
	throw new NodeOperationError(ctx.getNode(), `${field}: ${rule}`, {
		itemIndex,
		description: 'Nothing was sent to Temporal.',
	});
}

/** Free text recorded in the audit trail (by, reason): at most 1024 characters. */
export function boundedText(ctx: IExecuteFunctions, field: string, v: unknown, itemIndex: number): string {
	if (v !== undefined && v !== null && typeof v !== 'string' && typeof v !== 'number')
		fail(ctx, field, 'must be text', itemIndex);
	const s = String(v ?? '');
	if (s.length > 1024) fail(ctx, field, `must be at most 1024 characters (got ${s.length})`, itemIndex);
	return s;
}

/** The Runbook field: a site id (→ attack-response-<site>) or a full workflow id. */
export function runbookIdOf(env: Env): string {
	const v = env.ctx.getNodeParameter('runbook', env.i);
	if (typeof v !== 'string' && typeof v !== 'number') env.fail('Runbook', 'must be a site id or a workflow id (text)');
	const s = String(v).trim();
	if (!s) env.fail('Runbook', 'is required (a site id or a workflow id)');
	if (!WORKFLOW_ID_RE.test(s)) env.fail('Runbook', WORKFLOW_ID_RULE);
	return runbookIdFrom(s);
}

/** A fresh Update id: execution, item, time and a random tail. */
export const updateId = (env: Env, what: string) =>
	`n8n-${what}-${env.ctx.getExecutionId() ?? 'x'}-${env.i}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

export function httpFailure(env: Env, r: Http): never {
	throw new NodeApiError(env.ctx.getNode(), r.body as JsonObject, { itemIndex: env.i, httpCode: String(r.status) });
}

/** Temporal's answer for a workflow that does not exist or has closed. */
export const isGone = (r: Http) =>
	r.status === 404 ||
	/not found|already completed|workflow execution.*(closed|completed)/i.test(String(r.body?.message ?? ''));

/** A workflow validator's refusal: the title, the refusal with the field as the node shows it, and what it means. */
export function refused(env: Env, title: string, message: string, description: string): never {
	throw new NodeOperationError(env.ctx.getNode(), `${title} — ${refusalText(message)}`, {
		itemIndex: env.i,
		description,
	});
}
