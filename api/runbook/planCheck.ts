import { idProblem, sizeIssues } from '../limits';

/**
 * What a sender checks of a plan before it starts a runbook (the n8n Runbook node's Start): a JSON object, no
 * credentials, the ids that reach API paths, and the size bounds of api/limits.ts. Every other rule of the plan
 * schema (plan.ts) is checked by the worker's `runbook.parsePlan` before any call. Fields are named as the node
 * shows them (`Plan.<path>`).
 */

/** A plan is a small document (api/limits.ts bounds its strings and lists; the worker checks the rest). */
export const MAX_PLAN_CHARS = 256 * 1024;

export type StartPlanCheck = { plan: Record<string, unknown> } | { issue: { field: string; rule: string } };

/** The plan (parsed when given as JSON text), or the first issue found. */
export function startPlanIssue(raw: unknown): StartPlanCheck {
	const issue = (field: string, rule: string): StartPlanCheck => ({ issue: { field, rule } });
	let plan: unknown = raw;
	if (typeof raw === 'string' && raw.length > MAX_PLAN_CHARS)
		return issue('Plan', `must be at most ${MAX_PLAN_CHARS} characters of JSON`);
	if (typeof raw === 'string') {
		try {
			plan = JSON.parse(raw);
		} catch {
			return issue('Plan', 'must be a JSON object');
		}
	}
	if (!plan || typeof plan !== 'object' || Array.isArray(plan)) return issue('Plan', 'must be a JSON object');
	const p = plan as Record<string, unknown>;
	for (const k of ['secret', 'access_token', 'refresh_token', 'app_secret']) {
		if (k in p) return issue(`Plan.${k}`, 'must not be in a plan (credentials live in the worker only)');
	}
	for (const k of ['site_id', 'customer_id']) {
		if (p[k] === undefined || p[k] === null || p[k] === '') return issue(`Plan.${k}`, 'is required (a string)');
		const problem = idProblem(p[k]);
		if (problem) return issue(`Plan.${k}`, problem);
	}
	for (const k of ['network_id', 'host_id', 'event_id']) {
		const problem = p[k] === undefined ? undefined : idProblem(p[k]);
		if (problem) return issue(`Plan.${k}`, problem);
	}
	if (p.domain_ports !== undefined) {
		if (!Array.isArray(p.domain_ports)) return issue('Plan.domain_ports', 'must be an array of domain-port ids');
		for (const [j, d] of (p.domain_ports as unknown[]).slice(0, 100).entries()) {
			const problem = idProblem(d);
			if (problem) return issue(`Plan.domain_ports.${j}`, problem);
		}
	}
	// Sizes: long strings and lists are refused here; every other rule is checked by the worker before any call.
	const sized = sizeIssues(p, { maxString: 1024, maxList: 1000, maxDepth: 8 });
	if (sized.length)
		return issue(`Plan.${sized[0].field}`, sized[0].rule + (sized.length > 1 ? ` (and ${sized.length - 1} more)` : ''));
	return { plan: p };
}
