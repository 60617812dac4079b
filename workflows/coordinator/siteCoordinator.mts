import {
	allHandlersFinished,
	condition,
	continueAsNew,
	getExternalWorkflowHandle,
	patched,
	setHandler,
	sleep,
	workflowInfo,
} from '@temporalio/workflow';
import {
	claimUpdate,
	handedOverSignal,
	handoverUpdate,
	holdsPageQuery,
	holdsQuery,
	HOLDS_PAGE,
	MAX_KEYS,
	releaseSignal,
	releaseUpdate,
	type ClaimRequest,
	type Hold,
	type ReleaseRequest,
	type Successor,
} from './coordination.mts';
import { checkSiteBlockHolds, MAX_SITE_BLOCKS } from '../../api/blockCapacity.ts';
import { packHolds, unpackHolds, type PackedHolds } from './packing.mts';
import { HoldTable } from './holdTable.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { coordinatorRules } from '../input/inputRules.mts';

/**
 * The site's coordinator (entity workflow, id `site-<site>`, started by Update-with-start): the one place that
 * answers "who holds this setting now, and until when". Updates are handled one activation at a time, so two claims
 * can never both get one key. Rules (workflows/README.md "One owner per setting"):
 *  - a HOLD (attack response) waits while another owner's LEASE covers one of its keys, then takes every key no
 *    other hold has; keys another hold has come back as `held`;
 *  - a LEASE (drift enforce, expiring blocks) takes the free keys and gets the others back as `held`; with `wait`
 *    it waits until all its keys are free (HTTP-filter writes, one at a time per domain-port, first come first served);
 *  - holds and leases end when their owner releases them or at their `until` (an owner that died);
 *  - SUCCESSORS (claim `queue: true`, expiring blocks): a hold request for a key another hold has registers as the
 *    key's successor; the key passes to it when the holder hands it over (`handover`: the holder will not undo the
 *    setting), releases it or dies; the successor is told by the signal `handedOver`;
 *  - idle (nothing held, nobody waiting) → the workflow completes at once; the next claim starts a new run (an
 *    Update that reaches a run as it completes fails, and its activity retries against the new run).
 */

export interface SiteCoordinatorInput {
	site_id: string;
	holds?: Hold[];
	/** Since `coordinator-packed-holds`: the holds carried packed (packing.mts). */
	packed?: PackedHolds[];
	successors?: Successor[];
}

/** Completing as soon as nothing is held keeps no coordinator bound to a task queue nobody polls any more. */
const IDLE_MS = 0;
/** Events per run before continuing as new (4000 for runs started before `coordinator-timers`). */
const RUN_EVENTS = 1000;
/**
 * Since `coordinator-lease-ends`: after a LEASE ends the run stays open this long before it completes (and a run
 * continued as new this long after its start), so a fresh run knows that no lease of an earlier run ended later than
 * its own start minus LINGER_MS — what a hold asked beside its reads (`since`) needs to be answered (issue 42).
 * Runs that only saw holds (the attack response's) complete at once, as before.
 */
const LINGER_MS = 5000;

