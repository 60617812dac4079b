import type { IDataObject, INodeProperties } from 'n8n-workflow';
import {
	dryRunIdFor,
	WORKFLOW_ID_RE,
	WORKFLOW_ID_RULE,
	WORKFLOW_TYPE,
	workflowIdFor,
} from '../../../../api/runbook/contract';
import { withinHoldDown } from '../../../../api/runbook/holdDownRules';
import { checkPlan } from '../../../../api/runbook/plan';
import { idProblem } from '../../../../api/limits';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { findLastRunbook, TemporalReadError } from '../../transport/lastRun';
import { payloads } from '../../transport/http';
import { parsePayloadKey, sealedPayload, type PayloadKey } from '../../transport/seal';
import { MAX_ID_TOKEN_CHARS } from '../../../../api/decideRules';
import { httpFailure } from '../common/checks';
import type { Env, OperationFn } from '../common/types';
import { requirePollers } from '../common/taskQueuePollers';

/**
 * Start: the approval gate from the node's own fields (merged into the plan's `approval`), and one output item per
 * input item — started, or already running (Temporal refuses a second run with the same workflow id) — instead of
 * failing the node on the second item for the same site.
 */

export const execute: OperationFn = async (env) => {
	const { ctx, i } = env;
	const from = ctx.getNodeParameter('planSource', i, 'json') === 'lastRun' ? await lastPlan(env) : undefined;
	const plan = parsePlan(env, from ? from.plan : ctx.getNodeParameter('plan', i));
	// Re-armed with Require Approval on: the node's gate replaces the last plan's.
	if (from && ctx.getNodeParameter('approvalRequired', i, false)) delete plan.approval;
	const taskQueue = env.text('Task Queue', ctx.getNodeParameter('taskQueue', i)).trim();
	if (!taskQueue) env.fail('Task Queue', 'is required');
	if (taskQueue.length > 256 || /\p{Cc}/u.test(taskQueue))
		env.fail('Task Queue', 'must be at most 256 characters without control characters');
	const dryRun = ctx.getNodeParameter('dryRun', i) as boolean;
	const given = env.text('Workflow ID', ctx.getNodeParameter('workflowId', i, '')).trim();
	if (given && !WORKFLOW_ID_RE.test(given)) env.fail('Workflow ID', WORKFLOW_ID_RULE);
	const workflowId =
		given || (dryRun ? dryRunIdFor(String(plan.site_id), Date.now()) : workflowIdFor(String(plan.site_id)));
	applyApprovalFields(env, plan);
	// The starter's proof (separation of duties: they cannot approve this runbook), sealed like a decision's.
	const idToken = String(ctx.getNodeParameter('idToken', i, '') ?? '').trim();
	let starter: { idToken: string; seal: PayloadKey } | undefined;
	if (idToken) {
		if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(idToken) || idToken.length > MAX_ID_TOKEN_CHARS)
			env.fail('ID Token', `must be an ID token (a signed JWT of at most ${MAX_ID_TOKEN_CHARS} characters)`);
		if (!env.payloadKey)
			env.fail(
				'ID Token',
				"needs the Temporal API credential's Payload Key (the token must not be in the runbook's history in plain text)",
			);
		const k = parsePayloadKey(env.payloadKey);
		starter = { idToken, seal: typeof k === 'string' ? env.fail('Temporal API credential › Payload Key', k) : k };
	}
	const started = await startRunbook(env, workflowId, {
		taskQueue,
		plan,
		dryRun,
		requestId: `${workflowId}-${ctx.getExecutionId()}-${i}`,
		...(starter ? { starter } : {}),
	});
	return [{ json: from ? { ...started, rearm: from.summary } : started }];
};

/**
 * Re-Arm From the Last Plan: the plan the site's last finished runbook started with (transport/lastRun.ts), and what
 * the new runbook will find (the runbook itself decides at its start, by the same plan's hold-down).
 */
