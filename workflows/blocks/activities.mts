import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { claim as coordinatorClaim, release as coordinatorRelease } from '../coordinator/client.mts';
import { liveEntries, liveEntry, ownerId, retryable } from './activitiesLive.mts';
import { entryRangeKey } from '../../api/catalog/ipv4.ts';
import { createRemoveDue } from './activitiesRemoval.mts';
import { addBlock, BlockRefused } from './client.mts';
import { blockKey, BLOCKS_ACTIVITY, type AddManyEntry, type AddManyOutcome, type BlockRequest } from './shared.mts';

/**
 * Expiring blocks, worker side (workflows/blocks/blocks.mts):
 *  - activities `blocks.add` / `blocks.remove`: one POST / one DELETE of exactly the block's entry; a retry reads the
 *    list first, so an attempt whose outcome was unknown is never repeated blindly (no duplicate write);
 *    `blocks.removeMany`: the entries of one domain-port due together, one read and one DELETE naming them all;
 *    `blocks.removeDue` (blocksRemoval.mts): the same as a local activity, with the release of earlier removals;
 *    `blocks.register`: the attack response registers its own entries as blocks (plan blacklist.expireAfterSeconds).
 * The client side (the CLI's add / extend / remove / list) is client.mts.
 */

export function createBlocksActivities(
	api: Client,
	temporal?: () => TemporalClient,
): Record<string, (input: Record<string, unknown>) => Promise<unknown>> {
	const withTemporal = <T,>(fn: (t: TemporalClient) => Promise<T>) => {
		if (!temporal)
			throw ApplicationFailure.nonRetryable('blocks: the worker has no Temporal client', 'ValidationError');
		return fn(temporal());
	};
	return {
		[BLOCKS_ACTIVITY.add]: async (input) => {
			const { site_id, domain_port_id, entry } = input as { site_id: string; domain_port_id: string; entry: string };
			const attempt = Context.current().info.attempt;
			try {
				if (attempt > 1 && (await liveEntry(api, site_id, domain_port_id, entry)))
					return { added: true, byEarlierAttempt: true };
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
		},
		[BLOCKS_ACTIVITY.remove]: async (input) => {
			const { site_id, domain_port_id, entry } = input as { site_id: string; domain_port_id: string; entry: string };
			const attempt = Context.current().info.attempt;
			try {
				const live = await liveEntry(api, site_id, domain_port_id, entry);
				if (!live) {
					// On a retry the entry may be gone because an earlier attempt removed it (its answer was lost).
					return attempt > 1
						? {
								removed: true,
								note: `removed (an earlier attempt's answer was lost; attempt ${attempt} found it gone)`,
							}
						: { removed: false };
				}
				await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: [live] });
				return { removed: true };
			} catch (e) {
				throw retryable('applicationProtection.ipBlacklist.remove', e);
			}
		},
		// Every due entry of one domain-port: one read, then ONE DELETE naming those still listed as written (the spec's
		// remove takes a comma-separated list). Gone ones are `removed: false` (taken over), or, on a retry, removed by
		// the earlier attempt whose answer was lost — the same reading as `blocks.remove`.
		[BLOCKS_ACTIVITY.removeMany]: async (input) => {
			const { site_id, domain_port_id, entries } = input as {
				site_id: string;
				domain_port_id: string;
				entries: string[];
			};
			const attempt = Context.current().info.attempt;
			try {
				const live = await liveEntries(api, site_id, domain_port_id);
				const found = entries.map((entry) => ({ entry, live: live.get(entryRangeKey(entry) ?? '') }));
				const present = [...new Set(found.flatMap((f) => (f.live ? [f.live] : [])))];
				if (present.length)
					await api.call('applicationProtection.ipBlacklist.remove', {
						site_id,
						domain_port_id,
						ip_black_list: present,
					});
				return {
					results: found.map((f) =>
						f.live
							? { entry: f.entry, removed: true }
							: attempt > 1
								? {
										entry: f.entry,
										removed: true,
										note: `removed (an earlier attempt's answer was lost; attempt ${attempt} found it gone)`,
									}
								: { entry: f.entry, removed: false },
					),
				};
			} catch (e) {
				throw retryable('applicationProtection.ipBlacklist.remove', e);
			}
		},
		[BLOCKS_ACTIVITY.addMany]: async (input) => addMany(api, withTemporal, input as unknown as AddManyInput),
		// The removal as a LOCAL activity (workflows/blocks/blocks.mts since `blocks-local-removals`; workflows/blocks/activitiesRemoval.mts).
		[BLOCKS_ACTIVITY.removeDue]: createRemoveDue(api, withTemporal),
		[BLOCKS_ACTIVITY.register]: async (input) => {
			if (!temporal)
				throw ApplicationFailure.nonRetryable('blocks.register: the worker has no Temporal client', 'ValidationError');
			const { site_id, domain_port_id, ...req } = input as unknown as BlockRequest & {
				site_id: string;
				domain_port_id: string;
			};
			try {
				return await addBlock(temporal(), Context.current().info.taskQueue, site_id, domain_port_id, req);
			} catch (e) {
				if (e instanceof BlockRefused) throw ApplicationFailure.nonRetryable(e.message, 'BlockRefused');
				throw e;
			}
		},
	};
}

interface AddManyInput {
	site_id: string;
	domain_port_id: string;
	entries: AddManyEntry[];
	ttlSeconds: number;
	reason: string;
}

