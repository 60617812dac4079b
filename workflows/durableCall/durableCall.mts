import { patched, proxyActivities } from '@temporalio/workflow';
import { checkInWorker } from '../input/checkInWorker.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { durableCallRules } from '../input/inputRules.mts';
import { FILTER_CREATE_ONCE_ACTIVITY, FILTER_CREATE_OP, FILTER_MATCHING_ACTIVITY } from '../pure/activityNames.mts';

/**
 * One API operation as a durable step (`secsvc call`, the n8n Runbook node): retried by Temporal, and — for
 * HTTP-filter create/edit — serialized per domain-port across every worker process and host through the site
 * coordinator's lease (worker/src/activities/operations.mts); a write is never repeated blindly by a retry
 * (writeRecord.mts; an HTTP-filter create: httpFilterOnce.mts). No ownership check beyond that: the raw operation.
 */
export interface DurableCallInput {
	/** Catalog operation id, e.g. applicationProtection.httpFilter.create. */
	op: string;
	params: Record<string, unknown>;
}

/**
 * Every operation heartbeats while it runs (worker/src/activities/writeRecord.mts): a killed worker's attempt is
 * retried within 10 s, not after the 5-minute start-to-close, and an HTTP-filter write's lease ends with its attempt.
 * A write records what it found before it sends, so a retry checks the service instead of sending it again.
 */
const acts = proxyActivities<Record<string, (p: Record<string, unknown>) => Promise<unknown>>>({
	startToCloseTimeout: '5m',
	heartbeatTimeout: '10s',
	retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 8 },
});

export async function durableCall(input: DurableCallInput): Promise<unknown> {
	// The shape here (no commands); the operation id and its params by the catalog's rules (as `secsvc call`) in the worker.
	failOn('durable call', problems(input, durableCallRules));
	await checkInWorker('durableCall', input);
	// An HTTP-filter create: what already matches is recorded before the POST, so a retry after a crash finds the
	// policy its earlier attempt created instead of creating a second one (worker/src/activities/httpFilterOnce.mts).
	if (input.op === FILTER_CREATE_OP && patched('filter-create-once')) {
		const before = await acts[FILTER_MATCHING_ACTIVITY](input.params ?? {});
		return acts[FILTER_CREATE_ONCE_ACTIVITY]({ params: input.params ?? {}, before });
	}
	// Only the activities' options changed (a replay compares activity types, not timeouts): no patch.
	return acts[input.op](input.params ?? {});
}
