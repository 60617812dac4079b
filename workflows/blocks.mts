import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, getExternalWorkflowHandle, patched, proxyActivities, proxyLocalActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import { claim, release } from './claims.mts';
import { coordinatorIdFor, handedOverSignal, MAX_KEYS, releaseSignal } from './coordination.mts';
import {
	ACTIVE_STATES,
	addBlocksUpdate,
	addBlockUpdate,
	BLOCKS_ACTIVITY,
	blockKey,
	blocksQuery,
	checkBlockRequest,
	checkBulkRequest,
	checkChangeRequest,
	DEFAULT_MAX_PREFIX,
	extendBlockUpdate,
	removeBlockUpdate,
	type AddManyOutcome,
	type Block,
	type BlockRequest,
	type BlocksInput,
	type BulkRefusal,
	type RemoveDueResult,
} from './blocksShared.mts';
import { entryRange, type ListEntry } from './ranges.mts';

/**
 * Expiring blocks of one domain-port (workflow id `blocks-<site>-<dp>`, started by Update-with-start): every block's
 * timer in one workflow — one timer, the earliest expiry; continued as new. Each block HOLDS its entry's key at the
 * site's coordinator (one owner per setting) from its add to its removal; an entry a runbook holds is not written:
 * the block queues as the key's successor and takes the entry over at the runbook's revert (workflows/README.md
 * "Expiring blocks"). At expiry exactly the entry is removed, only if it is still on the list as written; otherwise
 * nothing is written and the block is recorded `taken-over`.
 */

type Act = (input: Record<string, unknown>) => Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
/** Writes: retried until they succeed (both check the list first on a retry: never a duplicate write). */
const writes = proxyActivities<Record<string, Act>>({
	startToCloseTimeout: '30s',
	retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '5s', nonRetryableErrorTypes: ['ValidationError', 'ApiError'] },
});
/** Since `blocks-local-removals`: the removal as a local activity, retried the same way (worker/src/blocksRemoval.mts). */
const localWrites = proxyLocalActivities<Record<string, Act>>({
	startToCloseTimeout: '30s',
	retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '5s', nonRetryableErrorTypes: ['ValidationError', 'ApiError'] },
});
const reads = proxyActivities<Record<string, Act>>({ startToCloseTimeout: '20s', retry: { initialInterval: '500ms', maximumInterval: '5s', maximumAttempts: 3 } });

/** The hold outlives the expiry by this much (a block whose workflow is gone is let go by the coordinator). */
const HOLD_MARGIN_SECONDS = 3600;
const KEEP_ENDED = 500;
/** At most this many entries in one removal (one DELETE); more due at once go in the next batch right after. */
const MAX_REMOVE_BATCH = 200;
/**
 * Bulk mode: a domain-port starts at most one removal per this many ms; entries due meanwhile wait (≤ this long) and
 * join the next one (one read + one DELETE + one release for all of them).
 */
const REMOVAL_CADENCE_MS = 1000;
/**
 * Events per run before continuing as new (since `blocks-bulk-adds`; before it: 3000). Memory (bench 8): what a run
 * does leaves a little behind in the workflow isolate until the run ends (measured: ~20 KB of live heap per block at
 * 20 blocks per run, freed when the run completes). As far as the SDK's source (1.24) shows, every cancellation scope
 * (each `condition(fn, timeout)` of the main loop), timer and activity attaches a handler to the run's root
 * cancellation promise, which lives as long as the run. Short runs bound it (workflows/README.md "Expiring blocks").
 */
const BULK_RUN_EVENTS = 500;
/**
 * Since `blocks-local-removals`: a removal is ~6 events (timer, task, marker), so a run of 100 blocks stayed under 500
 * events until its last removals and kept what all of them left behind (bench 8: peak RSS 272–309 MB); shorter runs.
 */
const LOCAL_RUN_EVENTS = 250;
/**
 * Since `blocks-local-removals`: the holds of removed entries are released together, ~this long after the first of
 * them: by the first removal that starts then (its local activity signals the coordinator first), or by a signal of
 * their own when no removal comes (at once when none is due within this long, or the run is about to end). A release
 * is not time-critical (the key only says the block still owns the range; its entry is gone), and one per removal
 * was a coordinator workflow task per removal (bench 8).
 */
