/**
 * A request budget with priority classes (docs/rate-budget.md): a token bucket for the app and, optionally, one per
 * tenant; callers wait in one queue ordered by class, so a higher class never waits behind a lower one. Pure: the
 * clock and the sleep are injected, so the worker, the CLI and the n8n nodes share it. What share of the cluster's
 * budget this process holds (`setShare`) and how a retry hint reaches the other processes is the host's business
 * (the worker: worker/src/service/budgetShare.mts).
 */

import { sleep as defaultSleep } from './time';

/** Priority classes, most urgent first. */
export const PRIORITY_CLASSES = ['mitigate', 'revert', 'watch', 'report'] as const;
export type PriorityClass = (typeof PRIORITY_CLASSES)[number];

/**
 * The class of a call whose call site names none: reads serve reports and drift, every write is treated as a
 * mitigation (a write left waiting could be the one that matters); token requests come first, every call needs them.
 */
export function defaultClassOf(op: { id: string; safety: string }): PriorityClass {
	if (op.id.startsWith('authorization.')) return 'mitigate';
	return op.safety === 'read' ? 'report' : 'mitigate';
}

export interface BucketSettings {
	/** Requests per second, > 0. */
	rps: number;
	/** Requests that may go at once after a quiet spell, ≥ 1. */
	burst: number;
}

export interface RateBudgetSettings {
	/** The whole cluster's budget for the app. */
	app: BucketSettings;
	/** Each tenant's budget (calls with a tenant key), within the app's. */
	tenant?: BucketSettings;
}

/** A setting that is not a budget: the field and the rule (hosts name their own setting). */
export function budgetSettingIssues(v: unknown, field: string): { field: string; rule: string }[] {
	if (v === undefined) return [];
	if (!v || typeof v !== 'object' || Array.isArray(v)) return [{ field, rule: 'must be an object { rps, burst }' }];
	const o = v as Record<string, unknown>;
	const out: { field: string; rule: string }[] = [];
	if (typeof o.rps !== 'number' || !Number.isFinite(o.rps) || o.rps <= 0)
		out.push({ field: `${field}.rps`, rule: 'must be a number of requests per second greater than 0' });
	if (o.burst !== undefined && (typeof o.burst !== 'number' || !Number.isFinite(o.burst) || o.burst < 1))
		out.push({ field: `${field}.burst`, rule: 'must be a number of requests, at least 1' });
	return out;
}

export interface BudgetWaitEvent {
	cls: PriorityClass;
	/** 'app' or `tenant:<key>`. */
	budget: string;
	waitMs: number;
	/** False: the caller's deadline came first (nothing sent). */
	granted: boolean;
}

export interface RateBudgetOptions extends RateBudgetSettings {
	now?: () => number;
	sleep?: (ms: number) => Promise<void>;
	/**
	 * Tokens the classes below the top leave in the bucket, so a mitigation write finds one at once however many polls
	 * wait (default 1 when this process's burst is at least 2, else 0).
	 */
	reserve?: number;
	onWait?: (e: BudgetWaitEvent) => void;
}

class Bucket {
	tokens: number;
	private at: number;
	constructor(
		private s: BucketSettings,
		private share: number,
		now: number,
	) {
		this.tokens = this.burst;
		this.at = now;
	}
	get rate() {
		return this.s.rps * this.share;
	}
	get burst() {
		return Math.max(1, this.s.burst * this.share);
	}
	setShare(share: number, now: number) {
		this.refill(now);
		this.share = share;
		this.tokens = Math.min(this.tokens, this.burst);
	}
	refill(now: number) {
		if (now > this.at) this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate);
		this.at = Math.max(this.at, now);
	}
	/** ms until `need` tokens are there. */
	waitFor(need: number, now: number) {
		this.refill(now);
		return this.tokens >= need ? 0 : Math.ceil(((need - this.tokens) / this.rate) * 1000);
	}
}

