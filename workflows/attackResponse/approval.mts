import {
	ActivityFailure,
	ApplicationFailure,
	condition,
	proxyLocalActivities,
	uuid4,
	workflowInfo,
} from '@temporalio/workflow';
import { notWaitingMessage, type RunbookState } from '../../api/runbook/contract.ts';
import type { PlanContext, Runbook } from './context.mts';
import {
	decideInputProblem,
	deciderProblem,
	identityText,
	type ApproverPolicy,
	type DecideRequest,
	type VerifiedIdentity,
} from '../../api/decideRules.ts';
import { IDENTITY_POLICY_ACTIVITY, IDENTITY_VERIFY_ACTIVITY, type PolicyInput, type VerifyInput } from './identity.mts';
import { sealed, type Sealed } from '../tenant/shared.mts';

/**
 * Approve / reject as a Temporal Update (`decide`). Who may decide is the operator's policy (the worker's approver
 * groups, per tenant), narrowed by the plan's `approval.approvers`, never the starter (separation of duties); with an
 * identity provider configured a decision carries the decider's ID token (sealed), verified by the worker in a local
 * activity and bound to this gate by its nonce (docs/approvals.md). The validator refuses — nothing changes — bad
 * input, a decision when none is awaited, a typed `by` outside the rules; the handler verifies the proof and applies
 * the rules again to the verified identity. The caller gets the decision back synchronously.
 */
export type { DecideRequest } from '../../api/decideRules.ts';

type IdentityActs = {
	[IDENTITY_POLICY_ACTIVITY]: (i: PolicyInput) => Promise<{ policy: ApproverPolicy; starter?: VerifiedIdentity }>;
	[IDENTITY_VERIFY_ACTIVITY]: (i: VerifyInput) => Promise<VerifiedIdentity>;
};
const identity = proxyLocalActivities<IdentityActs>({
	startToCloseTimeout: '15s',
	retry: { initialInterval: '500ms', maximumAttempts: 3, nonRetryableErrorTypes: ['ValidationError'] },
});

/** An activity's refusal as the plain `field: rule` error it carries (non-retryable for the run). */
function refusalOf(e: unknown): Error {
	const cause = e instanceof ActivityFailure ? e.cause : undefined;
	if (cause instanceof ApplicationFailure && cause.type === 'ValidationError')
		return ApplicationFailure.nonRetryable(cause.message, 'ValidationError');
	if (cause)
		return ApplicationFailure.nonRetryable(`proof: could not be verified (${cause.message})`, 'ValidationError');
	return e as Error;
}

/** At start: the operator's policy for this plan, the plan's approvers checked against it, the starter verified. Fails the run naming the rule. */
export async function approvalPolicy(
	rb: Runbook,
	ctx: PlanContext,
	startedBy: Sealed<{ idToken: string }> | undefined,
): Promise<void> {
	const { approval, customer_id } = ctx.plan;
	if (!approval.required && !startedBy) return;
	const parent = workflowInfo().parent?.workflowId;
	try {
		const r = await identity[IDENTITY_POLICY_ACTIVITY]({
			customerId: customer_id,
			approvers: approval.approvers,
			required: approval.required,
			...(startedBy ? { starter: startedBy } : {}),
			...(parent ? { parent } : {}),
		});
		rb.policy = r.policy;
		if (r.starter) rb.state.startedBy = r.starter;
		if (r.starter) rb.log('validating', `started by ${r.starter.name}`, identityText(r.starter));
	} catch (e) {
		throw refusalOf(e);
	}
}

const modeOf = (rb: Runbook) => rb.policy?.mode ?? 'unverified';

/**
 * Throws (field: rule) when the decision must be refused; `who` is the verified identity once the handler has it.
 * `decider: false` (the Update's validator) leaves out who decides: a refusal of the person is made by the handler,
 * which records it in the audit (a validator's refusal leaves no trace in history).
 */
