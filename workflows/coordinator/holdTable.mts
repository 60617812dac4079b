import { isWriteLock, type ClaimRequest, type Hold, type ReleaseRequest, type Successor } from './coordination.mts';

const DEFAULT_TTL = { hold: 25 * 3600, lease: 300 };
/** How long the table remembers that a key's grant ended (a claim `since` before that is answered "cannot tell"). */
const ENDS_KEPT_MS = 5 * 60_000;
/** Clock margin between the claimant's and this workflow's clocks (one server's times; a cluster's hosts differ). */
const CLOCK_MARGIN_MS = 1000;

/**
 * The site coordinator's state (siteCoordinator.mts has the rules): who holds each setting key until when, who waits
 * to succeed a hold, and which successors have not been told yet. Pure: no Temporal commands, so the workflow's
 * handlers and loop decide when anything is sent.
 */
export class HoldTable {
	readonly holds: Map<string, Hold>;
	readonly successors: Map<string, Successor>;
	/** Keys passed to a successor, by owner, not told yet (sent by the main loop). */
	readonly toTell = new Map<string, string[]>();
	/**
	 * The keys of `toTell` that passed by a plain release or the holder's death, not by `handover`: the holder never
	 * said it wrote the setting, so the successor must not take it for its own (it checks like a fresh write).
	 */
	readonly released = new Set<string>();
	/** When each key's last grant ended and whose it was (claims with `since`: coordination.mts). */
	private readonly ended = new Map<string, { owner: string; at: number }>();
	/** The latest end of a setting's LEASE (the coordinator lingers after it: siteCoordinator.mts LINGER_MS). */
	lastLeaseEnd = -Infinity;

	/** `knownFrom`: from when on this run knows every end of a grant (undefined: ends are not tracked). */
	constructor(
		holds: Hold[],
		successors: Successor[],
		private knownFrom?: number,
	) {
		this.holds = new Map(holds.map((h) => [h.key, h]));
		this.successors = new Map(successors.map((x) => [x.key, x]));
	}

	/**
	 * A hold asked beside reads sent at `since` (ISO): true when another owner's grant of one of `keys` ended at or
	 * after then (its write may have landed after the reads), or this run cannot tell (`since` before `knownFrom`).
	 */
	changedSince(owner: string, keys: string[], since: string): boolean {
		const t = Date.parse(since) - CLOCK_MARGIN_MS;
		if (this.knownFrom === undefined || !(t >= this.knownFrom) || keys.some(isWriteLock)) return true;
		return keys.some((k) => {
			const e = this.ended.get(k);
			return e !== undefined && e.owner !== owner && e.at >= t;
		});
	}

	private noteEnd(h: Hold, now: number): void {
		if (this.knownFrom === undefined) return;
		if (h.mode === 'lease' && !isWriteLock(h.key)) this.lastLeaseEnd = now;
		this.ended.set(h.key, { owner: h.owner, at: now });
		if (this.ended.size % 256 !== 0) return;
		// bounded: forget ends older than ENDS_KEPT_MS (a claim from before then is answered "cannot tell")
		this.knownFrom = Math.max(this.knownFrom, now - ENDS_KEPT_MS);
		for (const [k, e] of this.ended) if (e.at < this.knownFrom) this.ended.delete(k);
	}

	/** Ends a hold; a successor waiting for the key gets it (`handedOver`: the holder wrote the setting, see handover). */
	drop(key: string, handedOver = false): void {
		const h = this.holds.get(key);
		if (h) this.noteEnd(h, Date.now());
		this.holds.delete(key);
		const next = this.successors.get(key);
		if (!next) return;
		this.successors.delete(key);
		if (handedOver) this.released.delete(key);
		else this.released.add(key);
		const now = Date.now();
		this.holds.set(key, {
			key,
			owner: next.owner,
			mode: 'hold',
			since: new Date(now).toISOString(),
			until: new Date(now + next.ttlSeconds * 1000).toISOString(),
			reason: next.reason,
		});
		this.toTell.set(next.owner, [...(this.toTell.get(next.owner) ?? []), key]);
	}

