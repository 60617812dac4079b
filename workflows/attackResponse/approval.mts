import { condition } from '@temporalio/workflow';
import { notWaitingMessage, type ApprovalRecord, type RunbookState } from '../../api/runbook/contract.ts';
import type { PlanContext, Runbook } from './context.mts';
import { decideInputProblem, type DecideRequest } from '../../api/decideRules.ts';

/**
 * Approve / reject as a Temporal Update (`decide`): the validator refuses — and nothing changes — an approver not in
 * the plan's `approval.approvers` (empty = anyone), a rejection without a reason, a decision when none is awaited
 * (before the gate, after the decision, after the timeout). The caller gets the decision back synchronously.
 * The old `approve` signal still works for runbooks started by older builds (and records via 'signal').
 */
export type { DecideRequest } from '../../api/decideRules.ts';

/** Throws (field: rule) when the decision must be refused. */
export function checkDecision(rb: Runbook, req: DecideRequest): void {
	const problem = decideInputProblem(req); // the input rules the n8n node checks too (api/decideRules.ts)
	if (problem) throw new Error(problem);
	const st: RunbookState = rb.state;
	if (st.approval) throw new Error(`approval: already decided (${st.approval.decision} by ${st.approval.by ?? 'nobody'} at ${st.approval.at}); nothing changed`);
	if (rb.approval) throw new Error(`approval: already decided (${rb.approval.approved ? 'approved' : 'rejected'} by ${rb.approval.by ?? 'unknown'}); nothing changed`);
	if (st.phase !== 'awaiting-approval') throw new Error(notWaitingMessage(st.phase));
	const approvers = rb.approvers ?? [];
	if (approvers.length && !approvers.includes(req.by.trim())) throw new Error(`by: ${req.by} is not in approval.approvers; nothing changed`);
}

/** Step 3 — approval gate: waits for approve / reject / abort, or applies the plan's timeout decision. Returns false when rejected. */
export async function approvalGate(rb: Runbook, ctx: PlanContext): Promise<boolean> {
	const { plan } = ctx;
	const { state } = rb;
	if (!plan.approval.required) {
		state.decision = 'not-required';
		return true;
	}
	rb.approvers = plan.approval.approvers;
	rb.phase('awaiting-approval');
	const answered = await condition(() => rb.approval !== undefined || state.aborted, plan.approval.timeoutSeconds * 1000);
	if (state.aborted) state.decision = 'rejected';
	else if (answered && rb.approval) state.decision = rb.approval.approved ? 'approved' : 'rejected';
	else state.decision = plan.approval.onTimeout === 'approve' ? 'timeout-approved' : 'timeout-rejected';
	const a = answered && !state.aborted ? rb.approval : undefined;
	state.approval = {
		decision: state.decision,
		by: a?.by,
		at: a?.at ?? new Date(Date.now()).toISOString(),
		via: a?.via ?? (state.aborted ? 'abort' : 'timeout'),
		...(a?.reason ? { reason: a.reason } : {}),
	};
	rb.log('awaiting-approval', `decision: ${state.decision}`, answered ? 'operator answered' : `no answer within ${plan.approval.timeoutSeconds}s; default applies`);
	if (state.decision === 'rejected' || state.decision === 'timeout-rejected') {
		for (const c of rb.changes) c.status = 'unchanged';
		return false;
	}
	return true;
}
