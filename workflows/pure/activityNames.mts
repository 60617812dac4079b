/** Names of the local activities workflow code calls to check its input in the worker (zod stays out of the bundle). */

/** Name of the activity that parses a plan (registered by worker/src/activities/operations.mts). */
export const PARSE_PLAN_ACTIVITY = 'runbook.parsePlan';

/** The local activity that runs the CLI's own checks of a workflow input in the worker (workflows/input/checkInWorker.mts). */
export const CHECK_INPUT_ACTIVITY = 'input.check';
export type CheckedKind = 'desired' | 'durableCall';
