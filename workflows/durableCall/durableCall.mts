import { proxyActivities } from '@temporalio/workflow';
import { checkInWorker } from '../input/checkInWorker.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { durableCallRules } from '../input/inputRules.mts';

/**
 * One API operation as a durable step (`secsvc call`, the n8n Runbook node): retried by Temporal, and — for
 * HTTP-filter create/edit — serialized per domain-port across every worker process and host through the site
 * coordinator's lease (worker/src/activities/operations.mts). No ownership check beyond that: it is the raw operation.
 */
export interface DurableCallInput {
	/** Catalog operation id, e.g. applicationProtection.httpFilter.create. */
	op: string;
	params: Record<string, unknown>;
}

const acts = proxyActivities<Record<string, (p: Record<string, unknown>) => Promise<unknown>>>({
	startToCloseTimeout: '5m',
	retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 8 },
});

export async function durableCall(input: DurableCallInput): Promise<unknown> {
	// The shape here (no commands); the operation id and its params by the catalog's rules (as `secsvc call`) in the worker.
	failOn('durable call', problems(input, durableCallRules));
	await checkInWorker('durableCall', input);
	return acts[input.op](input.params ?? {});
}
