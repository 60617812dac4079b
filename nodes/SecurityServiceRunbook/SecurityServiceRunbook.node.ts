import { abortInputProblem, extendInputProblem } from '../../api/signalRules';
import {
	NodeApiError,
	NodeConnectionTypes,
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type IHttpRequestOptions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type JsonObject,
} from 'n8n-workflow';
import { docsUrl } from '../docs';
import { idProblem, pathSegment, sizeIssues } from '../../api/limits';
import { renderReportHtml } from '../../api/report/html';
import { runbookReportModel, type RunbookResultLike } from '../../api/report/model';
import { RUNBOOK } from '../../api/catalog/labels';
import { blockAdd, blockChange, blockList, decide, decideAs, DEFAULT_GATE_WAIT_SECONDS, MAX_GATE_WAIT_SECONDS, type Env, type Http } from './decideBlocks';
import { applyApprovalFields, startApprovalProperties, startRunbook } from './start';
import { decodePayload, NO_SHORTHAND, parseJsonObject, payloads, TEMPORAL_BOUNDS } from './temporalHttp';
import { boundedExchange, type BoundedResponse } from '../SecurityService/transport/bounded';
import { temporalTlsOptions, tlsProblem } from './temporalTls';

/**
 * Security Service Runbook: start, decide (approve / reject through the runbook's `decide` Update), signal (abort /
 * extend cooldown; approve / reject for older runbooks), query, describe and cancel attack-response runbooks, and
 * expiring blocks (add, extend or shorten, remove now, list: decideBlocks.ts) on Temporal, through the server's HTTP API and n8n's request helpers (no runtime
 * dependencies); Attack Report renders a finished runbook's result as one self-contained HTML file (binary data, to
 * mail or post it). Payloads are sent in full form (temporalHttp.ts). The plan never carries credentials: the worker holds
 * them.
 */

/** Workflow ids this node builds or accepts: the safe id alphabet (api/limits.ts), up to 256 characters. */
const WORKFLOW_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,255}$/;
const WORKFLOW_ID_RULE = 'must be 1–256 characters from A–Z a–z 0–9 . _ ~ - starting with a letter or a digit';
/** A plan is a small document (api/limits.ts bounds its strings and lists; the worker checks the rest). */
const MAX_PLAN_CHARS = 256 * 1024;

function fail(ctx: IExecuteFunctions, field: string, rule: string, itemIndex: number): never {
	throw new NodeOperationError(ctx.getNode(), `${field}: ${rule}`, { itemIndex, description: 'Nothing was sent to Temporal.' });
}

/** Free text recorded in the audit trail (by, reason): at most 1024 characters. */
function boundedText(ctx: IExecuteFunctions, field: string, v: unknown, itemIndex: number): string {
	if (v !== undefined && v !== null && typeof v !== 'string' && typeof v !== 'number') fail(ctx, field, 'must be text', itemIndex);
	const s = String(v ?? '');
	if (s.length > 1024) fail(ctx, field, `must be at most 1024 characters (got ${s.length})`, itemIndex);
	return s;
}

/** Accepts a site id (→ attack-response-<site>) or a full workflow id. */
function workflowIdOf(ctx: IExecuteFunctions, v: unknown, itemIndex: number): string {
	if (typeof v !== 'string' && typeof v !== 'number') fail(ctx, 'Runbook', 'must be a site id or a workflow id (text)', itemIndex);
	const s = String(v).trim();
	if (!s) fail(ctx, 'Runbook', 'is required (a site id or a workflow id)', itemIndex);
	if (!WORKFLOW_ID_RE.test(s)) fail(ctx, 'Runbook', WORKFLOW_ID_RULE, itemIndex);
	return /^\d+$/.test(s) ? `attack-response-${s}` : s;
}

