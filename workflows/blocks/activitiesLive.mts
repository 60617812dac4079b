import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '../../api/client.ts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { entryRangeKey, listedByKey, type Ipv4ListEntry } from '../../api/catalog/ipv4.ts';

/** Expiring blocks: reading a domain-port's blacklist as written, shared by the add and removal activities. */

/** The list as written: range key (`start-end` as numbers) → the entry's text as the list shows it. */
export async function liveEntries(
	client: Client,
	site_id: string,
	domain_port_id: string,
): Promise<Map<string, string>> {
	const list = await client.call<{ p_info?: { ipv4?: { black_soc?: Ipv4ListEntry[] } } }>(
		'applicationProtection.ipBlacklist.get',
		{ site_id, domain_port_id },
	);
	return listedByKey(list?.p_info?.ipv4?.black_soc ?? []);
}

export async function liveEntry(
	client: Client,
	site_id: string,
	domain_port_id: string,
	entry: string,
): Promise<string | undefined> {
	const want = entryRangeKey(entry);
	return want === undefined ? undefined : (await liveEntries(client, site_id, domain_port_id)).get(want);
}

/** Every failure except bad input is retried: the block's write is idempotent here. */
export const retryable = (op: string, e: unknown) => {
	const f = toFailure(op, e);
	if (f instanceof ApplicationFailure && f.type === 'ValidationError') return f;
	return ApplicationFailure.retryable(f.message, 'BlockWriteRetry');
};

export const ownerId = () => {
	const id = Context.current().info.workflowExecution?.workflowId;
	if (!id) throw ApplicationFailure.nonRetryable('blocks: only workflows hold entries', 'ValidationError');
	return id;
};
