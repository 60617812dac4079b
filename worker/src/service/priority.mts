// The priority class of an API call from its call site (docs/rate-budget.md): the activity that makes it and the
// workflow that asked for it. Calls outside an activity (CLI, start-up) fall back to the operation's default
// (api/rateBudget.ts defaultClassOf: reads 'report', writes 'mitigate').
import { Context } from '@temporalio/activity';
import type { CatalogEntry } from '../../../api/catalog/types.ts';
import type { PriorityClass } from '../../../api/rateBudget.ts';
import { WORKFLOW_TYPE as T } from '../../../api/runbook/contract.ts';
import { FLEET_CHECK_ACTIVITY } from '../../../workflows/fleet/shared.mts';

/** Workflow types whose calls are reads for reports, drift and watching one site. */
const REPORTING = new Set<string>([T.driftAudit, T.attackReport, T.attackWatch]);

export function priorityFromCallSite(
	op: CatalogEntry,
	info: { workflowType?: string; activityType?: string } | undefined,
): PriorityClass | undefined {
	if (!info) return undefined;
	if (op.id.startsWith('authorization.')) return 'mitigate';
	if (info.activityType === FLEET_CHECK_ACTIVITY || info.workflowType === T.fleetWatch) return 'watch';
	if (info.workflowType && REPORTING.has(info.workflowType)) return 'report';
	// Expiring blocks: adding is mitigation, the expiry's removals (and the reads that check them) are reverts.
	if (info.workflowType === T.blocks)
		return /^blocks\.(add|addMany|register)$/.test(info.activityType ?? '') ? 'mitigate' : 'revert';
	// The runbook: every write and its hold-the-line checks (reads) are the top class.
	if (info.workflowType === T.attackResponse || info.workflowType === T.durableCall) return 'mitigate';
	return undefined;
}

/** ClientOptions.priorityOf for the worker: the running activity's call site, if any. */
export function activityPriority(op: CatalogEntry): PriorityClass | undefined {
	let info: { workflowType?: string; activityType?: string } | undefined;
	try {
		info = Context.current().info;
	} catch {
		return undefined;
	}
	return priorityFromCallSite(op, info);
}
