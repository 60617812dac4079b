import { DETECTION_GROUPS } from '../catalog/detectionGroups';

/**
 * The parts of the plan that workflow code needs, without zod: workflow code imports this module, never plan.ts
 * (zod plus the plan schema cost ~1.8 MB of heap per workflow; plans are parsed by the `runbook.parsePlan` activity).
 */

/** Detection items the runbook may change, and the `type` each is set with (icmp has no settable type in §4.5). */
export const ITEM_TYPE: Record<string, string> = Object.fromEntries(
	Object.entries(DETECTION_GROUPS)
		.filter(([g]) => g !== 'icmp')
		.flatMap(([g, items]) => items.map((i) => [i, g])),
);
export const ITEM_GROUP: Record<string, string> = Object.fromEntries(
	Object.entries(DETECTION_GROUPS).flatMap(([g, items]) => items.map((i) => [i, g])),
);

/** The thresholds of a detection item (§4.5), the one list: the plan's, the desired state's, the runbook's, drift's. */
export const THRESHOLD_FIELDS = ['low_pps', 'high_pps', 'low_bps', 'high_bps'] as const;
/** Every field of a detection item the runbook and drift read, compare and write back. */
export const LEAF_FIELDS = [
	'is_enabled',
	...THRESHOLD_FIELDS,
	'blackhole_bps',
	'blackhole_pps',
	'blackhole_time',
] as const;

/** plan.execution.continueAsNewAfterEvents: bounds and default (workflows/attackResponse/continue.mts). */
export const CONTINUE_AS_NEW_EVENTS = { min: 60, max: 10_000, default: 2_000 } as const;
