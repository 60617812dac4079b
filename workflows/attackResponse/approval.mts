import { condition } from '@temporalio/workflow';
import type { PlanContext, Runbook } from './context.mts';

/** Step 3 — approval gate: waits for approve / reject / abort, or applies the plan's timeout decision. Returns false when rejected. */
export async function approvalGate(rb: Runbook, ctx: PlanContext): Promise<boolean> {
	const { plan } = ctx;
	const { state } = rb;
	if (!plan.approval.required) {
		state.decision = 'not-required';
		return true;
	}
	rb.phase('awaiting-approval');
	const answered = await condition(() => rb.approval !== undefined || state.aborted, plan.approval.timeoutSeconds * 1000);
	if (state.aborted) state.decision = 'rejected';
	else if (answered && rb.approval) state.decision = rb.approval.approved ? 'approved' : 'rejected';
	else state.decision = plan.approval.onTimeout === 'approve' ? 'timeout-approved' : 'timeout-rejected';
	rb.log('awaiting-approval', `decision: ${state.decision}`, answered ? 'operator answered' : `no answer within ${plan.approval.timeoutSeconds}s; default applies`);
	if (state.decision === 'rejected' || state.decision === 'timeout-rejected') {
		for (const c of rb.changes) c.status = 'unchanged';
		return false;
	}
	return true;
}