interface Waiter {
	cls: number;
	/** Order within the class: earlier first (`acquire`'s `since`, else the arrival). */
	rank: number;
	seq: number;
	key?: string;
	deadline?: number;
	since: number;
	done: (ok: boolean) => void;
}

/** The longest the queue sleeps before it looks again (a share change, a new class). */
const MAX_NAP_MS = 250;
/**
 * A top-class call (mitigate, revert) that waited longer than this, or gave up, makes the process hungry for the top
 * classes (the cluster then gives it at least an even share). A shorter wait is only the next token's: the queue
 * serves the top classes first, so in a busy process most of them wait a token interval, which is no shortage.
 */
const HIGH_HUNGRY_MS = 250;

export class RateBudget {
	readonly settings: RateBudgetSettings;
	private readonly now: () => number;
	private readonly sleep: (ms: number) => Promise<void>;
	private share = 1;
	private readonly app: Bucket;
	private readonly tenants = new Map<string, Bucket>();
	private waiters: Waiter[] = [];
	private seq = 0;
	private pumping = false;
	private pausedUntil = 0;
	private readonly reserveOpt?: number;
	private readonly onWait?: (e: BudgetWaitEvent) => void;
	/** Demand since the last `takeDemand`: requests asked for, and whether any waited on the bucket or gave up. */
	private asked = 0;
	private starved = false;
	/** The same for the two top classes (mitigate, revert), which the cluster serves before the others. */
	private askedHigh = 0;
	private starvedHigh = false;
	/** Waiters of the lower classes (watch, report) integrated over time (ms × waiters) since `qFrom`. */
	private lowArea = 0;
	private lowAt = 0;
	private qFrom = 0;
	/** Requests granted per class (what the metrics show as budget in use). */
	readonly granted: Record<PriorityClass, number> = { mitigate: 0, revert: 0, watch: 0, report: 0 };

	constructor(o: RateBudgetOptions) {
		const issues = [...budgetSettingIssues(o.app, 'app'), ...budgetSettingIssues(o.tenant, 'tenant')];
		if (issues.length) throw new Error(`rate budget: ${issues.map((i) => `${i.field} ${i.rule}`).join('; ')}`);
		this.settings = {
			app: { rps: o.app.rps, burst: o.app.burst ?? 1 },
			...(o.tenant ? { tenant: { rps: o.tenant.rps, burst: o.tenant.burst ?? 1 } } : {}),
		};
		this.now = o.now ?? Date.now;
		this.sleep = o.sleep ?? defaultSleep;
		this.reserveOpt = o.reserve;
		this.onWait = o.onWait;
		this.app = new Bucket(this.settings.app, 1, this.now());
		this.lowAt = this.qFrom = this.now();
	}

	/** Adds the lower classes' waiters since the last change to the integral (called before the queue changes). */
	private noteQueue(now: number) {
		if (now > this.lowAt) {
			let low = 0;
			for (const w of this.waiters) if (w.cls >= 2) low++;
			this.lowArea += low * (now - this.lowAt);
			this.lowAt = now;
		}
	}

	/** This process's share of the cluster's budget (1/N for N live workers), 0 < share ≤ 1. */
	setShare(share: number): void {
		const s = Number.isFinite(share) ? Math.min(1, Math.max(1e-3, share)) : 1;
		if (s === this.share) return;
		this.share = s;
		const now = this.now();
		this.app.setShare(s, now);
		for (const b of this.tenants.values()) b.setShare(s, now);
	}
	get currentShare(): number {
		return this.share;
	}
	/** This process's rate now (requests per second). */
	get rate(): number {
		return this.app.rate;
	}

	/** Nothing is granted before `until` (ms since epoch): the service's retry hint. */
	pauseUntil(until: number): void {
		if (until > this.pausedUntil) this.pausedUntil = until;
	}
	get paused(): number {
		return this.pausedUntil;
	}

	private get reserve(): number {
		return this.reserveOpt ?? (this.app.burst >= 2 ? 1 : 0);
	}

