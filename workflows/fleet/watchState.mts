import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, startChild, workflowInfo } from '@temporalio/workflow';
import type { attackResponse } from '../attackResponse/attackResponse.mts';
import { WORKFLOW_TYPE, workflowIdFor } from '../../api/runbook/contract.ts';
import {
	sitePlan,
	type SiteState,
	type WatcherCarry,
	type WatcherConfig,
	type WatcherInput,
	type WatcherStatus,
} from './shared.mts';
import type { TickResult } from './tick.mts';

/**
 * A fleet watcher's state between ticks (fleetWatch.mts has the loop): its configuration and the one an Update
 * brought, each site's last check, the sites deferred to the next tick, the concurrency after rate limiting, the
 * runbooks it started. Starting a runbook is its only command; everything else is arithmetic on workflow time.
 */
export class WatchState {
	cfg: WatcherConfig;
	pending: WatcherConfig | undefined;
	concurrency: number;
	deferred: string[];
	readonly states: Map<string, SiteState>;
	/** Runbooks this run started and that have not finished. */
	readonly children = new Set<string>();
	/** Tick at which a site's runbook was found already running (asked again 3 ticks later at the earliest). */
	private readonly alreadyRunningAt = new Map<string, number>();
	ticks = 0;
	rateLimitedTicks: number;
	lastTickAt: number | undefined;
	lastTickMs: number | undefined;
	nextTickAt: number | undefined;
	/** When the last tick was due (its grid point; its start for a first tick). */
	lastDueAt: number | undefined;
	/** When this run began (a site never checked counts from here for the starvation bound). */
	private readonly runStart = Date.now();
	private readonly carry: WatcherCarry | undefined;

	constructor(input: WatcherInput) {
		const carry = input.carry;
		this.carry = carry;
		this.cfg = input.config;
		this.concurrency = Math.max(
			1,
			Math.min(this.cfg.settings.concurrency, carry?.concurrency ?? this.cfg.settings.concurrency),
		);
		this.deferred = carry?.deferred ?? [];
		this.states = new Map(carry?.states ?? []);
		this.rateLimitedTicks = carry?.rateLimitedTicks ?? 0;
		this.nextTickAt = carry?.nextTickAt;
		this.lastTickAt = carry?.lastTickAt;
		this.lastTickMs = carry?.lastTickMs;
		// Quiet sites' check times carried over continue-as-new (fleet-check-times): the bound counts from them.
		const checkedAt = carry?.checkedAt ?? [];
		for (let i = 0; i < input.config.sites.length && i < checkedAt.length; i++) {
			const id = input.config.sites[i].site_id;
			const at = checkedAt[i];
			if (!(typeof at === 'number' && at > 0)) continue;
			const st = this.states.get(id);
			if (!st) this.states.set(id, { at, state: 'quiet' });
			else if (st.at === undefined) this.states.set(id, { ...st, at });
		}
	}

	get stretch(): number {
		return this.cfg.settings.maxIntervalStretch ?? 3;
	}

	/** How many intervals ago a site was last checked (from the run's start when never). */
	ageIntervals(site: string, now: number): number {
		return (now - (this.states.get(site)?.at ?? this.runStart)) / (this.cfg.settings.intervalSeconds * 1000);
	}

	/** The oldest check in intervals, and how many sites are past the starvation bound. */
	oldest(now: number): { max: number; over: number } {
		let max = 0;
		let over = 0;
		for (const s of this.cfg.sites) {
			const a = this.ageIntervals(s.site_id, now);
			if (a > max) max = a;
			if (a > this.stretch) over++;
		}
		return { max, over };
	}

	status(): WatcherStatus {
		const { cfg } = this;
		const old = this.oldest(Date.now());
		return {
			fleet: cfg.fleet,
			index: cfg.index,
			revision: cfg.revision,
			settings: cfg.settings,
			concurrency: this.concurrency,
			ticks: this.ticks,
			runs: (this.carry?.runs ?? 0) + 1,
			lastTickAt: this.lastTickAt,
			lastTickMs: this.lastTickMs,
			nextTickAt: this.nextTickAt,
			rateLimitedTicks: this.rateLimitedTicks,
			maxIntervalStretch: this.stretch,
			oldestCheckIntervals: Math.round(old.max * 100) / 100,
			overdue: old.over,
			sites: cfg.sites.map((s) => ({
				site_id: s.site_id,
				customer_id: s.customer_id,
				...(this.states.get(s.site_id) ?? { state: 'unchecked' as const }),
			})),
		};
	}