export async function siteCoordinator(input: SiteCoordinatorInput): Promise<{ site_id: string; idleSince: string }> {
	// A packed carry may list more groups than the default list bound (one per add batch or extend).
	failOn('coordinator input', problems(input, coordinatorRules, { maxList: MAX_SITE_BLOCKS }));
	// `coordinator-timers`: one timer for the earliest `until`, started only when none pending fires by then, never
	// cancelled (the unpatched loop's `condition(fn, timeout)` woke every 100 ms while anything was held). Runs
	// recorded before the patch replay the old way (docs/workflows/expiring-blocks.md).
	const lazy = patched('coordinator-timers');
	// `coordinator-packed-holds`: holds carried packed (one group per add batch, packing.mts), so a site may hold
	// MAX_SITE_BLOCKS expiring blocks (api/blockCapacity.ts); runs recorded before it carry one object per hold and
	// keep the lower limit.
	const packed = lazy && patched('coordinator-packed-holds');
	const timers: number[] = [];
	const ends = lazy && patched('coordinator-lease-ends') ? endsFrom() : undefined;
	const table = new HoldTable(
		[...(input.holds ?? []), ...unpackHolds(input.packed ?? [])],
		input.successors ?? [],
		ends?.knownFrom,
	);
	if (ends) table.lastLeaseEnd = ends.lastLeaseEnd;
	const lingering = () => Date.now() < table.lastLeaseEnd + LINGER_MS;
	const { holds, successors, toTell } = table;
	let lastTouched = Date.now();
	let touched = false;
	const touch = () => {
		lastTouched = Date.now();
		touched = true;
	};

	registerHandlers(table, touch, packed);
	const tell = () => tellSuccessors(table, input.site_id);

	for (;;) {
		table.expire();
		if (toTell.size) await tell();
		const now = Date.now();
		if (table.empty && allHandlersFinished() && now - lastTouched >= IDLE_MS && !lingering())
			return { site_id: input.site_id, idleSince: new Date(lastTouched).toISOString() };
		if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (lazy ? RUN_EVENTS : 4000)) {
			await condition(allHandlersFinished);
			if (toTell.size) await tell();
			await continueAsNew<typeof siteCoordinator>({
				site_id: input.site_id,
				...(packed ? { packed: packHolds(holds.values()) } : { holds: [...holds.values()] }),
				successors: [...successors.values()],
			});
		}
		touched = false;
		if (lazy) {
			// Holds end at their `until` (an owner that died); everything else wakes the loop through `touched`; once
			// nothing is held the run completes as soon as the last handler has finished (no timer a worker shutting
			// down could leave unprocessed, keeping the run bound to its task queue).
			const linger = lingering() ? [table.lastLeaseEnd + LINGER_MS] : [];
			const next = Math.min(...[...holds.values()].map((h) => Date.parse(h.until)), ...linger);
			if (Number.isFinite(next) && !timers.some((at) => at <= next)) {
				const at = next;
				timers.push(at);
				void sleep(Math.max(100, at - now)).then(() => {
					timers.splice(timers.indexOf(at), 1);
					touched = true;
				});
			}
			const idle = linger.length === 0;
			await condition(
				() =>
					touched || toTell.size > 0 || (idle && holds.size === 0 && successors.size === 0 && allHandlersFinished()),
			);
			continue;
		}
		const nextExpiry = Math.min(...[...holds.values()].map((h) => Date.parse(h.until)), lastTouched + IDLE_MS);
		await condition(() => touched || toTell.size > 0, Math.max(100, nextExpiry - now));
	}
}

/**
 * What a run knows of ended grants (`coordinator-lease-ends`): a fresh run every lease end up to its start minus
 * LINGER_MS (an earlier run lingered that long after its last one); a run continued as new nothing before its start,
 * and it lingers as if a lease had ended then (the run before may have seen one just before it continued).
 */
function endsFrom(): { knownFrom: number; lastLeaseEnd: number } {
	const info = workflowInfo();
	const start = info.runStartTime.getTime();
	return info.continuedFromExecutionRunId
		? { knownFrom: start, lastLeaseEnd: start }
		: { knownFrom: start - LINGER_MS, lastLeaseEnd: -Infinity };
}

/** The coordinator's Updates, signal and queries over its table; `touch` wakes the main loop. */
function registerHandlers(table: HoldTable, touch: () => void, packed: boolean): void {
	setHandler(
		claimUpdate,
		async (req) => {
			touch();
			if (req.mode === 'hold' || req.wait) {
				// The grant happens inside the predicate: predicates run one after another, so the first waiter whose keys
				// are free takes them before the next waiter's predicate looks.
				let r: ReturnType<typeof table.grantWaiting>;
				const got = () => (r = table.grantWaiting(req)) !== undefined;
				// A bounded wait ends by itself (its caller asks again while alive: coordination.mts `waitSeconds`). Only
				// claims that carry the field take the timer, so histories recorded before it replay unchanged.
				if (req.waitSeconds === undefined) await condition(got);
				else if (req.waitSeconds === 0) {
					if (!got()) return { granted: [], held: [], waiting: true }; // asked once, not waited for
				} else if (!(await condition(got, req.waitSeconds * 1000))) return { granted: [], held: [], waiting: true };
				const { granted, held } = r!;
				touch();
				if (req.queue) return { granted, held, queued: table.queue(req, held) };
				return req.since === undefined
					? { granted, held }
					: { granted, held, changedSince: table.changedSince(req.owner, req.keys, req.since) };
			}
			return table.grantNow(req);
		},
		{
			validator: (req) => {
				validateClaim(req);
				// Expiring blocks: never more holds than this run can carry across continue-as-new.
				if (req.mode === 'hold') checkSiteBlockHolds(req.owner, req.keys, table.live(), packed, req.reason);
			},
		},
	);
	const releaseFor = (req: ReleaseRequest) => {
		touch();
		return table.release(req);
	};
	setHandler(releaseUpdate, releaseFor, { validator: validateRelease });
	setHandler(releaseSignal, (req) => {
		try {
			validateRelease(req);
		} catch {
			return; // a signal cannot be refused: a malformed release changes nothing
		}
		releaseFor(req);
	});
	setHandler(
		handoverUpdate,
		(req) => {
			touch();
			return { handedOver: table.handover(req) };
		},
		{ validator: validateHandover },
	);
	// A query must not change state: expired holds are filtered here, dropped by the main loop.
	setHandler(holdsQuery, () => table.live());
	setHandler(holdsPageQuery, (p) => {
		const all = table.live();
		const offset = Math.max(0, Math.floor(Number(p?.offset) || 0));
		const limit = Math.min(HOLDS_PAGE, Math.max(1, Math.floor(Number(p?.limit) || HOLDS_PAGE)));
		return { total: all.length, holds: all.slice(offset, offset + limit) };
	});
}