	private tenantBucket(key: string): Bucket | undefined {
		if (!this.settings.tenant) return undefined;
		let b = this.tenants.get(key);
		if (!b) {
			if (this.tenants.size > 10_000) this.tenants.clear();
			this.tenants.set(key, (b = new Bucket(this.settings.tenant, this.share, this.now())));
		}
		return b;
	}

	/**
	 * Waits for a request's turn: resolves true when it may be sent, false when `deadline` (ms since epoch) comes
	 * first. `key` names the tenant whose budget the request also spends. Within a class the request whose `since`
	 * (ms since epoch: since when what it serves has waited, e.g. when a fleet site's check fell due) is earliest goes
	 * first; without it, or later than now, its arrival counts (first come, first served).
	 */
	acquire(cls: PriorityClass, o: { key?: string; deadline?: number; since?: number } = {}): Promise<boolean> {
		const c = Math.max(0, PRIORITY_CLASSES.indexOf(cls));
		const now = this.now();
		this.ask(c, now);
		const rank = Math.min(now, Number.isFinite(o.since) ? (o.since as number) : now);
		const w: Waiter = { cls: c, rank, seq: this.seq++, key: o.key, deadline: o.deadline, since: now, done: () => {} };
		const p = new Promise<boolean>((resolve) => (w.done = resolve));
		this.waiters.push(w);
		this.waiters.sort((a, b) => a.cls - b.cls || a.rank - b.rank || a.seq - b.seq);
		this.grant();
		if (this.waiters.length) void this.pump();
		return p;
	}

	/**
	 * The turn at once, without a promise, when it is free: nothing waits before it, no pause holds, the deadline has
	 * not come and the buckets (the app's, the tenant's) have a token for its class. True: granted and counted as
	 * `acquire` counts a grant without a wait; false: nothing changed (the caller then waits with `acquire`).
	 */
	tryAcquire(cls: PriorityClass, key?: string, deadline?: number): boolean {
		const c = Math.max(0, PRIORITY_CLASSES.indexOf(cls));
		const now = this.now();
		if (this.waiters.length || now < this.pausedUntil || (deadline !== undefined && now >= deadline)) return false;
		if (this.app.waitFor(this.need(c), now) > 0) return false;
		const t = key !== undefined ? this.tenantBucket(key) : undefined;
		if (t && t.waitFor(1, now) > 0) return false;
		this.ask(c, now);
		this.take(t);
		this.record(c, key, 0, true);
		return true;
	}

	/** A request asked for its turn (the counts the budget's figures report). */
	private ask(c: number, now: number) {
		this.asked++;
		if (c < 2) this.askedHigh++;
		this.noteQueue(now);
	}

	/** Tokens of the app's bucket a class needs to go: the top class 1, the others 1 + the reserve kept for it. */
	private need(c: number): number {
		return c === 0 ? 1 : 1 + this.reserve;
	}

	/** A turn granted: one token of the app's bucket and of the tenant's. */
	private take(t: Bucket | undefined) {
		this.app.tokens -= 1;
		if (t) t.tokens -= 1;
	}

	/** Grants every waiter that may go now, most urgent first; returns how long until the next may (ms). */
	private grant(): number {
		const now = this.now();
		this.noteQueue(now);
		let nap = MAX_NAP_MS;
		for (let i = 0; i < this.waiters.length; i++) {
			const w = this.waiters[i];
			if (w.deadline !== undefined && now >= w.deadline) {
				this.starved = true;
				this.waiters.splice(i--, 1);
				this.finish(w, false, now);
				continue;
			}
			if (w.deadline !== undefined) nap = Math.min(nap, w.deadline - now);
			if (now < this.pausedUntil) {
				nap = Math.min(nap, this.pausedUntil - now);
				continue;
			}
			// The app's bucket gates everyone: a waiter it stops stops every waiter after it (same class or lower).
			const appWait = this.app.waitFor(this.need(w.cls), now);
			if (appWait > 0) {
				this.starved = true;
				nap = Math.min(nap, appWait);
				// later waiters only for their deadlines
				for (const x of this.waiters.slice(i + 1)) if (x.deadline !== undefined) nap = Math.min(nap, x.deadline - now);
				break;
			}
			const t = w.key !== undefined ? this.tenantBucket(w.key) : undefined;
			const tWait = t ? t.waitFor(1, now) : 0;
			if (tWait > 0) {
				nap = Math.min(nap, tWait);
				continue; // another tenant's request may go
			}
			this.take(t);
			this.waiters.splice(i--, 1);
			this.finish(w, true, now);
		}
		return Math.max(1, nap);
	}