	/** The configuration an Update brought, from now on. */
	applyPending(): void {
		if (!this.pending) return;
		const old = this.cfg;
		this.cfg = this.pending;
		this.pending = undefined;
		const keep = new Set(this.cfg.sites.map((s) => s.site_id));
		for (const k of [...this.states.keys()]) if (!keep.has(k)) this.states.delete(k);
		this.deferred = this.deferred.filter((s) => keep.has(s));
		if (this.cfg.settings.concurrency !== old.settings.concurrency) this.concurrency = this.cfg.settings.concurrency;
		// A shorter interval takes effect at once; a longer one from the tick after next.
		if (this.nextTickAt !== undefined && this.lastDueAt !== undefined)
			this.nextTickAt = Math.min(this.nextTickAt, this.lastDueAt + this.cfg.settings.intervalSeconds * 1000);
	}

	/**
	 * This tick's sites: under fleet-check-times every site in order of its last check, oldest first (never checked
	 * first); before it, the urgent sites, then the deferred ones, then the rest. Urgent: a site that would pass
	 * maxIntervalStretch intervals unchecked by this tick's end (1.5 intervals before the bound: a site this tick cannot
	 * reach still has the next tick's start); empty before fleet-budget-order.
	 */
	tickOrder(tickAt: number, bounded: boolean, timed: boolean): { urgent: Set<string>; order: string[] } {
		const { cfg, states, deferred } = this;
		const urgent = bounded
			? new Set(
					cfg.sites
						.map((s) => ({ id: s.site_id, age: this.ageIntervals(s.site_id, tickAt) }))
						.filter((x) => x.age >= this.stretch - 1.5)
						.sort((a, b) => b.age - a.age)
						.map((x) => x.id),
				)
			: new Set<string>();
		const first = new Set([...urgent, ...deferred]);
		const order = timed
			? cfg.sites
					.map((s, i) => ({ id: s.site_id, i, at: states.get(s.site_id)?.at ?? 0 }))
					.sort((a, b) => a.at - b.at || a.i - b.i)
					.map((x) => x.id)
			: [
					...urgent,
					...deferred.filter((s) => !urgent.has(s)),
					...cfg.sites.map((s) => s.site_id).filter((s) => !first.has(s)),
				];
		return { urgent, order };
	}

	/** One runbook per site: the id rule refuses a second one; a runbook found running is not asked again for 3 ticks. */
	startRunbooks(attacked: string[]): Promise<void>[] {
		return attacked
			.filter((s) => {
				if (this.children.has(s)) return false;
				const asked = this.alreadyRunningAt.get(s);
				return asked === undefined || this.ticks - asked >= 3;
			})
			.map((s) => this.startRunbook(s));
	}

	private async startRunbook(siteId: string): Promise<void> {
		const site = this.cfg.sites.find((s) => s.site_id === siteId);
		if (!site) return;
		const st = this.states.get(siteId) as SiteState;
		const id = workflowIdFor(siteId);
		try {
			const h = await startChild<typeof attackResponse>(WORKFLOW_TYPE.attackResponse, {
				workflowId: id,
				args: [{ plan: sitePlan(this.cfg.template, site) }],
				taskQueue: this.cfg.taskQueue ?? workflowInfo().taskQueue,
				parentClosePolicy: ParentClosePolicy.ABANDON,
			});
			st.runbook = { id, at: Date.now(), by: 'started' };
			this.children.add(siteId);
			void h.result().then(
				() => this.children.delete(siteId),
				() => this.children.delete(siteId),
			);
		} catch (e) {
			if (
				e instanceof WorkflowExecutionAlreadyStartedError ||
				(e as Error)?.name === 'WorkflowExecutionAlreadyStartedError'
			)
				st.runbook = { id, at: Date.now(), by: 'already-running' };
			else st.why = `runbook not started: ${(e as Error).message}`;
			if (st.runbook?.by === 'already-running') this.alreadyRunningAt.set(siteId, this.ticks);
		}
	}

	/** After a tick: the deferred sites, concurrency halved when rate limited (regained one step per clean tick). */
	afterTick(t: TickResult, tickAt: number): void {
		this.deferred = t.deferred;
		if (t.rateLimited) {
			this.rateLimitedTicks++;
			this.concurrency = Math.max(1, Math.floor(this.concurrency / 2));
		} else if (this.concurrency < this.cfg.settings.concurrency) this.concurrency++;
		this.ticks++;
		this.lastTickAt = tickAt;
		this.lastTickMs = Date.now() - tickAt;
	}

	/** What the next run must not forget (continue-as-new). */
	carryInput(timed: boolean): WatcherInput {
		const { cfg, states } = this;
		const nonQuiet = [...states].filter(([, st]) => st.state !== 'quiet' || st.runbook);
		return {
			config: cfg,
			carry: {
				deferred: this.deferred,
				concurrency: this.concurrency,
				states: nonQuiet,
				nextTickAt: this.nextTickAt,
				runs: (this.carry?.runs ?? 0) + 1,
				rateLimitedTicks: this.rateLimitedTicks,
				lastTickAt: this.lastTickAt,
				lastTickMs: this.lastTickMs,
				...(timed ? { checkedAt: cfg.sites.map((x) => states.get(x.site_id)?.at ?? 0) } : {}),
			},
		};
	}
}
