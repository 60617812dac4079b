/**
 * The input rules of a runbook's signals (`abort`, `extendCooldown`) that need no runbook state, shared by the
 * runbook's checked signal handlers (workflows/attackResponse/handlers.mts: a signal that breaks one changes nothing
 * and is recorded as refused), the CLI and the n8n Runbook node, which check them before sending. Pure: no imports.
 * The `approve` signal follows the `decide` Update's rules (api/decideRules.ts + the runbook's state rules).
 */

/** Longest cooldown extension one signal may ask for: 7 days (the CLI's and the node's bound). */
export const MAX_EXTEND_SECONDS = 7 * 86400;
/** Longest `by` (an identity) and `reason` a signal may carry. */
export const MAX_SIGNAL_BY = 200;
export const MAX_SIGNAL_REASON = 1000;

const optionalText = (v: unknown, field: string, max: number): string | undefined =>
	v === undefined || v === null || (typeof v === 'string' && v.length <= max)
		? undefined
		: `${field}: must be text of at most ${max} characters`;

/** The first problem of an `abort` signal's input as `field: rule`, or undefined. `by` and `reason` are optional. */
export function abortInputProblem(a: unknown): string | undefined {
	if (a === undefined || a === null) return undefined;
	if (typeof a !== 'object' || Array.isArray(a)) return 'abort: must be an object ({by?, reason?})';
	const r = a as { by?: unknown; reason?: unknown };
	return optionalText(r.by, 'by', MAX_SIGNAL_BY) ?? optionalText(r.reason, 'reason', MAX_SIGNAL_REASON);
}

/** The first problem of an `extendCooldown` signal's input as `field: rule`, or undefined. */
export function extendInputProblem(a: unknown): string | undefined {
	if (!a || typeof a !== 'object' || Array.isArray(a)) return 'extendCooldown: must be an object ({seconds, by?})';
	const r = a as { seconds?: unknown; by?: unknown };
	if (typeof r.seconds !== 'number' || !Number.isInteger(r.seconds) || r.seconds < 1 || r.seconds > MAX_EXTEND_SECONDS)
		return `seconds: must be an integer from 1 to ${MAX_EXTEND_SECONDS} (7 days)`;
	return optionalText(r.by, 'by', MAX_SIGNAL_BY);
}
