import { NodeApiError, NodeOperationError, type IDataObject, type IExecuteFunctions, type JsonObject } from 'n8n-workflow';
import { BlockInputError, blocksIdFor, checkBlockRequest, checkChangeRequest, type BlockRequest, type ChangeRequest } from '../../api/blockRules';
import { RUNBOOK } from '../../api/catalog/labels';
import { decideInputProblem, type DecideRequest } from '../../api/decideRules';
import { idProblem } from '../../api/limits';
import { requirePollers } from './taskQueuePollers';
import { firstValue, outcomeOf, refusalText, updateRequest, updateWithStartRequest } from './temporalHttp';

/**
 * Decide (the runbook's `decide` Update) and the expiring-block operations (the `blocks-<site>-<dp>` workflow's
 * Updates addBlock / extendBlock / removeBlock, its `blocks` query, and the visibility list for a whole site), over
 * Temporal's HTTP API. Input is checked with the same rules as the workflows' validators (api/blockRules.ts,
 * api/decideRules.ts) before anything is sent; a validator's refusal comes back as an error naming the field.
 */

export interface Http {
	status: number;
	body: IDataObject;
}

export interface Env {
	ctx: IExecuteFunctions;
	i: number;
	ns: string;
	/** …/api/v1/namespaces/{ns}/workflows */
	workflowsUrl: string;
	wfUrl(id: string): string;
	call(method: 'GET' | 'POST', url: string, body?: IDataObject, qs?: IDataObject): Promise<Http>;
	fail(field: string, rule: string): never;
	text(field: string, v: unknown): string;
}