/**
 * Tells successors which keys passed to them (a successor that is gone is not waited for), and which of them came by a
 * plain release or the holder's death (`released`), not by hand-over. The same command as before (only its payload
 * grew): a run recorded before replays unchanged (fixtures/site-coordinator-released-run.json), so no patch.
 */
async function tellSuccessors(table: HoldTable, site_id: string): Promise<void> {
	const batch = [...table.toTell];
	const isReleased = new Set(table.released);
	table.toTell.clear();
	table.released.clear();
	await Promise.all(
		batch.map(([owner, keys]) => {
			const released = keys.filter((k) => isReleased.has(k));
			return getExternalWorkflowHandle(owner)
				.signal(handedOverSignal, released.length ? { site_id, keys, released } : { site_id, keys })
				.catch(() => undefined);
		}),
	);
}

function validateClaim(req: ClaimRequest): void {
	if (!req || typeof req !== 'object') throw new Error('claim: must be an object');
	if (typeof req.owner !== 'string' || !req.owner || req.owner.length > 500)
		throw new Error('owner: must be a workflow id (1–500 characters)');
	if (req.mode !== 'hold' && req.mode !== 'lease') throw new Error('mode: must be hold or lease');
	if (
		!Array.isArray(req.keys) ||
		req.keys.length > MAX_KEYS ||
		req.keys.some((k) => typeof k !== 'string' || !k || k.length > 500)
	)
		throw new Error(`keys: must be a list of at most ${MAX_KEYS} setting keys (1–500 characters each)`);
	if (
		req.ttlSeconds !== undefined &&
		(!Number.isInteger(req.ttlSeconds) || req.ttlSeconds < 1 || req.ttlSeconds > 40 * 86400)
	)
		throw new Error('ttlSeconds: must be an integer from 1 to 3456000');
	if (req.wait && req.mode !== 'lease') throw new Error('wait: only for leases');
	if (
		req.waitSeconds !== undefined &&
		(!Number.isInteger(req.waitSeconds) ||
			req.waitSeconds < 0 ||
			req.waitSeconds > 60 ||
			!(req.mode === 'hold' || req.wait))
	)
		throw new Error('waitSeconds: an integer from 0 to 60, only for a hold or a lease with wait');
	if (req.queue && req.mode !== 'hold') throw new Error('queue: only for holds');
	if (req.since !== undefined && (req.mode !== 'hold' || typeof req.since !== 'string' || !(Date.parse(req.since) > 0)))
		throw new Error('since: an ISO time, only for a hold');
}

function validateRelease(req: ReleaseRequest): void {
	if (!req || typeof req.owner !== 'string' || !req.owner) throw new Error('owner: must be a non-empty string');
	if (req.keys !== undefined && (!Array.isArray(req.keys) || req.keys.length > MAX_KEYS))
		throw new Error(`keys: must be a list of at most ${MAX_KEYS} setting keys`);
}

function validateHandover(req: { owner: string; keys: string[] }): void {
	if (!req || typeof req.owner !== 'string' || !req.owner) throw new Error('owner: must be a non-empty string');
	if (
		!Array.isArray(req.keys) ||
		req.keys.length > MAX_KEYS ||
		req.keys.some((k: unknown) => typeof k !== 'string' || !k || k.length > 500)
	)
		throw new Error(`keys: must be a list of at most ${MAX_KEYS} setting keys (1–500 characters each)`);
}