function parsePlan(ctx: IExecuteFunctions, raw: unknown, itemIndex: number): IDataObject {
	let plan: unknown = raw;
	if (typeof raw === 'string' && raw.length > MAX_PLAN_CHARS) fail(ctx, 'Plan', `must be at most ${MAX_PLAN_CHARS} characters of JSON`, itemIndex);
	if (typeof raw === 'string') {
		try {
			plan = JSON.parse(raw);
		} catch {
			fail(ctx, 'Plan', 'must be a JSON object', itemIndex);
		}
	}
	if (!plan || typeof plan !== 'object' || Array.isArray(plan)) fail(ctx, 'Plan', 'must be a JSON object', itemIndex);
	const p = plan as IDataObject;
	for (const k of ['secret', 'access_token', 'refresh_token', 'app_secret']) {
		if (k in p) fail(ctx, `Plan.${k}`, 'must not be in a plan (credentials live in the worker only)', itemIndex);
	}
	for (const k of ['site_id', 'customer_id']) {
		if (p[k] === undefined || p[k] === null || p[k] === '') fail(ctx, `Plan.${k}`, 'is required (a string)', itemIndex);
		const problem = idProblem(p[k]);
		if (problem) fail(ctx, `Plan.${k}`, problem, itemIndex);
	}
	for (const k of ['network_id', 'host_id', 'event_id']) {
		const problem = p[k] === undefined ? undefined : idProblem(p[k]);
		if (problem) fail(ctx, `Plan.${k}`, problem, itemIndex);
	}
	if (p.domain_ports !== undefined) {
		if (!Array.isArray(p.domain_ports)) fail(ctx, 'Plan.domain_ports', 'must be an array of domain-port ids', itemIndex);
		for (const [j, d] of (p.domain_ports as unknown[]).slice(0, 100).entries()) {
			const problem = idProblem(d);
			if (problem) fail(ctx, `Plan.domain_ports.${j}`, problem, itemIndex);
		}
	}
	// Sizes: long strings and lists are refused here; every other rule is checked by the worker before any call.
	const sized = sizeIssues(p, { maxString: 1024, maxList: 1000, maxDepth: 8 });
	if (sized.length) fail(ctx, `Plan.${sized[0].field}`, sized[0].rule + (sized.length > 1 ? ` (and ${sized.length - 1} more)` : ''), itemIndex);
	return p;
}

