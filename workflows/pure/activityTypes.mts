import type { OperationParams, OperationResults } from '../../api/types.generated.ts';

/**
 * The catalog's operations as activities (worker/src/activities/operations.mts: activity name = operation id), typed
 * from the catalog's generated types: what a caller may pass, what the activity resolves with. Types only.
 */
export type OperationId = keyof OperationResults;
export type OperationActivities = { [K in OperationId]: (params: OperationParams[K]) => Promise<OperationResults[K]> };
/** What one operation takes (a value the runbook recorded is cast to it where the plan's checks guarantee it). */
export type SetParams<K extends OperationId> = OperationParams[K];
