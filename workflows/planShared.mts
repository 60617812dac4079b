/**
 * The parts of the plan that workflow code needs, without zod. Workflow code imports this module, never plan.mts:
 * every running workflow evaluates its own copy of the modules it imports, and zod plus the plan schema cost ~1.8 MB
 * of heap per workflow. Plans are parsed (zod, plan.mts) by the `runbook.parsePlan` activity instead.
 */
import { DETECTION_GROUPS } from '../api/catalog/detectionGroups.ts';

export type { Plan } from './plan.mts';

/** Detection items the runbook may change, and the `type` each is set with (icmp has no settable type in §4.5). */
export const ITEM_TYPE: Record<string, string> = Object.fromEntries(
	Object.entries(DETECTION_GROUPS)
		.filter(([g]) => g !== 'icmp')
		.flatMap(([g, items]) => items.map((i) => [i, g])),
);
export const ITEM_GROUP: Record<string, string> = Object.fromEntries(
	Object.entries(DETECTION_GROUPS).flatMap(([g, items]) => items.map((i) => [i, g])),
);

/** plan.execution.continueAsNewAfterEvents: bounds and default (workflows/attackResponse/continue.mts). */
export const CONTINUE_AS_NEW_EVENTS = { min: 60, max: 10_000, default: 2_000 } as const;

/** Name of the activity that parses a plan (registered by worker/src/activities/operations.mts). */
export const PARSE_PLAN_ACTIVITY = 'runbook.parsePlan';

/** The local activity that runs the CLI's own checks of a workflow input in the worker (workflows/checkInWorker.mts). */
export const CHECK_INPUT_ACTIVITY = 'input.check';
export type CheckedKind = 'desired' | 'durableCall';

/**
 * HTTP-filter create made idempotent (workflows/durableCall.mts, worker/src/activities/httpFilterOnce.mts): the ids
 * of the policies that already match the request, recorded before the create; then the create, which first looks
 * for a matching policy not in that record (what an earlier attempt created) and POSTs only when there is none.
 */
export const FILTER_MATCHING_ACTIVITY = 'httpFilter.matchingBefore';
export const FILTER_CREATE_ONCE_ACTIVITY = 'httpFilter.createOnce';
export const FILTER_CREATE_OP = 'applicationProtection.httpFilter.create';
