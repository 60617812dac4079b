import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { liveEntries, liveEntry, retryable } from './activitiesLive.mts';
import { ownListed, toRangeText } from '../../api/catalog/ipv4.ts';
import { createRemoveDue } from './activitiesRemoval.mts';
import { beating, writeAttempt } from '../../worker/src/activities/writeRecord.mts';
import { escalateBlocks, offendersKey } from '../../worker/src/temporal/offenders.mts';
import { addBlock, BlockRefused } from './client.mts';
import { addMany, type AddManyInput, type WithTemporal } from './activitiesAddMany.mts';
import { BLOCKS_ACTIVITY, type BlockRequest, type RemoveDueInput } from './shared.mts';

/**
 * Expiring blocks, worker side (workflows/blocks/blocks.mts):
 *  - activities `blocks.add` / `blocks.remove`: one POST / one DELETE of exactly the block's entry; a retry reads the
 *    list first, so an attempt whose outcome was unknown is never repeated blindly (no duplicate write), and an entry
 *    it finds listed is never taken for the block's own (`unknown` / `notOurs`);
 *    `blocks.removeMany`: the entries of one domain-port due together, one read and one DELETE naming them all;
 *    `blocks.removeDue` (activitiesRemoval.mts): the same as a local activity, with the release of earlier removals;
 *    `blocks.addMany` (activitiesAddMany.mts): an add batch in one activity;
 *    `blocks.register`: the attack response registers its own entries as blocks (plan blacklist.expireAfterSeconds).
 * The client side (the CLI's add / extend / remove / list) is client.mts.
 */

type Where = { site_id: string; domain_port_id: string };
const GONE_NOTE = (attempt: number) =>
	`removed (an earlier attempt's answer was lost; attempt ${attempt} found it gone)`;

/** The blocks activities; the workflow proxies exactly these (workflows/blocks/context.mts, through `import type`). */
export function createBlocksActivities(api: Client, temporal?: () => TemporalClient) {
	const withTemporal: WithTemporal = (fn) => {
		if (!temporal)
			throw ApplicationFailure.nonRetryable('blocks: the worker has no Temporal client', 'ValidationError');
		return fn(temporal());
	};
	const removeDue = createRemoveDue(api, withTemporal);
	return {
		[BLOCKS_ACTIVITY.add]: (input: Where & { entry: string }) => addOne(api, temporal, input),
		[BLOCKS_ACTIVITY.remove]: (input: Where & { entry: string }) => removeOne(api, input),
		[BLOCKS_ACTIVITY.removeMany]: (input: Where & { entries: string[] }) => removeMany(api, input),
		[BLOCKS_ACTIVITY.addMany]: (input: AddManyInput) => beating(() => addMany(api, withTemporal, input, temporal)),
		// The removal as a LOCAL activity (workflows/blocks/blocks.mts since `blocks-local-removals`).
		[BLOCKS_ACTIVITY.removeDue]: (input: RemoveDueInput) => removeDue(input as unknown as Record<string, unknown>),
		[BLOCKS_ACTIVITY.register]: (input: BlockRequest & Where & { customer_id?: string }) => register(temporal, input),
	};
}

/**
 * Before bulk adds (runs recorded then): one POST; the workflow read the list first. Each attempt records before it
 * writes (writeRecord.mts); a retry reads the list: an entry listed with no earlier record is another's (`notOurs`),
 * after one it is the lost POST or someone else's add (`unknown`, like `blocks.addMany`). Nothing is sent for either.
 */
async function addOne(
	api: Client,
	temporal: (() => TemporalClient) | undefined,
	{ site_id, domain_port_id, entry }: Where & { entry: string },
): Promise<{ added: boolean; unknown?: true; notOurs?: true }> {
	const a = writeAttempt(temporal);
	try {
		const earlier = a.earlier?.writing === true;
		if (!earlier) await a.record({ writing: true });
		const listed = a.attempt > 1 ? await liveEntry(api, site_id, domain_port_id, entry) : undefined;
		if (listed !== undefined)
			return (earlier || !a.durable) && listed === toRangeText(entry)
				? { added: false, unknown: true }
				: { added: false, notOurs: true };
		await api.call('applicationProtection.ipBlacklist.add', { site_id, domain_port_id, ip_black_list: entry });
		return { added: true };
	} catch (e) {
		const f = toFailure('applicationProtection.ipBlacklist.add', e);
		// The service refused (e.g. a full list): not retried, the add is refused. Anything else: retried.
		if (
			f instanceof ApplicationFailure &&
			(f.type === 'ValidationError' || f.type === 'ApiError' || f.type === 'BlastRadius')
		)
			throw f;
		throw retryable('applicationProtection.ipBlacklist.add', e);
	}
}

async function removeOne(
	api: Client,
	{ site_id, domain_port_id, entry }: Where & { entry: string },
): Promise<{ removed: boolean; note?: string }> {
	const attempt = Context.current().info.attempt;
	try {
		const live = ownListed(await liveEntries(api, site_id, domain_port_id), entry);
		// On a retry the entry may be gone because an earlier attempt removed it (its answer was lost).
		if (!live) return attempt > 1 ? { removed: true, note: GONE_NOTE(attempt) } : { removed: false };
		await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: [live] });
		return { removed: true };
	} catch (e) {
		throw retryable('applicationProtection.ipBlacklist.remove', e);
	}
}

/**
 * Every due entry of one domain-port: one read, then ONE DELETE naming those still listed as written (the spec's
 * remove takes a comma-separated list). Gone ones are `removed: false` (taken over), or, on a retry, removed by the
 * earlier attempt whose answer was lost — the same reading as `blocks.remove`.
 */
async function removeMany(
	api: Client,
	{ site_id, domain_port_id, entries }: Where & { entries: string[] },
): Promise<{ results: { entry: string; removed: boolean; note?: string }[] }> {
	const attempt = Context.current().info.attempt;
	try {
		const live = await liveEntries(api, site_id, domain_port_id);
		const found = entries.map((entry) => ({ entry, live: ownListed(live, entry) }));
		const present = [...new Set(found.flatMap((f) => (f.live ? [f.live] : [])))];
		if (present.length)
			await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: present });
		return {
			results: found.map(({ entry, live }) =>
				live
					? { entry, removed: true }
					: attempt > 1
						? { entry, removed: true, note: GONE_NOTE(attempt) }
						: { entry, removed: false },
			),
		};
	} catch (e) {
		throw retryable('applicationProtection.ipBlacklist.remove', e);
	}
}

async function register(
	temporal: (() => TemporalClient) | undefined,
	input: BlockRequest & Where & { customer_id?: string },
) {
	if (!temporal)
		throw ApplicationFailure.nonRetryable('blocks.register: the worker has no Temporal client', 'ValidationError');
	const { site_id, domain_port_id, customer_id, ...req } = input;
	const info = Context.current().info;
	try {
		// Repeat offenders are blocked longer (offenders.mts); a retry of this activity counts nothing twice.
		const [esc] = await escalateBlocks(temporal(), info.taskQueue, offendersKey(site_id, customer_id), [req], {
			dedupe: `${info.workflowExecution?.workflowId}/${info.activityId}`,
		});
		return await addBlock(temporal(), info.taskQueue, site_id, domain_port_id, esc);
	} catch (e) {
		if (e instanceof BlockRefused) throw ApplicationFailure.nonRetryable(e.message, 'BlockRefused');
		throw e;
	}
}