async function lastPlan(env: Env): Promise<{ plan: IDataObject; summary: IDataObject }> {
	const site = env.text('Site ID', env.ctx.getNodeParameter('rearmSite', env.i, '')).trim();
	if (!site) env.fail('Site ID', 'is required (the site whose last runbook gives the plan)');
	const problem = idProblem(site);
	if (problem) env.fail('Site ID', problem);
	const last = await findLastRunbook(env, site).catch((e: unknown) =>
		e instanceof TemporalReadError ? env.fail('Site ID', e.message) : Promise.reject(e),
	);
	if (!last)
		env.fail(
			'Site ID',
			`site ${site} has no finished runbook to re-arm from (no completed ${workflowIdFor(site)} with a revert)`,
		);
	const entries = Object.values(last.entries).flat();
	return {
		plan: structuredClone(last.plan),
		summary: {
			fromWorkflowId: last.workflowId,
			fromRunId: last.runId,
			revertedAt: last.revertedAt,
			holdDownSeconds: last.holdDownSeconds,
			withinHoldDown: withinHoldDown(last.revertedAt, Date.now(), last.holdDownSeconds),
			lastEntries: entries,
		},
	};
}

/** A plan is a small document: longer JSON text is refused before it is parsed. */
const MAX_PLAN_CHARS = 256 * 1024;

/**
 * The plan as sent (the parameter's JSON text parsed, not the defaults the worker fills in), checked by the one plan
 * check (api/runbook/plan.ts) the CLI and the worker run; its first issue named as the node shows the field. The field
 * name says which id an id is: its rule leaves the noun out (`Plan.site_id: must be 1–128 characters …`).
 */
function parsePlan(env: Env, raw: unknown): IDataObject {
	let plan: unknown = raw;
	if (typeof raw === 'string') {
		if (raw.length > MAX_PLAN_CHARS) env.fail('Plan', `must be at most ${MAX_PLAN_CHARS} characters of JSON`);
		try {
			plan = JSON.parse(raw);
		} catch {
			env.fail('Plan', 'must be a JSON object');
		}
	}
	const checked = checkPlan(plan);
	if ('issues' in checked) {
		const [first, ...more] = checked.issues;
		const rule = first.rule.replace(/^must be an? [\w -]+ id: /, 'must be ');
		env.fail(
			first.field === '(plan)' ? 'Plan' : `Plan.${first.field}`,
			rule + (more.length ? ` (and ${more.length} more)` : ''),
		);
	}
	return plan as IDataObject;
}

const onStart = { show: { operation: ['start'] } };

/** Where Start's plan comes from: the JSON field, or the site's last finished runbook (issue 39 item 5). */
export const startPlanProperties: INodeProperties[] = [
	{
		displayName: 'Plan Source',
		name: 'planSource',
		type: 'options',
		noDataExpression: true,
		default: 'json',
		displayOptions: onStart,
		options: [
			{ name: 'Plan (JSON)', value: 'json', description: 'The plan given below' },
			{
				name: 'Re-Arm From the Last Plan',
				value: 'lastRun',
				description:
					"The plan of the site's last finished runbook. Within its hold-down the new runbook also pre-blocks the sources that runbook blocked.",
			},
		],
		description: 'The plan to start: the one given here, or the last one the site ran',
	},
	{
		displayName: 'Site ID',
		name: 'rearmSite',
		type: 'string',
		default: '',
		required: true,
		placeholder: 'e.g. 20001',
		displayOptions: { show: { operation: ['start'], planSource: ['lastRun'] } },
		description: "The site whose last finished runbook gives the plan (e.g. the trigger's site_id)",
	},
	{
		displayName: 'Plan (JSON)',
		name: 'plan',
		type: 'json',
		default:
			'{\n  "site_id": "",\n  "customer_id": "",\n  "domain_ports": [],\n  "blacklist": { "enabled": true, "topN": 10, "protectedRanges": [] },\n  "switches": [{ "name": "p_auth", "enable": 1 }],\n  "cooldownSeconds": 600\n}',
		required: true,
		displayOptions: { show: { operation: ['start'], planSource: ['json'] } },
		description: RUNBOOK.planHelp,
	},
];
const withGate = { show: { operation: ['start'], approvalRequired: [true] } };

