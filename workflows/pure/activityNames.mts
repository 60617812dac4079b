/** Names of the local activities workflow code calls to check its input in the worker (zod stays out of the bundle). */

/** Name of the activity that parses a plan (registered by worker/src/activities/operations.mts). */
export const PARSE_PLAN_ACTIVITY = 'runbook.parsePlan';

/** The local activity that runs the CLI's own checks of a workflow input in the worker (workflows/input/checkInWorker.mts). */
export const CHECK_INPUT_ACTIVITY = 'input.check';
export type CheckedKind = 'desired' | 'durableCall';

/**
 * HTTP-filter create made idempotent (workflows/durableCall/durableCall.mts, worker/src/activities/httpFilterOnce.mts): the ids
 * of the policies that already match the request, recorded before the create; then the create, which first looks
 * for a matching policy not in that record (what an earlier attempt created) and POSTs only when there is none.
 */
export const FILTER_MATCHING_ACTIVITY = 'httpFilter.matchingBefore';
export const FILTER_CREATE_ONCE_ACTIVITY = 'httpFilter.createOnce';
export const FILTER_CREATE_OP = 'applicationProtection.httpFilter.create';

/**
 * A runbook's blacklist adds of one domain-port in one activity (worker/src/activities/exactBatch.mts): each entry as
 * `applicationProtection.ipBlacklist.add` writes it, with its own record; `answers` in the order they were made.
 */
export const ADD_EACH_ACTIVITY = 'runbook.blacklistAddEach';
export interface AddEachInput {
	site_id: string;
	domain_port_id: string;
	entries: string[];
	concurrency: number;
}
export interface AddEachResult {
	/** Per entry: the add's answer (WriteResult), or the blast-radius guard's refusal (nothing sent). */
	answers: ({ entry: string; answer: unknown } | { entry: string; refused: string })[];
}

/**
 * A runbook's write groups in ONE activity (worker/src/activities/exactBatch.mts `exactWriteSteps`): the groups in
 * order, a group's steps at once; each setting written as its own write activity writes it (exactSet) and each list
 * entry as `runbook.blacklistAddEach` writes it, each with its own record. `answers` are keyed: a setting step by its
 * `key`, a list entry by `<key> <entry>`.
 */
export const WRITE_STEPS_ACTIVITY = 'runbook.writeSteps';
/**
 * The same with `hold` (attackResponse/ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH), under a name of its own: a worker
 * of a build before it does not know the name and fails the task (retried on another worker), where under the old name
 * it would ignore `hold` and write entries not held.
 */
export const WRITE_STEPS_HELD_ACTIVITY = 'runbook.writeStepsHeld';
export type WriteStep =
	| { key: string; op: string; params: Record<string, unknown> }
	| { key: string; add: AddEachInput };
export interface WriteStepsInput {
	groups: WriteStep[][];
	/**
	 * The list entries' hold, asked by the activity itself beside their reads (attackResponse/ownership.mts
	 * ENTRIES_HOLD_IN_WRITE_PATCH): `keys` maps an entry's answer key (`<key> <entry>`) to its setting key. An entry is
	 * sent only once held by the calling workflow; one someone else holds, or all of them when the hold must wait
	 * (another owner's lease), is sent nothing and given no answer: the claim's result says why (`hold`).
	 */
	hold?: { site_id: string; reason: string; ttlSeconds: number; keys: Record<string, string> };
}
/** `Held`: the site coordinator's claim result (coordinator/coordination.mts; pure/ does not import it). */
export interface WriteStepsResult<Held = unknown> {
	answers: ({ key: string; answer: unknown } | { key: string; refused: string })[];
	/** With `hold`: the coordinator's answer to it. */
	hold?: Held;
}
