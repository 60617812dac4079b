import type { OperationParams, OperationResults } from '../../api/types.generated.ts';

/**
 * The catalog's operations as activities (worker/src/activities/operations.mts: activity name = operation id), typed
 * from the catalog's generated types: what a caller may pass, what the activity resolves with. Types only.
 */
export type OperationId = keyof OperationResults;
/**
 * A setting's write on a condition (worker/src/activities/exactWrites.mts): sent only while the setting is live at the
 * value `expect` would set (`expect`: the same operation's params, e.g. the runbook's own value), read by the write
 * itself; otherwise nothing is sent and the answer is `{ theirs }` (WriteResult). A revert restores so.
 */
export interface WriteCondition {
	expect?: Record<string, unknown>;
}
export type OperationActivities = {
	[K in OperationId]: (params: OperationParams[K], when?: WriteCondition) => Promise<OperationResults[K]>;
};
/** What one operation takes (a value the runbook recorded is cast to it where the plan's checks guarantee it). */
export type SetParams<K extends OperationId> = OperationParams[K];