export const startApprovalProperties: INodeProperties[] = [
	{
		displayName: 'Require Approval',
		name: 'approvalRequired',
		type: 'boolean',
		default: false,
		displayOptions: onStart,
		description:
			'Whether the runbook waits for a person to approve its planned changes before applying any (Decide › Approve / Reject). Off: the plan\'s own "approval" applies (none when it has none).',
	},
	{
		displayName: 'Approvers',
		name: 'approvers',
		type: 'string',
		default: '',
		placeholder: 'e.g. oncall-alice, oncall-bob',
		displayOptions: withGate,
		description:
			'Identities allowed to decide (the By of Decide), separated by commas. Empty: anyone who can reach the runbook.',
	},
	{
		displayName: 'Approval Timeout (Seconds)',
		name: 'approvalTimeoutSeconds',
		type: 'number',
		default: 900,
		typeOptions: { minValue: 1, maxValue: 86400 },
		displayOptions: withGate,
		description: 'How long the runbook waits for a decision (1 s to 1 day)',
	},
	{
		displayName: 'On Timeout',
		name: 'approvalOnTimeout',
		type: 'options',
		default: 'reject',
		displayOptions: withGate,
		options: [
			{ name: 'Reject (Change Nothing)', value: 'reject' },
			{ name: 'Approve (Apply the Plan)', value: 'approve' },
		],
		description: 'What happens when nobody decides in time',
	},
];

/** The plan's approval from the node's fields; the plan's own when Require Approval is off. Checks both. */
export function applyApprovalFields(env: Env, plan: IDataObject): void {
	const { ctx, i } = env;
	const own = plan.approval as IDataObject | undefined;
	if (own !== undefined && (typeof own !== 'object' || own === null || Array.isArray(own)))
		env.fail('Plan.approval', 'must be an object');
	if (!ctx.getNodeParameter('approvalRequired', i, false)) {
		// `approvers` alone would silently set no gate (required defaults to false): say so instead.
		if (own && own.required !== true && Array.isArray(own.approvers) && own.approvers.length)
			env.fail(
				'Plan.approval.required',
				'must be true when approvers are listed (approvers alone set no gate), or switch on Require Approval',
			);
		return;
	}
	if (own !== undefined) env.fail('Plan.approval', 'is set both in the plan and by Require Approval; keep one of them');
	const approvers = env
		.text('Approvers', ctx.getNodeParameter('approvers', i, ''))
		.split(',')
		.map((s) => s.trim())
		.filter(Boolean);
	if (approvers.length > 100) env.fail('Approvers', 'must list at most 100 identities');
	const bad = approvers.find((a) => a.length > 200);
	if (bad) env.fail('Approvers', `each identity must be at most 200 characters (${bad.slice(0, 20)}…)`);
	const timeoutSeconds = Number(ctx.getNodeParameter('approvalTimeoutSeconds', i, 900));
	if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 86400)
		env.fail('Approval Timeout (Seconds)', 'must be a whole number of seconds from 1 to 86400 (1 day)');
	const onTimeout = String(ctx.getNodeParameter('approvalOnTimeout', i, 'reject'));
	if (onTimeout !== 'reject' && onTimeout !== 'approve') env.fail('On Timeout', 'must be Reject or Approve');
	plan.approval = { required: true, approvers, timeoutSeconds, onTimeout };
}

/** StartWorkflowExecution; a workflow id already running is reported (status "already running"), not an error. */
export async function startRunbook(
	env: Env,
	workflowId: string,
	body: {
		taskQueue: string;
		plan: IDataObject;
		dryRun: boolean;
		requestId: string;
		starter?: { idToken: string; seal: PayloadKey };
	},
): Promise<IDataObject> {
	await requirePollers(env, 'Task Queue', body.taskQueue);
	const input = payloads([{ plan: body.plan, dryRun: body.dryRun }]);
	// The starter's ID token: the workflow's second argument, encrypted (the worker's payload codec format).
	if (body.starter)
		(input.payloads as unknown[]).push(sealedPayload({ $sealed: 1, idToken: body.starter.idToken }, body.starter.seal));
	const r = await env.call('POST', env.wfUrl(workflowId), {
		workflowType: { name: WORKFLOW_TYPE.attackResponse },
		taskQueue: { name: body.taskQueue },
		input,
		requestId: body.requestId,
	});
	const base = {
		workflowId,
		siteId: body.plan.site_id,
		dryRun: body.dryRun,
		approvalRequired: (body.plan.approval as IDataObject | undefined)?.required === true,
	};
	if (r.status < 400) return { ...base, status: 'started', started: true, runId: r.body.runId };
	const details = (r.body.details as IDataObject[] | undefined)?.find((d) =>
		String(d['@type'] ?? '').includes('WorkflowExecutionAlreadyStarted'),
	);
	if (r.status === 409 || details || /already (started|running)/i.test(String(r.body.message ?? ''))) {
		return {
			...base,
			status: 'already running',
			started: false,
			runId: details?.runId,
			message: `${workflowId} is already running: this item started nothing`,
		};
	}
	return httpFailure(env, r);
}