export function checkDecision(rb: Runbook, req: DecideRequest, who?: VerifiedIdentity, decider = true): void {
	const problem = decideInputProblem(req, modeOf(rb)); // the input rules the n8n node checks too (api/decideRules.ts)
	if (problem) throw new Error(problem);
	const st: RunbookState = rb.state;
	if (st.approval)
		throw new Error(
			`approval: already decided (${st.approval.decision} by ${st.approval.by ?? 'nobody'} at ${st.approval.at}); nothing changed`,
		);
	if (rb.approval)
		throw new Error(
			`approval: already decided (${rb.approval.approved ? 'approved' : 'rejected'} by ${rb.approval.by ?? 'unknown'}); nothing changed`,
		);
	if (st.phase !== 'awaiting-approval') throw new Error(notWaitingMessage(st.phase));
	if (!decider) return;
	const person = who ?? (modeOf(rb) === 'unverified' ? typed(req) : undefined);
	if (!person) return; // oidc: the identity rules apply once the proof is verified (the handler)
	const policy = rb.policy ?? {
		mode: 'unverified',
		groups: [],
		identities: [],
		source: 'compatibility mode (no identity provider)',
	};
	const rule = deciderProblem(person, req.approved, policy, rb.approvers ?? [], st.startedBy);
	if (rule) throw new Error(`${rule}; nothing changed`);
}

const typed = (req: DecideRequest): VerifiedIdentity => ({ verified: 'unverified', name: String(req.by ?? '').trim() });

/** The decider's identity: the verified ID token (oidc mode), or the typed `by` marked unverified. Throws `proof: rule`. */
export async function deciderOf(rb: Runbook, req: DecideRequest): Promise<VerifiedIdentity> {
	if (modeOf(rb) === 'unverified' || !req.idToken) return typed(req);
	try {
		return await identity[IDENTITY_VERIFY_ACTIVITY](
			sealed({ idToken: req.idToken, nonce: rb.state.gate?.nonce ?? '' }),
		);
	} catch (e) {
		throw refusalOf(e);
	}
}

/** Step 3 — approval gate: waits for approve / reject / abort, or applies the plan's timeout decision. Returns false when rejected. */
export async function approvalGate(rb: Runbook, ctx: PlanContext): Promise<boolean> {
	const { plan } = ctx;
	const { state } = rb;
	if (!plan.approval.required || state.rearm?.gate === 'skip') {
		state.decision = 'not-required'; // a re-arm inside the hold-down may skip the gate (plan.holdDown.approval)
		return true;
	}
	rb.approvers = plan.approval.approvers;
	// The nonce a decider's ID token must carry: a proof for this gate is good for no other runbook and no later gate.
	state.gate = {
		nonce: uuid4(),
		openedAt: new Date(Date.now()).toISOString(),
		...(rb.policy?.issuer ? { issuer: rb.policy.issuer } : {}),
		policy: rb.policy?.mode ?? 'unverified',
	};
	rb.phase('awaiting-approval');
	const answered = await condition(
		() => rb.approval !== undefined || state.aborted,
		plan.approval.timeoutSeconds * 1000,
	);
	if (state.aborted) state.decision = 'rejected';
	else if (answered && rb.approval) state.decision = rb.approval.approved ? 'approved' : 'rejected';
	else state.decision = plan.approval.onTimeout === 'approve' ? 'timeout-approved' : 'timeout-rejected';
	const a = answered && !state.aborted ? rb.approval : undefined;
	state.approval = {
		decision: state.decision,
		by: a?.by,
		...(a?.identity ? { identity: a.identity } : {}),
		at: a?.at ?? new Date(Date.now()).toISOString(),
		via: a?.via ?? (state.aborted ? 'abort' : 'timeout'),
		...(a?.reason ? { reason: a.reason } : {}),
	};
	rb.log(
		'awaiting-approval',
		`decision: ${state.decision}`,
		answered ? 'operator answered' : `no answer within ${plan.approval.timeoutSeconds}s; default applies`,
	);
	if (state.decision === 'rejected' || state.decision === 'timeout-rejected') {
		for (const c of rb.changes) c.status = 'unchanged';
		return false;
	}
	return true;
}