/**
 * An add batch in ONE activity (workflows/blocks/blocks.mts, bulk adds): the coordinator claim of every key (hold, queue as
 * successor), one read of the list, one POST per granted entry not yet listed, then one release of the keys not
 * written. The claim is idempotent per owner; the entries listed before any POST are recorded in the heartbeat
 * details, so a retry (worker lost, answer lost) tells an entry this activity wrote from one an operator wrote.
 * A refusal of one entry (held by another with a successor waiting, the operator's entry, the service refused the
 * POST) names it and the others go on; an unreadable list refuses the batch, naming domain_port_id.
 */
async function addMany(
	api: Client,
	withTemporal: <T>(fn: (t: TemporalClient) => Promise<T>) => Promise<T>,
	input: AddManyInput,
): Promise<{ results: AddManyOutcome[] }> {
	const { site_id, domain_port_id: dp, entries, ttlSeconds, reason } = input;
	const ctx = Context.current();
	const owner = ownerId();
	const keys = entries.map((e) => blockKey(dp, e.range));
	let c;
	try {
		c = await withTemporal((t) =>
			coordinatorClaim(t, { site_id, keys, mode: 'hold', queue: true, reason, ttlSeconds, owner }, ctx.info.taskQueue),
		);
	} catch (e) {
		if (e instanceof ApplicationFailure && e.type === 'ValidationError')
			return {
				results: entries.map((x) => ({
					range: x.range,
					outcome: 'refused',
					field: 'block',
					rule: `the site's coordinator refused: ${e.message}`,
				})),
			};
		throw e;
	}
	const heldBy = new Map(c.held.map((h) => [h.key, h]));
	const queued = new Set(c.queued ?? []);
	const results = new Map<string, AddManyOutcome>();
	const granted: AddManyEntry[] = [];
	for (const x of entries) {
		const h = heldBy.get(blockKey(dp, x.range));
		if (!h) granted.push(x);
		else if (queued.has(blockKey(dp, x.range)))
			results.set(x.range, { range: x.range, outcome: 'queued', holder: { owner: h.owner, reason: h.reason } });
		else
			results.set(x.range, {
				range: x.range,
				outcome: 'refused',
				field: 'entry',
				rule: `${x.range} is held by ${h.owner} and another block already waits for it`,
			});
	}
	const giveBack: string[] = [];
	const refuse = (x: AddManyEntry, field: string, rule: string, present?: true) => {
		giveBack.push(blockKey(dp, x.range));
		results.set(x.range, { range: x.range, outcome: 'refused', field, rule, ...(present ? { present } : {}) });
	};
	if (granted.length) {
		let live: Map<string, string> | undefined;
		try {
			live = await liveEntries(api, site_id, dp);
		} catch (e) {
			const f = toFailure('applicationProtection.ipBlacklist.get', e);
			const permanent =
				f instanceof ApplicationFailure &&
				(f.type === 'ValidationError' || f.type === 'ApiError' || f.type === 'HttpRefused');
			if (!permanent && ctx.info.attempt < 3) throw retryable('applicationProtection.ipBlacklist.get', e);
			for (const x of granted)
				refuse(
					x,
					'domain_port_id',
					`${dp} of site ${site_id}: the blacklist cannot be read (${f.message}); nothing was sent`,
				);
		}
		if (live) {
			// Listed before this activity wrote anything: from the first attempt that got this far (heartbeat details).
			const earlier = (ctx.info.heartbeatDetails as { listedBefore?: string[] } | undefined)?.listedBefore;
			// A retry without them (the first heartbeat was lost too) takes a listed entry as this activity's, as
			// `blocks.add` does on a retry: never a duplicate POST, never an entry of ours left behind unowned.
			const listedBefore = new Set(
				earlier ??
					(ctx.info.attempt > 1
						? []
						: granted.filter((x) => live.has(entryRangeKey(x.range) ?? '')).map((x) => x.range)),
			);
			if (!earlier) ctx.heartbeat({ listedBefore: [...listedBefore] });
			for (const x of granted) {
				const present = live.has(entryRangeKey(x.range) ?? '');
				if (present && (x.adopt || !listedBefore.has(x.range))) {
					results.set(x.range, { range: x.range, outcome: 'active', ...(x.adopt ? {} : { byEarlierAttempt: true }) });
					continue;
				}
				if (present) {
					refuse(
						x,
						'entry',
						`${x.range} is already on the blacklist of ${dp} and no block wrote it: it stays as it is (remove it first to block it for a while)`,
						true,
					);
					continue;
				}
				try {
					await api.call('applicationProtection.ipBlacklist.add', {
						site_id,
						domain_port_id: dp,
						ip_black_list: x.range,
					});
					results.set(x.range, { range: x.range, outcome: 'active' });
				} catch (e) {
					const f = toFailure('applicationProtection.ipBlacklist.add', e);
					// The service refused this entry (e.g. a full list): refused, the others go on. Anything else: the
					// activity is retried (its read then finds what this attempt wrote).
					if (f instanceof ApplicationFailure && f.type === 'BlastRadius')
						refuse(x, 'entry', `refused by the blast-radius guard: ${f.message}`);
					else if (f instanceof ApplicationFailure && (f.type === 'ValidationError' || f.type === 'ApiError'))
						refuse(x, 'entry', `the service refused to add ${x.range}: ${f.message}`);
					else throw retryable('applicationProtection.ipBlacklist.add', e);
				}
			}
		}
	}
	if (giveBack.length) await withTemporal((t) => coordinatorRelease(t, site_id, owner, giveBack));
	return { results: entries.map((x) => results.get(x.range) as AddManyOutcome) };
}
