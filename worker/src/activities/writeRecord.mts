import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

/**
 * The one mechanism for a write that may be in flight when its worker is killed (issue 43 item 1, issue 37 item 4).
 * Every write activity:
 *  1. heartbeats while it runs (`beating`), so a killed worker's attempt is retried within the caller's heartbeat
 *     timeout, and a lease it holds is renewed only while it beats (it ends with its attempt);
 *  2. records what it found, before it sends its write, in its heartbeat details — and waits until the server has
 *     stored them (`record`: RecordActivityTaskHeartbeat through the worker's Temporal client, answered once the
 *     activity's state is persisted). A heartbeat through the SDK alone is sent later and asynchronously: a kill a
 *     round trip after it may lose it together with the write's answer (interleave seed 106);
 *  3. on a retry, reads that record (`earlier`) and checks the service before writing again: a setting already at
 *     its target, a list entry already listed, a filter already created or already edited is not written twice, and
 *     whether it is ours is decided by the record — none means no attempt got as far as sending; one, for a setting
 *     or a list entry found at its target, means outcome unknown (exactWrites.mts: its lost write or someone else's).
 * A write with no such check is never re-sent after an attempt recorded that it was sending (`OutcomeUnknown`).
 * Without the worker's Temporal client (activities used directly, local activities) the record is best effort.
 */

export type Details = Record<string, unknown>;

export interface WriteAttempt {
	attempt: number;
	/** What an earlier attempt recorded before its write; undefined: no attempt got as far as sending. */
	earlier?: Details;
	/** Whether `record` is confirmed by the server (a regular activity with the worker's Temporal client). */
	durable: boolean;
	/** Stores `d` as this attempt's record; resolves once it is stored (when durable). */
	record(d: Details): Promise<void>;
}

/** The details each running activity's heartbeats carry: the last record, so a plain beat never erases it. */
const current = new WeakMap<object, Details>();
/** Activities whose SDK heartbeats have started: the SDK may hold details of theirs to send later (throttled). */
const sdkBeating = new WeakSet<object>();

function context(): Context | undefined {
	try {
		return Context.current();
	} catch {
		return undefined; // not inside an activity (direct use)
	}
}

/** A heartbeat carrying this attempt's record (a no-op outside an activity). */
export function beat(): void {
	const ctx = context();
	if (!ctx || ctx.info.isLocal) return;
	sdkBeating.add(ctx);
	ctx.heartbeat(current.get(ctx) ?? ctx.info.heartbeatDetails);
}

/** This activity's attempt, its earlier attempt's record and the means to record before a write. */
export function writeAttempt(temporal?: () => TemporalClient): WriteAttempt {
	const ctx = context();
	if (!ctx) return { attempt: 1, durable: false, record: async () => undefined };
	const info = ctx.info;
	const earlier = info.heartbeatDetails as Details | undefined;
	const durable = !info.isLocal && temporal !== undefined;
	return {
		attempt: info.attempt,
		earlier: earlier && typeof earlier === 'object' ? earlier : undefined,
		durable,
		record: async (d) => {
			if (info.isLocal) return;
			current.set(ctx, d);
			// Without the client the SDK's heartbeat is the record (best effort). With it, the SDK is told only when its
			// heartbeats have started (what it sends next, throttled, must carry this record, not an older one): before
			// that, its first heartbeat would go out at once, a second copy of the record stored just below, and the
			// next `beat` carries this record anyway.
			if (!temporal || sdkBeating.has(ctx)) ctx.heartbeat(d);
			if (!temporal) return;
			try {
				await temporal().activity.heartbeat(info.taskToken, d);
			} catch (e) {
				// this attempt is no longer the activity's (timed out, retried elsewhere): it must not write
				throw ApplicationFailure.retryable(
					`the write's record was not stored (${(e as Error)?.message}); nothing sent`,
					'RecordFailed',
				);
			}
		},
	};
}

/** Heartbeats every 2.5 s while `fn` runs (well within the durable call's 10 s heartbeat timeout). */
export const BEAT_MS = 2_500;
export async function beating<T>(fn: () => Promise<T>): Promise<T> {
	const ctx = context();
	if (!ctx || ctx.info.isLocal) return fn();
	const t = setInterval(beat, BEAT_MS);
	try {
		return await fn();
	} finally {
		clearInterval(t);
	}
}

/** A write that cannot be checked against the service: sent at most once per durable record. */
export async function sendOnce<T>(
	opId: string,
	temporal: (() => TemporalClient) | undefined,
	send: () => Promise<T>,
): Promise<T> {
	const a = writeAttempt(temporal);
	if (a.earlier?.sending === opId)
		throw ApplicationFailure.nonRetryable(
			`${opId}: an earlier attempt sent this write and its answer was lost (worker killed); the service offers no way to check it, so it is not sent again (outcome unknown)`,
			'OutcomeUnknown',
			{ opId },
		);
	await a.record({ sending: opId });
	try {
		return await send();
	} catch (e) {
		// refused by the service, or not sent at all: nothing applied, a retry may send it
		const x = e as { name?: string; maybeApplied?: boolean };
		if (x?.name === 'ApiError' || x?.maybeApplied === false) await a.record({}).catch(() => undefined);
		throw e;
	}
}

/**
 * One activity's writes of several list entries (exactBatch.mts): each entry gets the record mechanism above as if it
 * were its own activity. The activity's record holds every entry's (`entries`: key → that entry's record), so an entry
 * an earlier attempt answered is known from it and the entry it was about to write keeps its `writing` record; the
 * records are stored one after another, each carrying all entries' latest state (records made while one is stored
 * share the next).
 */
export function entryAttempts(a: WriteAttempt): {
	earlier(key: string): Details | undefined;
	of(key: string): WriteAttempt;
	answered(key: string, answer: Details): void;
	/** Stores every entry's latest state now (before a failure ends the attempt: its retry must know the answers). */
	flush(): Promise<void>;
} {
	const earlier = (a.earlier?.entries ?? {}) as Record<string, Details>;
	const now: Record<string, Details> = { ...earlier };
	let chain: Promise<void> = Promise.resolve();
	// A store not started yet: a record made meanwhile joins it (it carries every entry's state from when it starts),
	// so the entries of one group, recorded in the same turn, are stored by one heartbeat, not one after another.
	let next: Promise<void> | undefined;
	const store = () => {
		if (next) return next;
		const p = chain.then(() => {
			next = undefined;
			return a.record({ entries: { ...now } });
		});
		next = p;
		chain = p.catch(() => undefined);
		return p;
	};
	return {
		earlier: (key) => earlier[key],
		of: (key) => ({
			attempt: a.attempt,
			durable: a.durable,
			earlier: earlier[key],
			record: (d) => {
				now[key] = d;
				return store();
			},
		}),
		// stored with the next entry's record (the last entry's answer is the activity's result)
		answered: (key, answer) => void (now[key] = { answer }),
		flush: () => store(),
	};
}