const F = RUNBOOK.fields;
const updateId = (env: Env, what: string) => `n8n-${what}-${env.ctx.getExecutionId() ?? 'x'}-${env.i}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

export function httpFailure(env: Env, r: Http): never {
	throw new NodeApiError(env.ctx.getNode(), r.body as JsonObject, { itemIndex: env.i, httpCode: String(r.status) });
}

const isGone = (r: Http) => r.status === 404 || /not found|already completed|workflow execution.*(closed|completed)/i.test(String(r.body?.message ?? ''));

function refused(env: Env, title: string, message: string, description: string): never {
	throw new NodeOperationError(env.ctx.getNode(), `${title} — ${refusalText(message)}`, { itemIndex: env.i, description });
}

/** Decide: approve or reject through the `decide` Update; returns the decision (accepted, by, at, via). */
export async function decide(env: Env, workflowId: string): Promise<IDataObject> {
	const { ctx, i } = env;
	const decision = ctx.getNodeParameter('decision', i, '') as string;
	if (decision !== 'approve' && decision !== 'reject') env.fail(F.decision, 'is required: Approve or Reject');
	return decideAs(env, workflowId, decision, { by: F.by, reason: F.reason });
}

/**
 * The one way this node approves or rejects: the `decide` Update, whose validator holds every rule of a decision.
 * Decide uses it, and so does Signal › Approve / Reject (kept for saved workflows; its By and Reason are the
 * signal's "Sent By" and "Reason" fields): a refusal is a node error naming the field, and nothing changes.
 */
export async function decideAs(env: Env, workflowId: string, decision: 'approve' | 'reject', fields: { by: string; reason: string }): Promise<IDataObject> {
	const { ctx, i } = env;
	const by = env.text(fields.by, ctx.getNodeParameter('by', i, '')).trim();
	if (!by) env.fail(fields.by, 'is required (the identity of the person deciding)');
	const reason = env.text(fields.reason, ctx.getNodeParameter('reason', i, '')).trim();
	const req: DecideRequest = { approved: decision === 'approve', by, via: 'n8n', ...(reason ? { reason } : {}) };
	const problem = decideInputProblem(req);
	if (problem) {
		const [field, ...rule] = refusalText(problem).split(': ');
		env.fail(field, rule.join(': '));
	}
	// Decide placed right after Start reaches the runbook before its gate (it still snapshots and plans): wait for
	// it, bounded by Wait for the Gate, by long-polling the runbook's history (no timers in a node) and asking again.
	const waitSeconds = Number(ctx.getNodeParameter('gateWaitSeconds', i, DEFAULT_GATE_WAIT_SECONDS));
	if (!Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > MAX_GATE_WAIT_SECONDS)
		env.fail('Wait for the Gate (Seconds)', `must be a whole number of seconds from 0 to ${MAX_GATE_WAIT_SECONDS}`);
	let deadline = Date.now() + waitSeconds * 1000;
	let token: string | undefined;
	for (;;) {
		const r = await env.call('POST', `${env.wfUrl(workflowId)}/update/decide`, updateRequest(workflowId, 'decide', req, updateId(env, 'decide')));
		if (r.status >= 400 && isGone(r)) refused(env, RUNBOOK.refused.decide, `approval: ${workflowId} is not running (no such runbook, or it has finished)`, RUNBOOK.refused.nothingChanged);
		if (r.status >= 400) httpFailure(env, r);
		const out = outcomeOf(r.body);
		if (!out) httpFailure(env, r);
		if (out.ok) return decisionOutput(workflowId, out.value);
		const phase = NOT_WAITING.exec(out.message)?.[1];
		if (phase && BEFORE_GATE.has(phase) && Date.now() < deadline) {
			token = await nextHistoryEvents(env, workflowId, token);
			if (!token) deadline = 0; // no long poll possible (the server gave no page token): ask once more, then answer
			continue;
		}
		const why = !phase
			? RUNBOOK.refused.nothingChanged
			: BEFORE_GATE.has(phase)
				? `${RUNBOOK.refused.nothingChanged} The runbook did not reach its approval gate within ${waitSeconds} s (Wait for the Gate).`
				: `${RUNBOOK.refused.nothingChanged} A runbook waits for a decision only when its plan requires approval (Start › Require Approval, or "approval": {"required": true} in the plan), and only until it is decided or times out.`;
		refused(env, RUNBOOK.refused.decide, out.message, why);
	}
}

/** Runbook phases before the approval gate: Decide waits through them. */
const BEFORE_GATE = new Set(['validating', 'snapshot', 'planning']);
const NOT_WAITING = /not waiting for a decision \(phase ([a-z-]+)\)/;
export const DEFAULT_GATE_WAIT_SECONDS = 60;
export const MAX_GATE_WAIT_SECONDS = 600;

/**
 * Waits until the runbook's history grows (Temporal's long poll: `waitNewEvent`, answered at a new event or after
 * the server's long-poll interval, ~20 s) and returns the page token to wait from next time.
 */
async function nextHistoryEvents(env: Env, workflowId: string, token: string | undefined): Promise<string | undefined> {
	const qs: IDataObject = { waitNewEvent: true, maximumPageSize: 1000 };
	if (token) qs.nextPageToken = token;
	const r = await env.call('GET', `${env.wfUrl(workflowId)}/history`, undefined, qs);
	if (r.status >= 400) httpFailure(env, r);
	return typeof r.body.nextPageToken === 'string' && r.body.nextPageToken ? r.body.nextPageToken : undefined;
}

function decisionOutput(workflowId: string, value: unknown): IDataObject {
	const rec = (value ?? {}) as IDataObject;
	return { workflowId, accepted: rec.accepted === true, decision: rec.approved ? 'approved' : 'rejected', ...rec };
}

function siteAndDp(env: Env, dpRequired: boolean): { site: string; dp: string } {
	const { ctx, i } = env;
	const site = String(ctx.getNodeParameter('siteId', i, '') ?? '').trim();
	if (!site) env.fail(F.site, 'is required');
	const sp = idProblem(site);
	if (sp) env.fail(F.site, sp);
	const dp = String(ctx.getNodeParameter('domainPortId', i, '') ?? '').trim();
	if (dpRequired && !dp) env.fail(F.domainPort, 'is required');
	const dpp = dp ? idProblem(dp) : undefined;
	if (dpp) env.fail(F.domainPort, dpp);
	return { site, dp };
}

function checked<T>(env: Env, check: () => T): T {
	try {
		return check();
	} catch (e) {
		if (e instanceof BlockInputError) env.fail(RUNBOOK.refusalFields[e.field] ?? e.field, e.rule);
		throw new NodeOperationError(env.ctx.getNode(), e as Error, { itemIndex: env.i });
	}
}

function seconds(env: Env): number {
	const v = env.ctx.getNodeParameter('durationSeconds', env.i, 0) as unknown;
	return typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : (v as number);
}

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
	const taskQueue = env.text(F.taskQueue, ctx.getNodeParameter('taskQueue', i, '')).trim();
	if (!taskQueue || taskQueue.length > 256 || /\p{Cc}/u.test(taskQueue)) env.fail(F.taskQueue, 'is required (at most 256 characters without control characters)');
	await requirePollers(env, F.taskQueue, taskQueue);
	const workflowId = blocksIdFor(site, dp);
	let last: Http | undefined;
	for (let attempt = 1; attempt <= 2; attempt++) {
		const uid = updateId(env, 'block');
		const body = updateWithStartRequest(
			env.ns,
			{ workflowId, workflowType: 'blocks', taskQueue, input: { site_id: site, domain_port_id: dp }, requestId: `${uid}-start` },
			{ name: 'addBlock', arg: req, updateId: uid },
		);
		last = await env.call('POST', `${env.workflowsUrl}/execute-multi-operation`, body as unknown as IDataObject);
		const responses = (last.body.responses ?? []) as IDataObject[];
		const out = last.status < 400 ? outcomeOf(responses[1]?.updateWorkflow) : undefined;
		if (out && !out.ok) refused(env, RUNBOOK.refused.block, out.message, RUNBOOK.refused.nothingWritten);
		if (out?.ok) return { workflowId, ...((out.value ?? {}) as IDataObject) };
		// the workflow completed (or was closing) between the start and the Update: once more starts a new run
	}
	return httpFailure(env, last as Http);
}

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
	const name = kind === 'extend' ? 'extendBlock' : 'removeBlock';
	const r = await env.call('POST', `${env.wfUrl(workflowId)}/update/${name}`, updateRequest(workflowId, name, req, updateId(env, name)));
	if (r.status >= 400 && isGone(r)) refused(env, RUNBOOK.refused.block, `entry: no active block for ${req.entry} on ${dp} of site ${site}`, RUNBOOK.refused.nothingWritten);
	if (r.status >= 400) httpFailure(env, r);
	const out = outcomeOf(r.body);
	if (!out) httpFailure(env, r);
	if (!out.ok) refused(env, RUNBOOK.refused.block, out.message, RUNBOOK.refused.nothingWritten);
	return { workflowId, ...((out.value ?? {}) as IDataObject) };
}

const STATUS_PREFIX = /^WORKFLOW_EXECUTION_STATUS_/;

/** The blocks of one domain-port (query `blocks`), or of every domain-port of the site (visibility list). */
export async function blockList(env: Env): Promise<IDataObject[]> {
	const { site, dp } = siteAndDp(env, false);
	const ids: string[] = [];
	if (dp) ids.push(blocksIdFor(site, dp));
	else {
		let token: string | undefined;
		for (let page = 0; page < 20; page++) {
			const qs: IDataObject = { query: `WorkflowType = 'blocks' AND WorkflowId STARTS_WITH '${blocksIdFor(site, '')}'`, pageSize: 200 };
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
		const status = String((d.body.workflowExecutionInfo as IDataObject | undefined)?.status ?? '').replace(STATUS_PREFIX, '');
		let blocks: unknown = [];
		if (status === 'RUNNING') {
			const q = await env.call('POST', `${env.wfUrl(id)}/query/blocks`, { query: {} });
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
		for (const b of Array.isArray(blocks) ? (blocks as IDataObject[]) : []) if (b.site_id === site) out.push({ workflowId: id, ...b });
	}
	return out;
}
