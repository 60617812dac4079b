import type { IDataObject } from 'n8n-workflow';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { decideInputProblem, type DecideRequest } from '../../../../api/decideRules';
import { BEFORE_GATE, NOT_WAITING_RE, RUNBOOK_UPDATE, type Phase } from '../../../../api/runbook/contract';
import { outcomeOf, refusalText, updateRequest } from '../../transport/http';
import { parsePayloadKey, type PayloadKey } from '../../transport/seal';
import { httpFailure, isGone, refused, runbookIdOf, updateId } from '../common/checks';
import type { Env, OperationFn } from '../common/types';

/**
 * Decide: approve or reject through the runbook's `decide` Update, whose validator holds every rule of a decision
 * (api/decideRules.ts is checked here first, before anything is sent); a refusal comes back as an error naming the field.
 */

const F = RUNBOOK.fields;

export const execute: OperationFn = async (env) => [{ json: await decide(env, runbookIdOf(env)) }];

/** Decide: approve or reject through the `decide` Update; returns the decision (accepted, by, at, via). */
export async function decide(env: Env, workflowId: string): Promise<IDataObject> {
	const { ctx, i } = env;
	const decision = ctx.getNodeParameter('decision', i, '') as string;
	if (decision !== 'approve' && decision !== 'reject') env.fail(F.decision, 'is required: Approve or Reject');
	return decideAs(env, workflowId, decision, { by: F.by, reason: F.reason, idToken: ID_TOKEN });
}

const ID_TOKEN = 'ID Token';
const PAYLOAD_KEY = 'Temporal API credential › Payload Key';

/**
 * The one way this node approves or rejects: the `decide` Update, whose validator holds every rule of a decision.
 * Decide uses it, and so does Signal › Approve / Reject (kept for saved workflows; its By and Reason are the
 * signal's "By" and "Reason" fields): a refusal is a node error naming the field, and nothing changes.
 */
export async function decideAs(
	env: Env,
	workflowId: string,
	decision: 'approve' | 'reject',
	fields: { by: string; reason: string; idToken?: string },
): Promise<IDataObject> {
	const { ctx, i } = env;
	// The person's proof (docs/approvals.md): an ID token obtained with the runbook's gate nonce, sent sealed.
	const idToken = fields.idToken ? String(ctx.getNodeParameter('idToken', i, '') ?? '').trim() : '';
	const by = env.text(fields.by, ctx.getNodeParameter('by', i, '')).trim();
	if (!by && !idToken)
		env.fail(fields.by, `is required (the identity of the person deciding)${fields.idToken ? ', or an ID Token' : ''}`);
	let seal: PayloadKey | undefined;
	if (idToken) {
		if (!env.payloadKey)
			env.fail(
				ID_TOKEN,
				"needs the Temporal API credential's Payload Key (the token must not be in the runbook's history in plain text)",
			);
		const k = parsePayloadKey(env.payloadKey);
		if (typeof k === 'string') env.fail(PAYLOAD_KEY, k);
		seal = k;
	}
	const reason = env.text(fields.reason, ctx.getNodeParameter('reason', i, '')).trim();
	const req: DecideRequest = {
		...(seal ? { $sealed: 1 as const } : {}),
		approved: decision === 'approve',
		...(by ? { by } : {}),
		via: 'n8n',
		...(reason ? { reason } : {}),
		...(idToken ? { idToken } : {}),
	};
	const problem = decideInputProblem(req, idToken ? 'oidc' : 'unverified');
	if (problem) {
		const [field, ...rule] = refusalText(problem).split(': ');
		env.fail(field === 'proof' ? ID_TOKEN : field, rule.join(': '));
	}
	// Decide placed right after Start reaches the runbook before its gate (it still snapshots and plans): wait for
	// it, bounded by Wait for the Gate, by long-polling the runbook's history (no timers in a node) and asking again.
	const waitSeconds = Number(ctx.getNodeParameter('gateWaitSeconds', i, DEFAULT_GATE_WAIT_SECONDS));
	if (!Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > MAX_GATE_WAIT_SECONDS)
		env.fail('Wait for the Gate (Seconds)', `must be a whole number of seconds from 0 to ${MAX_GATE_WAIT_SECONDS}`);
	let deadline = Date.now() + waitSeconds * 1000;
	let token: string | undefined;
	for (;;) {
		const r = await env.call(
			'POST',
			`${env.wfUrl(workflowId)}/update/${RUNBOOK_UPDATE.decide}`,
			updateRequest(workflowId, RUNBOOK_UPDATE.decide, req, updateId(env, 'decide'), seal),
		);
		if (r.status >= 400 && isGone(r))
			refused(
				env,
				RUNBOOK.refused.decide,
				`approval: ${workflowId} is not running (no such runbook, or it has finished)`,
				RUNBOOK.refused.nothingChanged,
			);
		if (r.status >= 400) httpFailure(env, r);
		const out = outcomeOf(r.body);
		if (!out) httpFailure(env, r);
		if (out.ok) return decisionOutput(workflowId, out.value);
		const phase = NOT_WAITING_RE.exec(out.message)?.[1] as Phase | undefined;
		if (phase && BEFORE_GATE.includes(phase) && Date.now() < deadline) {
			token = await nextHistoryEvents(env, workflowId, token);
			if (!token) deadline = 0; // no long poll possible (the server gave no page token): ask once more, then answer
			continue;
		}
		const why = !phase
			? RUNBOOK.refused.nothingChanged
			: BEFORE_GATE.includes(phase)
				? `${RUNBOOK.refused.nothingChanged} The runbook did not reach its approval gate within ${waitSeconds} s (Wait for the Gate).`
				: `${RUNBOOK.refused.nothingChanged} A runbook waits for a decision only when its plan requires approval (Start › Require Approval, or "approval": {"required": true} in the plan), and only until it is decided or times out.`;
		refused(env, RUNBOOK.refused.decide, out.message, why);
	}
}

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