const RELEASE_CARRY_MS = 5000;
/**
 * Since `blocks-local-removals`: the loop's timers aim this much (at most) before an expiry, by how late its wake-ups
 * have been (the timer starts when the workflow task that set it completes, the server fires it, the next task waits
 * for a free slot); the removal (local activity) then waits for each entry's expiry on the worker's clock. Small on
 * purpose: a waiting local activity keeps its workflow task — and a workflow task slot of the worker — open; with
 * 1.5 s (bench 8 at 10,000: 100 domain-ports, one removal each per 1.2 s) 13 % of the removals were 2–5 s late, as
 * if queued behind such tasks (bench/README.md "Bench 8").
 */
const MAX_LEAD_MS = 300;
const iso = (ms: number) => new Date(ms).toISOString();
const refuse = (field: string, rule: string) => ApplicationFailure.create({ message: `${field}: ${rule}`, type: 'BlockRefused', nonRetryable: true, details: [{ field, rule }] });
const errText = (e: unknown) => String((e as { cause?: Error })?.cause?.message ?? (e as Error)?.message ?? e);

export async function blocks(input: BlocksInput): Promise<{ site_id: string; domain_port_id: string; ended: Block[] }> {
	// Runs started before batched removals (AUTO_UPGRADE moves them to this build) replay the old way: no marker.
	const batched = patched('blocks-batched-removals');
	// Runs started before bulk adds (one activity per add batch: claim + read + POSTs; releases by signal; removal
	// cadence; timers never cancelled; shorter runs) replay the batched way (test: fixtures/blocks-batched-run.json).
	const bulk = batched && patched('blocks-bulk-adds');
	// Runs started before local removals (the removal a local activity that also carries earlier releases; a removal
	// starts at the expiry when none is in flight, no cadence) replay the bulk way (test: fixtures/blocks-bulk-run.json).
	const local = bulk && patched('blocks-local-removals');
	const site = input.site_id;
	const dp = input.domain_port_id;
	const maxPrefix = input.maxPrefix ?? DEFAULT_MAX_PREFIX;
	const byRange = new Map<string, Block>((input.blocks ?? []).map((b) => [b.range, b]));
	const ended: Block[] = [...(input.ended ?? [])];
	const keyPrefix = blockKey(dp, '');
	let dirty = false;
	let inflight = 0;
	/** Batched mode: one add batch, one removal batch and one release in flight at a time (group commit). */
	let adding = false;
	let removing = false;
	let releasing = false;
	let lastRemovalAt = 0;
	/** Bulk mode: when the pending timers fire. */
	const timers: number[] = [];
	const wake = () => void (dirty = true);
	type Pending = { req: BlockRequest; block: Block; error?: Error; refusal?: BulkRefusal; done?: boolean };
	let pending: Pending[] = [];
	/** Keys that passed to this workflow before (or after) their block was waiting for them. */
	const handed = new Set<string>();
	const toRelease: string[] = [];
	/** Local removals: the history length when a key was last queued for release, since when the oldest waits, and the keys in flight. */
	let queuedAtHistory = 0;
	let releaseSince = 0;
	const releasingKeys = new Set<string>();
	/** Local removals: how late the timers woke the loop (moving average, ms; from the run's own clock: replay-safe). */
	let lead = 0;
	/** Local removals: the latest expiry the removal in flight waits for (its task completes, and starts timers, after it). */
	let inflightUntil = 0;
	const queueRelease = (key: string) => {
		if (!toRelease.length) releaseSince = Date.now();
		toRelease.push(key);
		queuedAtHistory = workflowInfo().historyLength;
	};

	const end = (b: Block, state: Block['state'], note?: string) => {
		b.state = state;
		b.endedAt = iso(Date.now());
		if (note) b.note = note;
		if (byRange.get(b.range) === b) byRange.delete(b.range);
		ended.push(b);
		if (ended.length > KEEP_ENDED) ended.splice(0, ended.length - KEEP_ENDED);
		wake();
	};
	const ttlFor = (b: Block) => Math.max(1, Math.ceil((Date.parse(b.expiresAt) - Date.now()) / 1000)) + HOLD_MARGIN_SECONDS;

	setHandler(
		addBlockUpdate,
		async (req) => {
			const p = enqueue(req, checkBlockRequest(req, maxPrefix));
			await condition(() => p.done === true);
			if (p.error) throw p.error;
			return p.block;
		},
		{
			validator: (req) => {
				const range = checkBlockRequest(req, maxPrefix);
				const cur = byRange.get(range);
				if (cur && ACTIVE_STATES.includes(cur.state)) throw new Error(`entry: ${range} is already blocked on ${dp} until ${cur.expiresAt} (${cur.state}); extend it instead`);
			},
		},
	);

	setHandler(
		addBlocksUpdate,
		async (req) => {
			const ranges = checkBulkRequest(req, maxPrefix);
			const ps = req.blocks.map((b, i) => enqueue(b, ranges[i]));
			await condition(() => ps.every((p) => p.done === true));
			return {
				blocks: ps.flatMap((p) => (p.error ? [] : [p.block])),
				refused: ps.flatMap((p) => (p.error ? [p.refusal ?? { entry: p.block.entry, field: 'entry', rule: errText(p.error) }] : [])),
			};
		},
		{
			validator: (req) => {
				const ranges = checkBulkRequest(req, maxPrefix);
				ranges.forEach((range, i) => {
					const cur = byRange.get(range);
					if (cur && ACTIVE_STATES.includes(cur.state)) throw new Error(`blocks[${i}].entry: ${range} is already blocked on ${dp} until ${cur.expiresAt} (${cur.state}); extend it instead`);
				});
			},
		},
	);

	function enqueue(req: BlockRequest, range: string): Pending {
		const now = Date.now();
		const block: Block = {
			site_id: site,
			domain_port_id: dp,
			range,
			entry: req.entry.trim(),
			expiresAt: iso(now + req.seconds * 1000),
			by: req.by,
			reason: req.reason,
			via: req.via ?? 'api',
			state: 'adding',
			addedAt: iso(now),
		};
		byRange.set(range, block);
		if (local) {
			// Re-added before the release of its earlier block was sent: the hold just stays.
			const i = toRelease.indexOf(blockKey(dp, range));
			if (i >= 0) toRelease.splice(i, 1);
		}
		const p: Pending = { req, block };
		pending.push(p);
		wake();
		return p;
	}

	const current = (entry: string, withSeconds: boolean, req: { entry: string; seconds?: number; by: string }) => {
		const range = checkChangeRequest(req as never, withSeconds);
		const b = byRange.get(range);
		if (!b || !ACTIVE_STATES.includes(b.state)) throw new Error(`entry: no active block for ${entry} on ${dp}`);
		if (b.state === 'adding' || b.state === 'removing') throw new Error(`entry: the block of ${range} is ${b.state}; try again in a moment`);
		return b;
	};

	setHandler(
		extendBlockUpdate,
		async (req) => {
			const b = current(req.entry, true, req);
			const at = iso(Date.now() + (req.seconds as number) * 1000);
			b.expiresAt = at;
			(b.changes ??= []).push({ at: iso(Date.now()), by: req.by, expiresAt: at });
			// The hold's `until` follows the expiry (same owner: the coordinator moves it; queued: the successor's ttl).
			await claim(site, { keys: [blockKey(dp, b.range)], mode: 'hold', queue: true, reason: holdReason(b), ttlSeconds: ttlFor(b) });
			wake();
			return b;
		},
		{ validator: (req) => void current(req?.entry, true, req) },
	);

	setHandler(
		removeBlockUpdate,
		async (req) => {
			const b = current(req.entry, false, req);
			(b.changes ??= []).push({ at: iso(Date.now()), by: req.by, expiresAt: iso(Date.now()) });
			if (b.state === 'queued') {
				const r = await release(site, [blockKey(dp, b.range)], true);
				if (r.dequeued) {
					end(b, 'cancelled', `removed by ${req.by} before the holder handed the entry over: the entry stays with its holder`);
					return b;
				}
				b.state = 'active'; // handed over meanwhile: ours to remove
			}
			b.expiresAt = iso(Date.now());
			b.note = `removed now by ${req.by}`;
			wake();
			await condition(() => !ACTIVE_STATES.includes(b.state));
			return b;
		},
		{ validator: (req) => void current(req?.entry, false, req) },
	);

	setHandler(blocksQuery, () => [...byRange.values(), ...ended]);

	setHandler(handedOverSignal, ({ keys }) => {
		for (const key of keys ?? []) {
			const b = byRange.get(key.slice(keyPrefix.length));
			if (b?.state === 'queued') {
				b.state = 'active';
				b.note = `${b.note ?? ''} handed over at ${iso(Date.now())}`.trim();
			} else if (b?.state === 'adding') handed.add(key);
			else if (local) queueRelease(key); // nobody waits for it any more
			else toRelease.push(key);
		}
		wake();
	});

	async function addBatch(batch: Pending[]): Promise<void> {
		const fail = (p: Pending, e: Error) => {
			p.error = e;
			p.done = true;
			if (byRange.get(p.block.range) === p.block) byRange.delete(p.block.range);
		};
		const keys = batch.map((p) => blockKey(dp, p.block.range));
		const ttl = Math.max(...batch.map((p) => ttlFor(p.block)));
		let c;
		try {
			c = await claim(site, { keys, mode: 'hold', queue: true, reason: `expiring blocks of ${dp} (${workflowInfo().workflowId})`, ttlSeconds: ttl });
		} catch (e) {
			for (const p of batch) fail(p, refuse('block', `the site's coordinator refused: ${errText(e)}`));
			return;
		}
		const heldBy = new Map(c.held.map((h) => [h.key, h]));
		const queued = new Set(c.queued ?? []);
		const granted: Pending[] = [];
		const giveBack: string[] = [];
		for (const p of batch) {
			const key = blockKey(dp, p.block.range);
			const h = heldBy.get(key);
			if (!h) granted.push(p);
			else if (queued.has(key)) {
				p.block.state = handed.delete(key) ? 'active' : 'queued';
				p.block.note = `the entry is held by ${h.owner} (${h.reason}): it passes to this block at its revert; removed at the expiry once it has`;
				p.done = true;
			} else fail(p, refuse('entry', `${p.block.range} is held by ${h.owner} and another block already waits for it`));
		}
		if (!granted.length) return;
		let listed: Set<string>;
		try {
			const list = await reads['applicationProtection.ipBlacklist.get']({ site_id: site, domain_port_id: dp });
			listed = new Set(((list?.p_info?.ipv4?.black_soc ?? []) as ListEntry[]).map(entryRange).flatMap((r) => (r ? [`${r.start}-${r.end}`] : [])));
		} catch (e) {
			for (const p of granted) fail(p, refuse('domain_port_id', `${dp} of site ${site}: the blacklist cannot be read (${errText(e)}); nothing was sent`));
			await release(site, granted.map((p) => blockKey(dp, p.block.range)));
			return;
		}
		const rangeKey = (range: string) => {
			const r = entryRange(range.includes('-') ? { start_ip: range.split('-')[0], end_ip: range.split('-')[1] } : { ip: range });
			return r ? `${r.start}-${r.end}` : range;
		};
		await Promise.all(
			granted.map(async (p) => {
				const present = listed.has(rangeKey(p.block.range));
				if (present && !p.req.adopt) {
					giveBack.push(blockKey(dp, p.block.range));
					return fail(p, refuse('entry', `${p.block.range} is already on the blacklist of ${dp} and no block wrote it: it stays as it is (remove it first to block it for a while)`));
				}
				if (!present) {
					try {
						await writes[BLOCKS_ACTIVITY.add]({ site_id: site, domain_port_id: dp, entry: p.block.range });
					} catch (e) {
						giveBack.push(blockKey(dp, p.block.range));
						return fail(p, refuse('entry', `the service refused to add ${p.block.range}: ${errText(e)}`));
					}
				}
				p.block.state = 'active';
				p.done = true;
			}),
		);
		if (giveBack.length) await release(site, giveBack);
	}

	/**
	 * Bulk mode: the whole add batch in ONE activity (blocks.addMany: coordinator claim, one read, one POST per entry
	 * not yet listed, release of what was not written) instead of claim + read + one activity per POST.
	 */
	async function addBatchBulk(batch: Pending[]): Promise<void> {
		const fail = (p: Pending, field: string, rule: string) => {
			p.refusal = { entry: p.block.entry, field, rule };
			p.error = refuse(field, rule);
			p.done = true;
			if (byRange.get(p.block.range) === p.block) byRange.delete(p.block.range);
		};
		const ttl = Math.max(...batch.map((p) => ttlFor(p.block)));
		let r: { results: AddManyOutcome[] };
		try {
			r = await writes[BLOCKS_ACTIVITY.addMany]({
				site_id: site,
				domain_port_id: dp,
				entries: batch.map((p) => ({ range: p.block.range, ...(p.req.adopt ? { adopt: true } : {}) })),
				ttlSeconds: ttl,
				reason: `expiring blocks of ${dp} (${workflowInfo().workflowId})`,
			});
		} catch (e) {
			for (const p of batch) fail(p, 'block', `the add failed: ${errText(e)}`);
			return;
		}
		const byRangeResult = new Map(r.results.map((x) => [x.range, x]));
		for (const p of batch) {
			const x = byRangeResult.get(p.block.range);
			if (!x) fail(p, 'block', 'no answer for this entry');
			else if (x.outcome === 'refused') fail(p, x.field, x.rule);
			else if (x.outcome === 'queued') {
				p.block.state = handed.delete(blockKey(dp, p.block.range)) ? 'active' : 'queued';
				p.block.note = `the entry is held by ${x.holder.owner} (${x.holder.reason}): it passes to this block at its revert; removed at the expiry once it has`;
				p.done = true;
			} else {
				p.block.state = 'active';
				p.done = true;
			}
		}
	}

	/**
	 * Batched: every due entry in one activity (one read, one DELETE naming them all); their holds are released by the
	 * main loop, coalesced with other releases (a runbook waiting for such a key waits for that release too).
	 */
	async function removeMany(due: Block[]): Promise<void> {
		for (const b of due) b.state = 'removing';
		const r = await writes[BLOCKS_ACTIVITY.removeMany]({ site_id: site, domain_port_id: dp, entries: due.map((b) => b.range) });
		const byEntry = new Map<string, { removed: boolean; note?: string }>(((r?.results ?? []) as { entry: string; removed: boolean; note?: string }[]).map((x) => [x.entry, x]));
		for (const b of due) {
			const x = byEntry.get(b.range);
			if (x?.removed) end(b, 'removed', x.note ?? b.note);
			else end(b, 'taken-over', `not on the list as written at ${iso(Date.now())} (removed or changed by someone else): nothing written`);
			toRelease.push(blockKey(dp, b.range));
		}
	}

	/**
	 * Local removals: the due entries in ONE local activity (one read, one DELETE naming them all) that first releases
	 * `carry`: keys whose removal an earlier workflow task recorded. Its own keys are released later the same way.
	 */
	async function removeDue(due: Block[], carry: string[]): Promise<void> {
		for (const b of due) b.state = 'removing';
		for (const k of carry) releasingKeys.add(k);
		inflightUntil = Math.max(...due.map((b) => Date.parse(b.expiresAt)));
		let r: RemoveDueResult;
		try {
			r = await localWrites[BLOCKS_ACTIVITY.removeDue]({ site_id: site, domain_port_id: dp, entries: due.map((b) => ({ range: b.range, expiresAt: b.expiresAt })), ...(carry.length ? { release: carry } : {}) });
		} catch (e) {
			toRelease.push(...carry);
			throw e;
		} finally {
			for (const k of carry) releasingKeys.delete(k);
		}
		const byEntry = new Map(r.results.map((x) => [x.entry, x]));
		for (const b of due) {
			const x = byEntry.get(b.range);
			if (x?.removed) end(b, 'removed', x.note ?? b.note);
			else end(b, 'taken-over', `not on the list as written at ${iso(Date.now())} (removed or changed by someone else): nothing written`);
			queueRelease(blockKey(dp, b.range));
		}
	}

	/** Before batched removals: one activity per entry, then one release (kept for runs that started on it). */
	async function removeBatch(due: Block[]): Promise<void> {
		for (const b of due) b.state = 'removing';
		await Promise.all(
			due.map(async (b) => {
				const r = await writes[BLOCKS_ACTIVITY.remove]({ site_id: site, domain_port_id: dp, entry: b.range });
				if (r?.removed) end(b, 'removed', r.note ?? b.note);
				else end(b, 'taken-over', `not on the list as written at ${iso(Date.now())} (removed or changed by someone else): nothing written`);
			}),
		);
		await release(site, due.map((b) => blockKey(dp, b.range)));
	}

	/**
	 * Bulk mode: the holds of removed entries end by a signal to the site's coordinator (no answer needed): no activity
	 * slot waits for the coordinator meanwhile (an Update per release did: with 100 domain-ports the releases filled the
	 * worker's 50 activity slots and the removals queued behind them). No coordinator running: nothing is held.
	 */
	const signalRelease = async (keys: string[]) => {
		for (let i = 0; i < keys.length; i += MAX_KEYS)
			await getExternalWorkflowHandle(coordinatorIdFor(site))
				.signal(releaseSignal, { owner: workflowInfo().workflowId, keys: keys.slice(i, i + MAX_KEYS) })
				.catch(() => undefined);
	};

	const spawn = (work: Promise<void>) => {
		inflight++;
		void work.finally(() => {
			inflight--;
			wake();
		});
	};

	const flag = (set: (v: boolean) => void, work: Promise<unknown>) => {
		set(true);
		spawn(work.then(() => undefined).finally(() => set(false)));
	};

	for (;;) {
		const now = Date.now();
		let due: Block[];
		const wantNewRun = workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (local ? LOCAL_RUN_EVENTS : bulk ? BULK_RUN_EVENTS : 3000);
		if (local) {
			// Local removals: a removal starts at the expiry when none is in flight (one local activity: one task round
			// trip); entries due meanwhile go together in the next. An add waits while a release of its key is in flight.
			if (pending.length && !adding && !pending.some((p) => releasingKeys.has(blockKey(dp, p.block.range)))) {
				const batch = pending;
				pending = [];
				flag((v) => (adding = v), addBatchBulk(batch));
			}
			// Entries due within `lead` go now: the removal waits for each one's expiry (never removed before it).
			due = removing ? [] : [...byRange.values()].filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now + lead).slice(0, MAX_REMOVE_BATCH);
			if (due.length) {
				// Keys queued in an earlier workflow task are recorded as removed: this removal releases them first.
				const carry = queuedAtHistory < workflowInfo().historyLength && now - releaseSince >= RELEASE_CARRY_MS ? toRelease.splice(0) : [];
				flag((v) => (removing = v), removeDue(due, carry));
			}
			if (toRelease.length && !releasing && !removing) {
				const nextDue = Math.min(...[...byRange.values()].filter((b) => b.state === 'active').map((b) => Date.parse(b.expiresAt)));
				if (wantNewRun || nextDue > now + RELEASE_CARRY_MS || now - releaseSince >= 2 * RELEASE_CARRY_MS) {
					const keys = toRelease.splice(0);
					for (const k of keys) releasingKeys.add(k);
					flag((v) => (releasing = v), signalRelease(keys).finally(() => keys.forEach((k) => releasingKeys.delete(k))));
				}
			}
		} else if (batched) {
			// Group commit: while a batch is in flight, new adds / due entries / releases gather for the next one, so
			// under load the batches grow instead of the activities.
			if (pending.length && !adding) {
				const batch = pending;
				pending = [];
				flag((v) => (adding = v), bulk ? addBatchBulk(batch) : addBatch(batch));
			}
			const cadenceOk = !bulk || now >= lastRemovalAt + REMOVAL_CADENCE_MS;
			due = removing || !cadenceOk ? [] : [...byRange.values()].filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now).slice(0, MAX_REMOVE_BATCH);
			if (due.length) {
				lastRemovalAt = now;
				flag((v) => (removing = v), removeMany(due));
			}
			if (toRelease.length && !releasing) flag((v) => (releasing = v), bulk ? signalRelease(toRelease.splice(0)) : release(site, toRelease.splice(0)));
		} else {
			if (pending.length) {
				const batch = pending;
				pending = [];
				spawn(addBatch(batch));
			}
			due = [...byRange.values()].filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now);
			if (due.length) spawn(removeBatch(due));
			if (toRelease.length) spawn(release(site, toRelease.splice(0)).then(() => undefined));
		}
		const idle = inflight === 0 && (!batched || toRelease.length === 0);
		if (byRange.size === 0 && idle && allHandlersFinished()) return { site_id: site, domain_port_id: dp, ended };
		if (bulk && byRange.size === 0 && idle) {
			// The last handler finishes in the same activation as the batch that ended it: wait for it (nothing else
			// would wake this loop), then look again.
			dirty = false;
			await condition(() => allHandlersFinished() || pending.length > 0 || dirty);
			continue;
		}
		if (wantNewRun && idle && pending.length === 0) {
			await condition(() => allHandlersFinished() && inflight === 0);
			if (!pending.length && (!batched || !toRelease.length))
				await continueAsNew<typeof blocks>({ site_id: site, domain_port_id: dp, maxPrefix: input.maxPrefix, blocks: [...byRange.values()], ended: ended.slice(-100) });
		}
		// The timer: the earliest expiry still ahead (entries already due wait for the removal in flight, which wakes us).
		const t = Date.now();
		let next = Math.min(...[...byRange.values()].filter((b) => b.state === 'active' && (!batched || Date.parse(b.expiresAt) > t)).map((b) => Date.parse(b.expiresAt)));
		// Local: aim `lead` early; a timer set while a removal runs starts when that removal's task completes, after it
		// waited for its entries: count from there.
		let from = t;
		if (local && Number.isFinite(next)) {
			next = Math.max(t, next - lead);
			if (removing) from = Math.max(t, inflightUntil);
		}
		// Bulk: entries already due but held back by the cadence wake us when it allows the next removal.
		if (bulk && !local && !removing && [...byRange.values()].some((b) => b.state === 'active' && Date.parse(b.expiresAt) <= t)) next = Math.min(next, lastRemovalAt + REMOVAL_CADENCE_MS);
		dirty = false;
		// Batched: adds that arrive while a batch is in flight wait for it (its end wakes us), else this loop would spin.
		// Local: an add waiting for a release of its key is woken by that release's end.
		const addBlocked = () => local && pending.some((p) => releasingKeys.has(blockKey(dp, p.block.range)));
		const wakeUp = () => dirty || (pending.length > 0 && !(batched && adding) && !addBlocked());
		if (bulk) {
			// Bulk: a timer is started only when none already pending fires by `next`, and never cancelled (a stale one
			// fires and wakes the loop once): no cancel + restart per wake-up (removal done, release sent, add), which
			// was two commands and a cancelled scope kept by the run each time.
			// Local: what the removal in flight reaches before its task completes needs no timer (its end wakes us).
			const needed = Number.isFinite(next) && !(local && removing && next <= from);
			if (needed && !timers.some((at) => at <= next)) {
				const at = next;
				timers.push(at);
				void sleep(Math.max(1, at - (local ? from : Date.now()))).then(() => {
					timers.splice(timers.indexOf(at), 1);
					if (local) lead = Math.min(MAX_LEAD_MS, Math.max(0, lead + (Date.now() - at - lead) / 4));
					wake();
				});
			}
			await condition(wakeUp);
		} else if (Number.isFinite(next)) await condition(wakeUp, Math.max(1, next - Date.now()));
		else await condition(wakeUp);
	}
}

function holdReason(b: Block): string {
	return `expiring block until ${b.expiresAt} by ${b.by}: ${b.reason}`.slice(0, 480);
}
