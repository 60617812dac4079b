import { ApplicationFailure } from '@temporalio/common';
import { getOperation } from '../../../api/catalog/index.ts';
import { isClientRefusal, type Client } from '../../../api/client.ts';
import { matchingFilterIds } from '../../../api/httpFilterMatch.ts';
import { redactText } from '../../../api/redact.ts';
import {
	FILTER_CREATE_ONCE_ACTIVITY,
	FILTER_CREATE_OP,
	FILTER_MATCHING_ACTIVITY,
} from '../../../workflows/pure/activityNames.mts';
import type { Activity } from './operations.mts';

/**
 * An HTTP-filter create that a crash cannot repeat (issue 29, kill storm). The service has no idempotency key, and a
 * worker SIGKILLed after its POST leaves the policy created with the answer lost; Temporal then retries the activity.
 *  1. FILTER_MATCHING_ACTIVITY: the ids of the policies that already match the request (api/httpFilterMatch.ts),
 *     returned to the workflow, so they are in history before any POST.
 *  2. FILTER_CREATE_ONCE_ACTIVITY: under the domain-port's lease, lists the policies again; a matching one that was
 *     not there before is what an earlier attempt created: its id is returned and nothing is sent. Otherwise it
 *     POSTs. Either way it answers what it wrote and the matching policies that were there before (`notOurs`:
 *     another's, never the call's). It heartbeats (every activity does, writeRecord.mts), so a killed worker's attempt
 *     is retried within the heartbeat timeout, and a transport failure is retried (the next attempt looks first).
 */

type Serialized = <T>(site: string, dp: string, fn: () => Promise<T>) => Promise<T>;

const LIST_OP: string = 'applicationProtection.httpFilter.list';

export function filterOnceActivities(
	client: Client,
	serialized: Serialized,
	toFailure: (op: string, e: unknown) => Error,
): Record<string, Activity> {
	const listMatching = async (valid: Record<string, unknown>) =>
		matchingFilterIds(
			await client.call(LIST_OP, { site_id: valid.site_id, domain_port_id: valid.domain_port_id }),
			valid,
		);
	return {
		[FILTER_MATCHING_ACTIVITY]: async (params = {}) => {
			try {
				return await listMatching(client.validate(FILTER_CREATE_OP, params));
			} catch (e) {
				throw toFailure(LIST_OP, e);
			}
		},
		[FILTER_CREATE_ONCE_ACTIVITY]: async (input = {}) => {
			const { params = {}, before = [] } = input as { params?: Record<string, unknown>; before?: unknown[] };
			const known = new Set((Array.isArray(before) ? before : []).map(String));
			try {
				const valid = client.validate(FILTER_CREATE_OP, params); // bad input fails before any lease or read
				return await serialized(String(valid.site_id), String(valid.domain_port_id), async () => {
					// What it wrote, and the matching policies that were there before: not ours (WriteResult, exactWrites.mts).
					const notOurs = [...known];
					const created = (await listMatching(valid)).find((id) => !known.has(id));
					if (created !== undefined) return { p_flag_id: created, alreadyCreated: true, wrote: [created], notOurs };
					const r = (await client.call(FILTER_CREATE_OP, params)) as { p_flag_id?: unknown } | undefined;
					return { ...r, wrote: r?.p_flag_id === undefined ? [] : [r.p_flag_id], notOurs };
				});
			} catch (e) {
				throw retryableTransport(e) ?? toFailure(FILTER_CREATE_OP, e);
			}
		},
	};
}

/** A lost answer is retried here: the next attempt finds the policy if it was created (a 4xx refusal is not). */
function retryableTransport(e: unknown): Error | undefined {
	const t = e as { name?: string; kind?: string; status?: number; message?: string };
	if (t?.name !== 'TransportError' || (t.kind === 'http' && typeof t.status === 'number' && isClientRefusal(t.status)))
		return undefined;
	return ApplicationFailure.retryable(redactText(String(t.message)), 'TransportError', {
		opId: getOperation(FILTER_CREATE_OP).id,
		kind: t.kind,
		status: t.status,
	});
}
