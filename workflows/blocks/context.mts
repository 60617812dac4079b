import { ApplicationFailure, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/workflow';
import type { OperationActivities } from '../pure/activityTypes.mts';
import type { createBlocksActivities } from './activities.mts';
import {
	blockKey,
	DEFAULT_MAX_PREFIX,
	type Block,
	type BlockRequest,
	type BlocksInput,
	type BulkRefusal,
} from './shared.mts';

/**
 * What every step of the expiring-blocks workflow shares (workflows/blocks/blocks.mts): one domain-port's blocks, the work
 * in flight, the keys waiting for their release, and the activity proxies. One `BlocksRun` per workflow run.
 */

/** The blocks activities as their factory makes them (./activities.mts; a type only, never bundled). */
type BlocksActivities = ReturnType<typeof createBlocksActivities>;
type Act = BlocksActivities & Pick<OperationActivities, 'applicationProtection.ipBlacklist.get'>;
const WRITE_RETRY: RetryPolicy = {
	initialInterval: '500ms',
	backoffCoefficient: 2,
	maximumInterval: '5s',
	nonRetryableErrorTypes: ['ValidationError', 'ApiError'],
};
/** Writes: retried until they succeed (both check the list first on a retry: never a duplicate write). */
export const writes = proxyActivities<Act>({
	startToCloseTimeout: '30s',
	retry: WRITE_RETRY,
});
/**
 * The add batch (`blocks.addMany`): a heartbeat timeout, so the retry of an attempt a worker kill ended starts within
 * 15 s, not after its start-to-close (interleave seed 36: a bulk add retried just before each next kill, never sent in
 * 120 s); a long start-to-close, so a big batch is never cut short by it under load. An attempt sends only inside its
 * lease (activitiesLease.mts): one the server timed out while it still ran never sends beside its retry (a heartbeat
 * timeout alone did: 6,503 POSTs for 5,950 ranges in CI, session 13).
 */
export const adds = proxyActivities<Act>({
	startToCloseTimeout: '10m',
	heartbeatTimeout: '15s',
	retry: WRITE_RETRY,
});
/** Since `blocks-local-removals`: the removal as a local activity, retried the same way (workflows/blocks/activitiesRemoval.mts). */
export const localWrites = proxyLocalActivities<Act>({
	startToCloseTimeout: '30s',
	retry: WRITE_RETRY,
});
export const reads = proxyActivities<Act>({
	startToCloseTimeout: '20s',
	retry: { initialInterval: '500ms', maximumInterval: '5s', maximumAttempts: 3 },
});

/** The hold outlives the expiry by this much (a block whose workflow is gone is let go by the coordinator). */
const HOLD_MARGIN_SECONDS = 3600;
const KEEP_ENDED = 500;
/** At most this many entries in one removal (one DELETE); more due at once go in the next batch right after. */
export const MAX_REMOVE_BATCH = 200;
/**
 * Bulk mode: a domain-port starts at most one removal per this many ms; entries due meanwhile wait (≤ this long) and
 * join the next one (one read + one DELETE + one release for all of them).
 */
export const REMOVAL_CADENCE_MS = 1000;
/**
 * Events per run before continuing as new (since `blocks-bulk-adds`; before it: 3000). Memory (bench 8): what a run
 * does leaves a little behind in the workflow isolate until the run ends (measured: ~20 KB of live heap per block at
 * 20 blocks per run, freed when the run completes). As far as the SDK's source (1.24) shows, every cancellation scope
 * (each `condition(fn, timeout)` of the main loop), timer and activity attaches a handler to the run's root
 * cancellation promise, which lives as long as the run. Short runs bound it (docs/workflows/expiring-blocks.md).
 */
export const BULK_RUN_EVENTS = 500;
/**
 * Since `blocks-local-removals`: a removal is ~6 events (timer, task, marker), so a run of 100 blocks stayed under 500
 * events until its last removals and kept what all of them left behind (bench 8: peak RSS 272–309 MB); shorter runs.
 */
export const LOCAL_RUN_EVENTS = 250;
/**
 * Since `blocks-local-removals`: the holds of removed entries are released together, ~this long after the first of
 * them: by the first removal that starts then (its local activity signals the coordinator first), or by a signal of
 * their own when no removal comes (at once when none is due within this long, or the run is about to end). A release
 * is not time-critical (the key only says the block still owns the range; its entry is gone), and one per removal
 * was a coordinator workflow task per removal (bench 8).
 */
export const RELEASE_CARRY_MS = 5000;
/**
 * Since `blocks-local-removals`: the loop's timers aim this much (at most) before an expiry, by how late its wake-ups
 * have been (the timer starts when the workflow task that set it completes, the server fires it, the next task waits
 * for a free slot); the removal (local activity) then waits for each entry's expiry on the worker's clock. Small on
 * purpose: a waiting local activity keeps its workflow task — and a workflow task slot of the worker — open; with
 * 1.5 s (bench 8 at 10,000: 100 domain-ports, one removal each per 1.2 s) 13 % of the removals were 2–5 s late, as
 * if queued behind such tasks (docs/bench/blocks.md).
 */
export const MAX_LEAD_MS = 300;
export const iso = (ms: number) => new Date(ms).toISOString();
export const refuse = (field: string, rule: string) =>
	ApplicationFailure.create({
		message: `${field}: ${rule}`,
		type: 'BlockRefused',
		nonRetryable: true,
		details: [{ field, rule }],
	});
export const errText = (e: unknown) => String((e as { cause?: Error })?.cause?.message ?? (e as Error)?.message ?? e);
export function holdReason(b: Block): string {
	return `expiring block until ${b.expiresAt} by ${b.by}: ${b.reason}`.slice(0, 480);
}

/** An add waiting for its batch; `recheck`: a queued block whose key was released to it (BlocksRun.recheck). */
export type Pending = {
	req: BlockRequest;
	block: Block;
	error?: Error;
	refusal?: BulkRefusal;
	done?: boolean;
	recheck?: true;
};

/**
 * The code paths a run replays (`patched` in blocks.mts): `batched` removals, `bulk` adds, `local` removals; each
 * implies the one before.
 */
export interface Modes {
	batched: boolean;
	bulk: boolean;
	local: boolean;
}

export class BlocksRun {
	readonly site: string;
	readonly dp: string;
	readonly maxPrefix: number;
	readonly byRange: Map<string, Block>;
	readonly ended: Block[];
	readonly keyPrefix: string;
	dirty = false;
	inflight = 0;
	/** Batched mode: one add batch, one removal batch and one release in flight at a time (group commit). */
	adding = false;
	removing = false;
	releasing = false;
	lastRemovalAt = 0;
	/** Bulk mode: when the pending timers fire. */
	readonly timers: number[] = [];
	pending: Pending[] = [];
	/** Keys that passed to this workflow before (or after) their block was waiting for them. */
	readonly handed = new Set<string>();
	/** The same, passed by a plain release (not handed over): the block checks them as a fresh add. */
	readonly released = new Set<string>();
	readonly toRelease: string[] = [];
	/** Local removals: the history length when a key was last queued for release, since when the oldest waits, and the keys in flight. */
	queuedAtHistory = 0;
	releaseSince = 0;
	readonly releasingKeys = new Set<string>();
	/** Local removals: how late the timers woke the loop (moving average, ms; from the run's own clock: replay-safe). */
	lead = 0;
	/** Local removals: the latest expiry the removal in flight waits for (its task completes, and starts timers, after it). */
	inflightUntil = 0;

	constructor(
		readonly input: BlocksInput,
		readonly modes: Modes,
	) {
		this.site = input.site_id;
		this.dp = input.domain_port_id;
		this.maxPrefix = input.maxPrefix ?? DEFAULT_MAX_PREFIX;
		this.byRange = new Map<string, Block>((input.blocks ?? []).map((b) => [b.range, b]));
		this.ended = [...(input.ended ?? [])];
		this.keyPrefix = blockKey(this.dp, '');
	}

	wake(): void {
		this.dirty = true;
	}

	queueRelease(key: string): void {
		if (!this.toRelease.length) this.releaseSince = Date.now();
		this.toRelease.push(key);
		this.queuedAtHistory = workflowInfo().historyLength;
	}

	/** `at`: when it ended, if known better than this workflow task's time (a removal's answer). */
	end(b: Block, state: Block['state'], note?: string, at?: string): void {
		b.state = state;
		b.endedAt = at ?? iso(Date.now());
		if (note) b.note = note;
		if (this.byRange.get(b.range) === b) this.byRange.delete(b.range);
		this.ended.push(b);
		if (this.ended.length > KEEP_ENDED) this.ended.splice(0, this.ended.length - KEEP_ENDED);
		this.wake();
	}

	ttlFor(b: Block): number {
		return Math.max(1, Math.ceil((Date.parse(b.expiresAt) - Date.now()) / 1000)) + HOLD_MARGIN_SECONDS;
	}

	/**
	 * A queued block whose key its holder RELEASED (it never wrote the entry, or it died) instead of handing it over
	 * (since `blocks-released-keys`): the block does not own the entry by that. It is added again as a fresh add
	 * (adds.mts): an entry already listed that no block wrote is "already present, not ours" and stays as it is (the
	 * block ends taken-over, nothing removed at expiry); an absent one is POSTed and the block's own.
	 */
	recheck(b: Block): void {
		b.state = 'adding';
		const req = { entry: b.range, seconds: 1, by: b.by, reason: b.reason, ...(b.adopt ? { adopt: true } : {}) };
		this.pending.push({ req, block: b, recheck: true });
		this.wake();
	}

	/** Work in flight: counted, and its end wakes the loop. */
	spawn(work: Promise<void>): void {
		this.inflight++;
		void work.finally(() => {
			this.inflight--;
			this.wake();
		});
	}

	/** Work in flight that sets a flag (adding, removing, releasing) for its duration. */
	flag(set: (v: boolean) => void, work: Promise<unknown>): void {
		set(true);
		this.spawn(work.then(() => undefined).finally(() => set(false)));
	}
}
