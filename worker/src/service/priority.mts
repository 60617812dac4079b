// The priority class of an API call from its call site (docs/rate-budget.md): the activity that makes it and the
// workflow that asked for it, as the playbook records say (workflows/<playbook>/playbook.mts `budget`). Calls
// outside an activity (CLI, start-up) fall back to the operation's default (api/rateBudget.ts defaultClassOf: reads
// 'report', writes 'mitigate').
import { asyncLocalStorage } from '@temporalio/activity';
import type { CatalogEntry } from '../../../api/catalog/types.ts';
import type { PriorityClass } from '../../../api/rateBudget.ts';
import { PLAYBOOKS, playbookOf } from '../../../workflows/playbooks.mts';

export function priorityFromCallSite(
	op: CatalogEntry,
	info: { workflowType?: string; activityType?: string } | undefined,
): PriorityClass | undefined {
	if (!info) return undefined;
	if (op.id.startsWith('authorization.')) return 'mitigate';
	const activity = info.activityType ?? '';
	for (const p of PLAYBOOKS) {
		const c = p.activityBudget?.[activity];
		if (c) return c;
	}
	const budget = playbookOf(info.workflowType)?.budget;
	return typeof budget === 'function' ? budget(activity) : budget;
}

/**
 * ClientOptions.priorityOf for the worker: the running activity's call site, if any. Read from the SDK's activity
 * store, not `Context.current()`, which throws (an Error with its stack) for every budgeted call made outside one.
 */
export function activityPriority(op: CatalogEntry): PriorityClass | undefined {
	return priorityFromCallSite(op, asyncLocalStorage.getStore()?.info);
}