	private finish(w: Waiter, ok: boolean, now: number) {
		if (w.cls < 2 && (!ok || now - w.since > HIGH_HUNGRY_MS)) this.starvedHigh = true;
		this.record(w.cls, w.key, now - w.since, ok);
		w.done(ok);
	}

	private record(c: number, key: string | undefined, waitMs: number, ok: boolean) {
		const cls = PRIORITY_CLASSES[c];
		if (ok) this.granted[cls]++;
		this.onWait?.({
			cls,
			budget: key !== undefined && this.settings.tenant ? `tenant:${key}` : 'app',
			waitMs,
			granted: ok,
		});
	}

	private async pump(): Promise<void> {
		if (this.pumping) return;
		this.pumping = true;
		try {
			while (this.waiters.length) {
				const nap = this.grant();
				if (!this.waiters.length) break;
				await this.sleep(nap);
			}
		} finally {
			this.pumping = false;
		}
	}

	/**
	 * What this process asked for since the last call (the cluster divides the budget by it): requests (all, and of
	 * the two top classes), whether any waited on the bucket or gave up (all, top classes), and how many calls of the
	 * lower classes waited on average (`lowQueue`: the watch's concurrent lanes, its weight when the budget is short).
	 */
	takeDemand(): { asked: number; hungry: boolean; askedHigh: number; hungryHigh: boolean; lowQueue: number } {
		const now = this.now();
		this.noteQueue(now);
		const r = {
			asked: this.asked,
			hungry: this.starved || this.waiters.length > 0,
			askedHigh: this.askedHigh,
			hungryHigh: this.starvedHigh || this.waiters.some((w) => w.cls < 2 && now - w.since > HIGH_HUNGRY_MS),
			lowQueue: now > this.qFrom ? this.lowArea / (now - this.qFrom) : 0,
		};
		this.asked = this.askedHigh = 0;
		this.starved = this.starvedHigh = false;
		this.lowArea = 0;
		this.qFrom = now;
		return r;
	}

	/** Requests waiting now, per class. */
	waiting(): Record<PriorityClass, number> {
		const out: Record<PriorityClass, number> = { mitigate: 0, revert: 0, watch: 0, report: 0 };
		for (const w of this.waiters) out[PRIORITY_CLASSES[w.cls]]++;
		return out;
	}
}

/**
 * A retry hint in an answer: the `Retry-After` header (seconds or an HTTP date), in ms from `now`; undefined when
 * absent or unreadable. Bounded to 10 minutes (a hostile or broken hint must not stop the cluster for a day).
 */
export function retryAfterMs(headers: Record<string, string> | undefined, now: number): number | undefined {
	if (!headers) return undefined;
	let v: string | undefined;
	for (const k in headers) if (k.toLowerCase() === 'retry-after') v = headers[k];
	if (v === undefined || v.trim() === '') return undefined;
	const s = v.trim();
	let ms: number;
	if (/^\d+(\.\d+)?$/.test(s)) ms = Number(s) * 1000;
	else {
		const t = Date.parse(s);
		if (!Number.isFinite(t)) return undefined;
		ms = t - now;
	}
	return Math.max(0, Math.min(600_000, Math.round(ms)));
}
