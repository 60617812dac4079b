/**
 * Approvals: the input rules of a `decide` Update that need no runbook state, shared by the runbook's validator
 * (workflows/attackResponse/approval.mts adds the state rules: approvers, already decided, not waiting) and the n8n
 * Runbook node, which checks them before sending. Pure: no imports.
 */
export type DecideVia = 'cli' | 'n8n' | 'http' | 'api';
export const DECIDE_VIAS: readonly DecideVia[] = ['cli', 'n8n', 'http', 'api'];

export interface DecideRequest {
	approved: boolean;
	by: string;
	reason?: string;
	/** Which interface the decision came through (recorded in the audit and the result). */
	via?: DecideVia;
}

/** The first problem of a decision's input as `field: rule`, or undefined. */
export function decideInputProblem(req: unknown): string | undefined {
	if (!req || typeof req !== 'object') return 'decision: must be an object';
	const r = req as Partial<DecideRequest>;
	if (typeof r.approved !== 'boolean') return 'approved: must be true or false';
	if (typeof r.by !== 'string' || !r.by.trim() || r.by.length > 200) return 'by: is required (the identity of the person deciding, at most 200 characters)';
	if (r.via !== undefined && !DECIDE_VIAS.includes(r.via)) return `via: must be one of ${DECIDE_VIAS.join(', ')}`;
	if (!r.approved && (typeof r.reason !== 'string' || !r.reason.trim())) return 'reason: is required to reject';
	if (r.reason !== undefined && (typeof r.reason !== 'string' || r.reason.length > 1000)) return 'reason: must be text of at most 1000 characters';
	return undefined;
}