export class SecurityServiceRunbook implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Security Service Runbook',
		name: 'securityServiceRunbook',
		icon: { light: 'file:securityServiceRunbook.svg', dark: 'file:securityServiceRunbook.dark.svg' },
		group: ['transform'],
		version: 1,
		documentationUrl: docsUrl('runbook-plans'),
		subtitle: RUNBOOK.subtitle,
		description: 'Start, approve, signal, query and cancel durable attack-response runbooks, and add expiring blocks, on Temporal',
		defaults: { name: 'Security Service Runbook' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'temporalApi', required: true }],
		properties: [
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				default: 'describe',
				options: RUNBOOK.operations.map((o) => ({ ...o })),
			},
			{
				displayName: 'Plan (JSON)',
				name: 'plan',
				type: 'json',
				default:
					'{\n  "site_id": "",\n  "customer_id": "",\n  "domain_ports": [],\n  "blacklist": { "enabled": true, "topN": 10, "protectedRanges": [] },\n  "switches": [{ "name": "p_auth", "enable": 1 }],\n  "cooldownSeconds": 600\n}',
				required: true,
				displayOptions: { show: { operation: ['start'] } },
				description: RUNBOOK.planHelp,
			},
			{
				displayName: 'Task Queue',
				name: 'taskQueue',
				type: 'string',
				default: 'secsvc-runbooks',
				required: true,
				displayOptions: { show: { operation: ['start', 'blockAdd'] } },
				description: 'Task queue of the worker that runs the runbooks (and the expiring blocks)',
			},
			{
				displayName: 'Dry Run',
				name: 'dryRun',
				type: 'boolean',
				default: false,
				displayOptions: { show: { operation: ['start'] } },
				description: 'Whether to only compute the changes (returned as a diff) without applying any',
			},
			...startApprovalProperties,
			{
				displayName: 'Workflow ID',
				name: 'workflowId',
				type: 'string',
				default: '',
				displayOptions: { show: { operation: ['start'] } },
				description: 'Leave empty for attack-response-&lt;site_id&gt; (at most one runbook per site)',
			},
			{
				displayName: 'Runbook',
				name: 'runbook',
				type: 'string',
				default: '',
				required: true,
				placeholder: '20001 or attack-response-20001',
				displayOptions: { show: { operation: ['decide', 'signal', 'query', 'cancel', 'describe'] } },
				description: 'A site ID (means attack-response-&lt;site&gt;) or a full workflow ID',
			},
			{
				displayName: RUNBOOK.fields.decision,
				name: 'decision',
				type: 'options',
				// No preselected decision: approving or rejecting is always a deliberate choice.
				default: '',
				required: true,
				displayOptions: { show: { operation: ['decide'] } },
				options: RUNBOOK.decisions.map((o) => ({ ...o })),
				description: 'Approve or reject the planned changes (the runbook answers with the decision, or refuses it)',
			},
			{
				displayName: RUNBOOK.fields.by,
				name: 'by',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'e.g. oncall-alice',
				displayOptions: { show: { operation: ['decide'] } },
				description: RUNBOOK.help.decideBy,
			},
			{
				displayName: RUNBOOK.fields.reason,
				name: 'reason',
				type: 'string',
				default: '',
				displayOptions: { show: { operation: ['decide'] } },
				description: RUNBOOK.help.decideReason,
			},
			{
				displayName: 'Wait for the Gate (Seconds)',
				name: 'gateWaitSeconds',
				type: 'number',
				default: DEFAULT_GATE_WAIT_SECONDS,
				typeOptions: { minValue: 0, maxValue: MAX_GATE_WAIT_SECONDS },
				displayOptions: { show: { operation: ['decide'] } },
				description:
					'How long to wait for a runbook that is still taking its snapshot or planning to reach its approval gate (Decide right after Start). 0: answer at once.',
			},
			{
				displayName: RUNBOOK.fields.site,
				name: 'siteId',
				type: 'string',
				default: '',
				required: true,
				displayOptions: { show: { operation: ['blockAdd', 'blockExtend', 'blockRemove', 'blockList'] } },
				description: RUNBOOK.help.site,
			},
			{
				displayName: RUNBOOK.fields.domainPort,
				name: 'domainPortId',
				type: 'string',
				default: '',
				required: true,
				displayOptions: { show: { operation: ['blockAdd', 'blockExtend', 'blockRemove'] } },
				description: RUNBOOK.help.domainPortAdd,
			},
			{
				displayName: RUNBOOK.fields.domainPort,
				name: 'domainPortId',
				type: 'string',
				default: '',
				displayOptions: { show: { operation: ['blockList'] } },
				description: RUNBOOK.help.domainPortList,
			},
			{
				displayName: RUNBOOK.fields.entry,
				name: 'entry',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'e.g. 203.0.113.0/28',
				displayOptions: { show: { operation: ['blockAdd', 'blockExtend', 'blockRemove'] } },
				description: RUNBOOK.help.entry,
			},
			{
				displayName: RUNBOOK.fields.seconds,
				name: 'durationSeconds',
				type: 'number',
				default: 3600,
				required: true,
				typeOptions: { minValue: 1, maxValue: 7776000 },
				displayOptions: { show: { operation: ['blockAdd'] } },
				description: RUNBOOK.help.secondsAdd,
			},
			{
				displayName: RUNBOOK.fields.seconds,
				name: 'durationSeconds',
				type: 'number',
				default: 3600,
				required: true,
				typeOptions: { minValue: 1, maxValue: 7776000 },
				displayOptions: { show: { operation: ['blockExtend'] } },
				description: RUNBOOK.help.secondsExtend,
			},
			{
				displayName: RUNBOOK.fields.reason,
				name: 'reason',
				type: 'string',
				default: '',
				required: true,
				displayOptions: { show: { operation: ['blockAdd'] } },
				description: RUNBOOK.help.blockReason,
			},
			{
				displayName: RUNBOOK.fields.by,
				name: 'by',
				type: 'string',
				default: '',
				required: true,
				displayOptions: { show: { operation: ['blockAdd', 'blockExtend', 'blockRemove'] } },
				description: RUNBOOK.help.blockBy,
			},
			{
				displayName: 'Signal',
				name: 'signal',
				type: 'options',
				// No preselected signal: approving, rejecting or aborting a runbook is always a deliberate choice.
				default: '',
				required: true,
				displayOptions: { show: { operation: ['signal'] } },
				options: RUNBOOK.signals.map((o) => ({ ...o })),
				description: 'Choose what to tell the runbook',
			},
			{
				displayName: 'Seconds',
				name: 'seconds',
				type: 'number',
				default: 300,
				typeOptions: { minValue: 1 },
				displayOptions: { show: { operation: ['signal'], signal: ['extend'] } },
				description: 'How many seconds to add to the cooldown',
			},
			{
				displayName: 'Sent By',
				name: 'by',
				type: 'string',
				default: 'n8n',
				hint: 'Your name or team: recorded in the runbook\'s audit trail',
				displayOptions: { show: { operation: ['signal', 'cancel'] } },
				description: 'Who sends it (recorded in the audit trail)',
			},
			{
				displayName: 'Reason',
				name: 'reason',
				type: 'string',
				default: '',
				placeholder: 'Attack confirmed by the SOC on call',
				displayOptions: { show: { operation: ['signal', 'cancel'] } },
				description: 'Why (recorded in the audit trail)',
			},
			{
				displayName: 'Query',
				name: 'query',
				type: 'options',
				default: 'state',
				displayOptions: { show: { operation: ['query'] } },
				options: [
					{ name: 'Attack Report (HTML File)', value: 'report', description: 'The finished runbook\'s report as one self-contained HTML file in binary data, to mail or post it' },
					{ name: 'Audit Trail', value: 'audit' },
					{ name: 'Changes', value: 'changes' },
					{ name: 'Plan', value: 'plan' },
					{ name: 'Result', value: 'result' },
					{ name: 'State', value: 'state' },
				],
			},
			{
				displayName: 'Put Output File in Field',
				name: 'binaryPropertyName',
				type: 'string',
				default: 'data',
				required: true,
				displayOptions: { show: { operation: ['query'], query: ['report'] } },
				hint: 'The name of the output binary field to put the HTML file in',
			},
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const out: INodeExecutionData[] = [];
		const cred = await this.getCredentials('temporalApi');
		// TLS fields checked before anything is sent; a TLS failure later is named by its credential field too.
		const tls = temporalTlsOptions(cred);
		const tlsFailure = (i: number, error: unknown, body?: unknown) => {
			const p = tlsProblem(error, body, String(cred.address ?? ''));
			if (p) throw new NodeOperationError(this.getNode(), `Temporal API credential › ${p}`, { itemIndex: i });
		};
		const base = String(cred.address ?? '').replace(/\/+$/, '');
		const ns = String(cred.namespace ?? 'default');
		const wfUrl = (id: string) => `${base}/api/v1/namespaces/${pathSegment(ns)}/workflows/${pathSegment(id)}`;

		// Every exchange with Temporal is bounded in size and total time (TEMPORAL_BOUNDS, bounded.ts).
		const exchange = (opts: IHttpRequestOptions) =>
			boundedExchange((o) => this.helpers.httpRequestWithAuthentication.call(this, 'temporalApi', o), { ...opts, ignoreHttpStatusErrors: true }, TEMPORAL_BOUNDS);

		const send = async (i: number, method: 'GET' | 'POST', url: string, body?: IDataObject): Promise<IDataObject> => {
			const opts: IHttpRequestOptions = { method, url, headers: { 'content-type': 'application/json', ...NO_SHORTHAND } };
			if (body !== undefined) opts.body = JSON.stringify(body);
			let r: BoundedResponse;
			try {
				r = await exchange(opts);
			} catch (error) {
				tlsFailure(i, error, (error as { response?: { data?: unknown } }).response?.data);
				throw new NodeApiError(this.getNode(), error as JsonObject, { itemIndex: i });
			}
			const parsed = parseJsonObject(r.body) as IDataObject;
			if (r.statusCode >= 400) throw new NodeApiError(this.getNode(), { ...parsed, httpCode: String(r.statusCode) } as JsonObject, { itemIndex: i, httpCode: String(r.statusCode) });
			return parsed;
		};

		const workflowsUrl = `${base}/api/v1/namespaces/${pathSegment(ns)}/workflows`;
		const call = async (i: number, method: 'GET' | 'POST', url: string, body?: IDataObject, qs?: IDataObject): Promise<Http> => {
			const opts: IHttpRequestOptions = { method, url, headers: { 'content-type': 'application/json', ...NO_SHORTHAND } };
			if (body !== undefined) opts.body = JSON.stringify(body);
			if (qs !== undefined) opts.qs = qs;
			let r: BoundedResponse;
			try {
				r = await exchange(opts);
			} catch (error) {
				tlsFailure(i, error);
				throw new NodeApiError(this.getNode(), error as JsonObject, { itemIndex: i });
			}
			tlsFailure(i, undefined, r.body); // a TLS port's answer to plain HTTP
			try {
				return { status: r.statusCode, body: parseJsonObject(r.body) as IDataObject };
			} catch (error) {
				throw new NodeApiError(this.getNode(), error as JsonObject, { itemIndex: i });
			}
		};

		for (let i = 0; i < items.length; i++) {
			try {
				if (tls.problem) throw new NodeOperationError(this.getNode(), `Temporal API credential › ${tls.problem}`, { itemIndex: i, description: 'Nothing was sent to Temporal.' });
				const operation = this.getNodeParameter('operation', i) as string;
				let json: IDataObject;
				const env: Env = {
					ctx: this,
					i,
					ns,
					workflowsUrl,
					wfUrl,
					call: (method, url, body, qs) => call(i, method, url, body, qs),
					fail: (field, rule) => fail(this, field, rule, i),
					text: (field, v) => boundedText(this, field, v, i),
				};
				if (operation === 'blockList') {
					for (const b of await blockList(env)) out.push({ json: b, pairedItem: { item: i } });
					continue;
				}
				if (operation === 'blockAdd') json = await blockAdd(env);
				else if (operation === 'blockExtend' || operation === 'blockRemove') json = await blockChange(env, operation === 'blockExtend' ? 'extend' : 'remove');
				else if (operation === 'start') {
					const plan = parsePlan(this, this.getNodeParameter('plan', i), i);
					const taskQueue = boundedText(this, 'Task Queue', this.getNodeParameter('taskQueue', i), i).trim();
					if (!taskQueue) fail(this, 'Task Queue', 'is required', i);
					if (taskQueue.length > 256 || /\p{Cc}/u.test(taskQueue)) fail(this, 'Task Queue', 'must be at most 256 characters without control characters', i);
					const dryRun = this.getNodeParameter('dryRun', i) as boolean;
					const given = boundedText(this, 'Workflow ID', this.getNodeParameter('workflowId', i, ''), i).trim();
					if (given && !WORKFLOW_ID_RE.test(given)) fail(this, 'Workflow ID', WORKFLOW_ID_RULE, i);
					const workflowId = given || (dryRun ? `attack-response-${plan.site_id}-dry-run-${Date.now()}` : `attack-response-${plan.site_id}`);
					applyApprovalFields(env, plan);
					json = await startRunbook(env, workflowId, { taskQueue, plan, dryRun, requestId: `${workflowId}-${this.getExecutionId()}-${i}` });
				} else {
					const workflowId = workflowIdOf(this, this.getNodeParameter('runbook', i), i);
					if (operation === 'decide') json = await decide(env, workflowId);
					else if (operation === 'signal' && (this.getNodeParameter('signal', i) === 'approve' || this.getNodeParameter('signal', i) === 'reject'))
						json = { signal: this.getNodeParameter('signal', i) as string, sent: true, ...(await decideAs(env, workflowId, this.getNodeParameter('signal', i) as 'approve' | 'reject', { by: 'Sent By', reason: 'Reason' })) };
					else if (operation === 'signal') {
						const signal = this.getNodeParameter('signal', i) as string;
						const by = boundedText(this, 'Sent By', this.getNodeParameter('by', i, 'n8n'), i);
						const reason = boundedText(this, 'Reason', this.getNodeParameter('reason', i, ''), i) || undefined;
						let name = signal;
						let arg: IDataObject;
						if (signal === 'extend') {
							const seconds = this.getNodeParameter('seconds', i) as number;
							name = 'extendCooldown';
							arg = { seconds, by };
						} else arg = { by, reason };
						// The runbook's rules (api/signalRules.ts): a signal it would refuse silently is refused here, naming the field.
						const problem = signal === 'extend' ? extendInputProblem(arg) : abortInputProblem(arg);
						if (problem) {
							const [field, ...rule] = problem.split(': ');
							fail(this, { seconds: 'Seconds', by: 'Sent By', reason: 'Reason' }[field] ?? field, rule.join(': '), i);
						}
						await send(i, 'POST', `${wfUrl(workflowId)}/signal/${name}`, { input: payloads([arg]), identity: 'n8n' });
						json = { workflowId, signal, sent: true, ...arg };
					} else if (operation === 'query' && this.getNodeParameter('query', i) === 'report') {
						const field = String(this.getNodeParameter('binaryPropertyName', i, 'data')).trim();
						if (!field) fail(this, 'Put Output File in Field', 'is required', i);
						const r = await send(i, 'POST', `${wfUrl(workflowId)}/query/result`, { query: {} });
						if (r.queryRejected) throw new NodeOperationError(this.getNode(), `query result rejected: ${JSON.stringify(r.queryRejected)}`, { itemIndex: i });
						const qr = r.queryResult as { payloads?: unknown[] } | unknown[] | undefined;
						const result = (Array.isArray(qr) ? qr[0] : decodePayload(qr?.payloads?.[0])) as RunbookResultLike | null;
						if (!result || !Array.isArray(result.changes))
							throw new NodeOperationError(this.getNode(), `${workflowId}: no result yet`, { itemIndex: i, description: 'The report is available once the runbook has finished.' });
						const html = renderReportHtml(runbookReportModel(result, new Date().toISOString()));
						const binary = await this.helpers.prepareBinaryData(Buffer.from(html, 'utf8'), `attack-report-${workflowId}.html`, 'text/html');
						out.push({ json: { workflowId, outcome: result.outcome, siteId: result.site_id, eventId: result.eventId ?? null, fileName: binary.fileName ?? null }, binary: { [field]: binary }, pairedItem: { item: i } });
						continue;
					} else if (operation === 'query') {
						const q = this.getNodeParameter('query', i) as string;
						const r = await send(i, 'POST', `${wfUrl(workflowId)}/query/${q}`, { query: {} });
						if (r.queryRejected) throw new NodeOperationError(this.getNode(), `query ${q} rejected: ${JSON.stringify(r.queryRejected)}`, { itemIndex: i });
						const qr = r.queryResult as { payloads?: unknown[] } | unknown[] | undefined;
						// full form ({payloads: [...]}) or, when a proxy ignores the header, shorthand ([value])
						const v = Array.isArray(qr) ? qr[0] : decodePayload(qr?.payloads?.[0]);
						json = { workflowId, query: q, result: (v ?? null) as IDataObject };
					} else if (operation === 'cancel') {
						const reason = boundedText(this, 'Reason', this.getNodeParameter('reason', i, ''), i) || 'cancelled from n8n';
						await send(i, 'POST', `${wfUrl(workflowId)}/cancel`, { identity: boundedText(this, 'Sent By', this.getNodeParameter('by', i, 'n8n'), i), reason });
						json = { workflowId, cancelRequested: true };
					} else if (operation === 'describe') {
						const r = await send(i, 'GET', wfUrl(workflowId));
						const info = (r.workflowExecutionInfo ?? {}) as IDataObject;
						const exec = (info.execution ?? {}) as IDataObject;
						json = {
							workflowId,
							runId: exec.runId,
							status: String(info.status ?? '').replace(/^WORKFLOW_EXECUTION_STATUS_/, ''),
							type: (info.type as IDataObject | undefined)?.name,
							startTime: info.startTime,
							closeTime: info.closeTime,
							taskQueue: info.taskQueue,
						};
					} else throw new NodeOperationError(this.getNode(), `Operation: '${operation}' is not supported`, { itemIndex: i });
				}
				out.push({ json, pairedItem: { item: i } });
			} catch (error) {
				const nodeError =
					error instanceof NodeOperationError || error instanceof NodeApiError ? error : new NodeOperationError(this.getNode(), error as Error, { itemIndex: i });
				if (this.continueOnFail()) {
					out.push({ json: { error: nodeError.message }, pairedItem: { item: i } });
					continue;
				}
				throw nodeError;
			}
		}
		return [out];
	}
}
