import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { entryRangeKey, ownListed } from '../../api/catalog/ipv4.ts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { claim as coordinatorClaim, release as coordinatorRelease } from '../coordinator/client.mts';
import type { ClaimResult } from '../coordinator/coordination.mts';
import { liveEntries, ownerId, retryable } from './activitiesLive.mts';
import { writeAttempt, type Details, type WriteAttempt } from '../../worker/src/activities/writeRecord.mts';
import { sendingLease, type SendingLease } from './activitiesLease.mts';
import { blockKey, notOursRule, type AddManyEntry, type AddManyOutcome } from './shared.mts';

export type WithTemporal = <T>(fn: (t: TemporalClient) => Promise<T>) => Promise<T>;

export interface AddManyInput {
	site_id: string;
	domain_port_id: string;
	entries: AddManyEntry[];
	ttlSeconds: number;
	reason: string;
}

/** One batch's progress: the outcome of each range so far, and the keys to give back to the coordinator. */
interface Batch {
	site_id: string;
	dp: string;
	results: Map<string, AddManyOutcome>;
	giveBack: string[];
}

/**
 * An add batch in ONE activity (workflows/blocks/blocks.mts, bulk adds): the coordinator claim of every key (hold, queue as
 * successor), one read of the list, one POST per granted entry not yet listed, then one release of the keys not
 * written. The claim is idempotent per owner. Before its read each attempt records, stored by the server, that it is
 * about to write (writeRecord.mts): a retry (worker lost, answer lost) without such a record knows no attempt POSTed,
 * so a listed entry is another's; after one, an entry listed in the notation we POST may be our lost POST or someone
 * else's add meanwhile — `unknown`: not the block's, never removed at its expiry, reported (docs/workflows/expiring-blocks.md).
 * A refusal of one entry (held by another with a successor waiting, the operator's entry, the service refused the
 * POST) names it and the others go on; an unreadable list refuses the batch, naming domain_port_id.
 */
export async function addMany(
	api: Client,
	withTemporal: WithTemporal,
	input: AddManyInput,
	temporal?: () => TemporalClient,
): Promise<{ results: AddManyOutcome[] }> {
	const w = writeAttempt(temporal);
	const e = w.earlier;
	const earlier = e && (e.writing === true || Array.isArray(e.listedBefore)) ? e : undefined;
	// What this attempt's records carry: an earlier attempt's record until this one records its own (never erased).
	let rec = (): Details => earlier ?? {};
	const lease = sendingLease(w, () => rec());
	try {
		const c = await claimed(withTemporal, input, () => lease.ready(NEED_MS));
		if (typeof c === 'string')
			return { results: input.entries.map((x) => ({ range: x.range, outcome: 'refused', field: 'block', rule: c })) };
		const { batch, granted, owner } = c;
		if (granted.length) {
			const a = await recorded(w, earlier);
			rec = () => ({ writing: true, posted: [...a.posted] });
			const live = await readLive(api, batch, granted, a);
			if (live) await writeGranted(api, batch, granted, live, a, lease);
		}
		if (batch.giveBack.length) await withTemporal((t) => coordinatorRelease(t, input.site_id, owner, batch.giveBack));
		return { results: input.entries.map((x) => batch.results.get(x.range) as AddManyOutcome) };
	} finally {
		lease.end();
	}
}

/** The coordinator's claim of every key (idempotent per owner), or the rule its validator refused the batch by. */
async function claimed(
	withTemporal: WithTemporal,
	input: AddManyInput,
	alive: () => Promise<unknown>,
): Promise<{ batch: Batch; granted: AddManyEntry[]; owner: string } | string> {
	const { site_id, domain_port_id: dp, entries, ttlSeconds, reason } = input;
	const owner = ownerId();
	const keys = entries.map((x) => blockKey(dp, x.range));
	let c: ClaimResult;
	try {
		const q = Context.current().info.taskQueue;
		c = await withTemporal((t) =>
			// asked again only inside this attempt's lease: a lost lease leaves no claim in flight at the coordinator
			coordinatorClaim(t, { site_id, keys, mode: 'hold', queue: true, reason, ttlSeconds, owner }, q, alive),
		);
	} catch (e) {
		if (e instanceof ApplicationFailure && e.type === 'ValidationError')
			return `the site's coordinator refused: ${e.message}`;
		throw e;
	}
	const batch: Batch = { site_id, dp, results: new Map(), giveBack: [] };
	return { batch, granted: sortClaimed(batch, entries, c), owner };
}

/**
 * This attempt and what an earlier one recorded before its read: `writing` (since the unknown rule) with `posted`
 * (since the lease: the entries it POSTed and the service accepted, carried by each of its records), or, recorded by
 * workers before it, `listedBefore` — the entries it found listed before its POSTs (still not ours on a retry).
 * Without either no attempt got as far as its read: this one records before it reads.
 */
async function recorded(a: WriteAttempt, earlier: Details | undefined): Promise<Attempt> {
	if (!earlier) await a.record({ writing: true, posted: [] });
	// Without a stored record (no Temporal client) a retry cannot tell either.
	const unsure = earlier !== undefined || (a.attempt > 1 && !a.durable);
	const list = (k: string) => new Set((earlier?.[k] as string[] | undefined) ?? []);
	return { ...a, earlier, unsure, listedBefore: list('listedBefore'), posted: list('posted') };
}
type Attempt = WriteAttempt & { unsure: boolean; listedBefore: Set<string>; posted: Set<string> };

