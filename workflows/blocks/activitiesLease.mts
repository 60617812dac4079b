import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Details, WriteAttempt } from '../../worker/src/activities/writeRecord.mts';

/** How long before the server's earliest timeout of the attempt its lease ends (clocks, a record's round trip). */
const SLACK_MS = 2000;
/** At most one progress record per this long: a kill loses the ownership of at most this long's POSTs (`unknown`). */
const PROGRESS_MS = 1000;

export interface SendingLease {
	/**
	 * The time by which a call started now must end (its deadline); renews first when less than `needMs` is left.
	 * Throws (retryable) once this attempt may send no more: the server may time it out and start its retry.
	 */
	ready(needMs: number): Promise<number>;
	/** Stores `details()` as this attempt's record now (durable) and extends the lease. */
	renew(): Promise<void>;
	/**
	 * `details()` grew (an entry POSTed): recorded before the next call unless another progress record started within
	 * PROGRESS_MS (so a kill leaves at most that long's POSTs, and the one in flight, unowned). Throws like `ready`.
	 */
	progress(): Promise<void>;
	end(): void;
}

/**
 * An add batch's right to send (interleave seed 36). Its activity has a heartbeat timeout, so the retry of an attempt
 * a worker kill ended starts within it (not after the whole start-to-close). The server may then time out an attempt
 * that still runs (a loaded worker whose heartbeats were late: the SDK sends them at most every 0.8 × the timeout)
 * and start its retry beside it; so an attempt sends only inside its lease: until the heartbeat timeout after its last
 * record the server confirmed (sent at `from`: the server timed nothing out before it received it), and within its
 * start-to-close, less SLACK_MS. Records are renewed every third of the timeout in the background (and before a call
 * when too little is left, and at most every PROGRESS_MS after a POST); each carries `details()` (what was sent so
 * far), so the retry owns what this attempt POSTed. A call is made with the lease's end as its deadline: when the retry starts, no call of this attempt is
 * under way. Without a durable record (no Temporal client, a local activity) only the start-to-close bounds it.
 */
export function sendingLease(a: WriteAttempt, details: () => Details): SendingLease {
	const info = Context.current().info;
	const hb = a.durable ? (info.heartbeatTimeoutMs ?? 0) : 0;
	const closeBy = info.currentAttemptScheduledTimestampMs + info.startToCloseTimeoutMs - SLACK_MS;
	let from = info.currentAttemptScheduledTimestampMs;
	let lost: unknown;
	let lastProgress = 0;
	const until = () => Math.min(closeBy, hb ? from + hb - SLACK_MS : Number.POSITIVE_INFINITY);
	const renew = async () => {
		const sent = Date.now();
		try {
			await a.record(details());
			from = Math.max(from, sent);
		} catch (e) {
			lost ??= e;
			throw e;
		}
	};
	const timer = hb ? setInterval(() => void renew().catch(() => undefined), hb / 3) : undefined;
	return {
		async ready(needMs) {
			if (lost) throw lost;
			if (until() - Date.now() < needMs) await renew();
			const end = until();
			if (end - Date.now() < needMs)
				throw ApplicationFailure.retryable(
					`this attempt's time is up (its start-to-close); nothing more sent, its retry goes on`,
					'LeaseEnded',
				);
			return end;
		},
		renew,
		// Counted from the last progress record, not from a background renewal: one started just before this POST's
		// answer does not carry it (blocksKill: the entry answered 0.1 s after such a renewal was left unowned).
		async progress() {
			if (!a.durable || Date.now() - lastProgress < PROGRESS_MS) return;
			lastProgress = Date.now();
			await renew();
		},
		end: () => clearInterval(timer),
	};
}