	expire(): void {
		const now = Date.now();
		for (const [k, s] of this.successors)
			if (Date.parse(s.since) + s.ttlSeconds * 1000 <= now) this.successors.delete(k);
		for (const [k, h] of this.holds) if (Date.parse(h.until) <= now) this.drop(k);
	}

	live(): Hold[] {
		const now = Date.now();
		return [...this.holds.values()].filter((h) => Date.parse(h.until) > now);
	}

	private others(req: ClaimRequest, modes: Hold['mode'][]): Hold[] {
		return req.keys
			.map((k) => this.holds.get(k))
			.filter((h): h is Hold => h !== undefined && h.owner !== req.owner && modes.includes(h.mode));
	}

	private take(req: ClaimRequest, keys: string[]): void {
		const now = Date.now();
		const until = new Date(now + (req.ttlSeconds ?? DEFAULT_TTL[req.mode]) * 1000).toISOString();
		for (const key of keys) {
			const mine = this.holds.get(key);
			this.holds.set(key, {
				key,
				owner: req.owner,
				mode: req.mode,
				since: mine?.owner === req.owner ? mine.since : new Date(now).toISOString(),
				until,
				reason: req.reason,
			});
		}
	}

	/**
	 * A waiting claim (a hold, or a lease with `wait`): undefined while another owner's lease (a lease: any other
	 * owner's hold or lease) covers one of its keys; else takes every key no other hold has.
	 */
	grantWaiting(req: ClaimRequest): { granted: string[]; held: Hold[] } | undefined {
		this.expire();
		if (this.others(req, req.mode === 'hold' ? ['lease'] : ['lease', 'hold']).length) return undefined;
		const held = this.others(req, ['hold']);
		const granted = req.keys.filter((k) => !held.some((h) => h.key === k));
		this.take(req, granted);
		return { granted, held };
	}

	/** A claim that does not wait: takes the free keys, names the others' holds and leases. */
	grantNow(req: ClaimRequest): { granted: string[]; held: Hold[] } {
		this.expire();
		const held = this.others(req, ['hold', 'lease']);
		const granted = req.keys.filter((k) => !held.some((h) => h.key === k));
		this.take(req, granted);
		return { granted, held };
	}

	/** Registers the claimant as successor of the keys others hold (one successor per key); the keys queued. */
	queue(req: ClaimRequest, held: Hold[]): string[] {
		const queued: string[] = [];
		const now = new Date(Date.now()).toISOString();
		for (const h of held) {
			const s = this.successors.get(h.key);
			if (s && s.owner !== req.owner) continue; // one successor per key: the second one is refused (in held)
			this.successors.set(h.key, {
				key: h.key,
				owner: req.owner,
				ttlSeconds: req.ttlSeconds ?? DEFAULT_TTL.hold,
				reason: req.reason,
				since: s?.since ?? now,
			});
			queued.push(h.key);
		}
		return queued;
	}

	release(req: ReleaseRequest): { released: number; dequeued: number } {
		let released = 0;
		let dequeued = 0;
		const only = req.keys ? new Set(req.keys) : undefined;
		for (const [k, s] of this.successors) {
			if (s.owner !== req.owner || (only && !only.has(k))) continue;
			this.successors.delete(k);
			dequeued++;
		}
		if (req.queuedOnly) return { released, dequeued };
		for (const [k, h] of [...this.holds]) {
			if (h.owner !== req.owner || (only && !only.has(k))) continue;
			this.drop(k);
			released++;
		}
		return { released, dequeued };
	}

	/** The owner's keys that have a successor pass to it now: the holder wrote them, the successor owns them now. */
	handover(req: { owner: string; keys: string[] }): { key: string; to: string }[] {
		this.expire();
		const handedOver: { key: string; to: string }[] = [];
		for (const key of req.keys) {
			const h = this.holds.get(key);
			const next = this.successors.get(key);
			if (!h || h.owner !== req.owner || !next) continue;
			this.drop(key, true);
			handedOver.push({ key, to: next.owner });
		}
		return handedOver;
	}

	/** Nothing held, nobody waiting, nobody to tell. */
	get empty(): boolean {
		return this.holds.size === 0 && this.successors.size === 0 && this.toTell.size === 0;
	}
}