function refuse(b: Batch, x: AddManyEntry, field: string, rule: string, present?: true) {
	b.giveBack.push(blockKey(b.dp, x.range));
	b.results.set(x.range, { range: x.range, outcome: 'refused', field, rule, ...(present ? { present } : {}) });
}

/** The entries the claim granted; the others queued behind a holder, or refused when a successor already waits. */
function sortClaimed(b: Batch, entries: AddManyEntry[], c: ClaimResult): AddManyEntry[] {
	const heldBy = new Map(c.held.map((h) => [h.key, h]));
	const queued = new Set(c.queued ?? []);
	const granted: AddManyEntry[] = [];
	for (const x of entries) {
		const h = heldBy.get(blockKey(b.dp, x.range));
		if (!h) granted.push(x);
		else if (queued.has(blockKey(b.dp, x.range)))
			b.results.set(x.range, { range: x.range, outcome: 'queued', holder: { owner: h.owner, reason: h.reason } });
		else
			b.results.set(x.range, {
				range: x.range,
				outcome: 'refused',
				field: 'entry',
				rule: `${x.range} is held by ${h.owner} and another block already waits for it`,
			});
	}
	return granted;
}

/** The list as it is now; unreadable for good (or after 3 attempts): every granted entry refused, nothing sent. */
async function readLive(
	api: Client,
	b: Batch,
	granted: AddManyEntry[],
	a: Attempt,
): Promise<Map<string, string> | undefined> {
	try {
		return await liveEntries(api, b.site_id, b.dp);
	} catch (e) {
		// Nothing sent: this attempt's own record is taken back, so its retry does not take the list for unknown.
		if (!a.earlier) await a.record({}).catch(() => undefined);
		const f = toFailure('applicationProtection.ipBlacklist.get', e);
		const permanent =
			f instanceof ApplicationFailure &&
			(f.type === 'ValidationError' || f.type === 'ApiError' || f.type === 'HttpRefused');
		if (!permanent && Context.current().info.attempt < 3) throw retryable('applicationProtection.ipBlacklist.get', e);
		const rule = `${b.dp} of site ${b.site_id}: the blacklist cannot be read (${f.message}); nothing was sent`;
		for (const x of granted) refuse(b, x, 'domain_port_id', rule);
		return undefined;
	}
}

/**
 * One POST per granted entry not listed yet. A listed one: with `adopt` the caller's own (the attack response's
 * entry); else another's ("already present, not ours", refused) — unless an earlier attempt recorded that it was
 * about to write and the entry is listed in the notation we POST (`start-end`): then our lost POST or someone else's
 * add, nothing tells — `unknown`, its key given back like a refusal's.
 */
async function writeGranted(
	api: Client,
	b: Batch,
	granted: AddManyEntry[],
	live: Map<string, string>,
	a: Attempt,
	lease: SendingLease,
) {
	for (const x of granted) {
		const listed = live.get(entryRangeKey(x.range) ?? '');
		const ours = ownListed(live, x.range) !== undefined;
		if ((listed !== undefined && x.adopt) || (ours && a.posted.has(x.range)))
			b.results.set(x.range, { range: x.range, outcome: 'active' }); // the caller's own, or an earlier attempt's POST
		else if (ours && a.unsure && !a.listedBefore.has(x.range)) {
			b.giveBack.push(blockKey(b.dp, x.range));
			b.results.set(x.range, { range: x.range, outcome: 'unknown' });
		} else if (listed !== undefined) refuse(b, x, 'entry', notOursRule(x.range, b.dp), true);
		else if (await writeOne(api, b, x, await lease.ready(NEED_MS))) {
			a.posted.add(x.range);
			await lease.progress();
		}
	}
}

/** Left of an attempt's lease for a POST to start (its deadline cuts it at the lease's end anyway). */
const NEED_MS = 2000;

/** One POST, ended by `deadline` (the attempt's lease); true when the service accepted it. */
async function writeOne(api: Client, b: Batch, x: AddManyEntry, deadline: number): Promise<boolean> {
	try {
		// The client's own deadline for a call (every attempt and retry within it): no send of this attempt outlives its
		// lease (activitiesLease.mts). Not in the Client type's public form: the call's fourth argument.
		const call = api.call as unknown as (
			op: string,
			p: Record<string, unknown>,
			o: object,
			limit: { retries: number; deadline: number },
		) => Promise<unknown>;
		await call(
			'applicationProtection.ipBlacklist.add',
			{ site_id: b.site_id, domain_port_id: b.dp, ip_black_list: x.range },
			{},
			{ retries: api.options.retries, deadline },
		);
		b.results.set(x.range, { range: x.range, outcome: 'active' });
		return true;
	} catch (e) {
		const f = toFailure('applicationProtection.ipBlacklist.add', e);
		// The service refused this entry (e.g. a full list): refused, the others go on. Anything else: the activity is
		// retried (its read then finds what this attempt wrote).
		if (f instanceof ApplicationFailure && f.type === 'BlastRadius')
			refuse(b, x, 'entry', `refused by the blast-radius guard: ${f.message}`);
		else if (f instanceof ApplicationFailure && (f.type === 'ValidationError' || f.type === 'ApiError'))
			refuse(b, x, 'entry', `the service refused to add ${x.range}: ${f.message}`);
		else throw retryable('applicationProtection.ipBlacklist.add', e);
		return false;
	}
}
