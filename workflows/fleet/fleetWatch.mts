import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
	ParentClosePolicy,
	allHandlersFinished,
	condition,
	continueAsNew,
	metricMeter,
	patched,
	setHandler,
	startChild,
	workflowInfo,
} from '@temporalio/workflow';
import type { attackResponse } from '../attackResponse/attackResponse.mts';
import { WORKFLOW_TYPE, workflowIdFor } from '../../api/runbook/contract.ts';
import {
	configQuery,
	configureUpdate,
	nextGridPoint,
	nextTickAfter,
	sitePlan,
	statusQuery,
	type SiteState,
	type WatcherConfig,
	type WatcherInput,
	type WatcherStatus,
} from './shared.mts';
import { runTick } from './tick.mts';
import { failOn, problems, refuseOn } from '../input/inputChecks.mts';
import { watcherConfigRules, watcherInputRules } from '../input/inputRules.mts';

/**
 * A long-running watcher covering many sites (issue 12). Every `intervalSeconds`, on its own tick grid (watchers
 * spread over the interval), it checks each of its sites once (`dashboard.isUnderAttack`, through batch activities
 * that check `batchSize` sites with bounded concurrency: workflows/fleet/tick.mts) and starts
 * `attack-response-<site>` for a site under attack as soon as its batch returns (the workflow id keeps it to one per
 * site). Rate limiting
 * stops the tick: the sites not checked are checked first in the next tick, and the concurrency is halved (then
 * regained one step per clean tick). Continued as new every `ticksPerRun` ticks (or when the server suggests it), so
 * its history stays short. `fleetConfigure` (Update) replaces its configuration at the next tick; an empty site list
 * retires it. A killed worker loses nothing: a batch whose result is not in history is checked again (a regular
 * batch's retry skips the sites its heartbeats recorded as checked).
 */

export interface FleetWatchResult {
	fleet: string;
	index: number;
	retired: true;
}

export async function fleetWatch(input: WatcherInput): Promise<FleetWatchResult> {
	failOn('fleet watcher input', problems(input, watcherInputRules));
	let cfg: WatcherConfig = input.config;
	let pending: WatcherConfig | undefined;
	const carry = input.carry;
	let concurrency = Math.max(1, Math.min(cfg.settings.concurrency, carry?.concurrency ?? cfg.settings.concurrency));
	let deferred: string[] = carry?.deferred ?? [];
	const states = new Map<string, SiteState>(carry?.states ?? []);
	// Quiet sites' check times carried over continue-as-new (fleet-check-times): the bound counts from them.
	if (carry?.checkedAt)
		for (let i = 0; i < input.config.sites.length && i < carry.checkedAt.length; i++) {
			const id = input.config.sites[i].site_id;
			const at = carry.checkedAt[i];
			if (!(typeof at === 'number' && at > 0)) continue;
			const st = states.get(id);
			if (!st) states.set(id, { at, state: 'quiet' });
			else if (st.at === undefined) states.set(id, { ...st, at });
		}
	/** Runbooks this run started and that have not finished. */
	const children = new Set<string>();
	/** Tick at which a site's runbook was found already running (asked again 3 ticks later at the earliest). */
	const alreadyRunningAt = new Map<string, number>();
	let ticks = 0;
	let rateLimitedTicks = carry?.rateLimitedTicks ?? 0;
	let lastTickAt: number | undefined;
	let lastTickMs: number | undefined;
	let nextTickAt: number | undefined = carry?.nextTickAt;
	/** When the last tick was due (its grid point; its start for a first tick). */
	let lastDueAt: number | undefined;

	// Rate limiting slows a tick instead of ending it; a late tick is not followed by another within half an interval
	// (runs recorded before replay the old way).
	const paced = patched('fleet-tick-backoff');
	// A tick the request budget held back is followed at once, ticks end on the grid (below; runs recorded before wait
	// for the grid).
	const followBehind = patched('fleet-follow-deferred');
	/** When this run began (a site never checked counts from here for the starvation bound). */
	const runStart = Date.now();
	const stretchOf = () => cfg.settings.maxIntervalStretch ?? 3;
	/** How many intervals ago a site was last checked (from the run's start when never). */
	const ageIntervals = (site: string, now: number) =>
		(now - (states.get(site)?.at ?? runStart)) / (cfg.settings.intervalSeconds * 1000);
	const oldest = (now: number) => {
		let max = 0;
		let over = 0;
		for (const s of cfg.sites) {
			const a = ageIntervals(s.site_id, now);
			if (a > max) max = a;
			if (a > stretchOf()) over++;
		}
		return { max, over };
	};

	setHandler(
		configureUpdate,
		(c) => {
			pending = c;
			return { revision: c.revision, sites: c.sites.length };
		},
		{
			validator: (c) => {
				// The fleet file's bounds (batchSize 0 would never end a tick's batching): refused, nothing changes.
				refuseOn(problems(c, (r, v) => watcherConfigRules(r, v)));
				if (c.fleet !== cfg.fleet || c.index !== cfg.index)
					throw new Error(`fleetConfigure: fleet/index must be ${cfg.fleet}/${cfg.index}`);
			},
		},
	);
	setHandler(configQuery, () => pending ?? cfg);
	setHandler(
		statusQuery,
		(): WatcherStatus => ({
			fleet: cfg.fleet,
			index: cfg.index,
			revision: cfg.revision,
			settings: cfg.settings,
			concurrency,
			ticks,
			runs: (carry?.runs ?? 0) + 1,
			lastTickAt,
			lastTickMs,
			nextTickAt,
			rateLimitedTicks,
			maxIntervalStretch: stretchOf(),
			oldestCheckIntervals: Math.round(oldest(Date.now()).max * 100) / 100,
			overdue: oldest(Date.now()).over,
			sites: cfg.sites.map((s) => ({
				site_id: s.site_id,
				customer_id: s.customer_id,
				...(states.get(s.site_id) ?? { state: 'unchecked' as const }),
			})),
		}),
	);

	const applyPending = () => {
		if (!pending) return;
		const old = cfg;
		cfg = pending;
		pending = undefined;
		const keep = new Set(cfg.sites.map((s) => s.site_id));
		for (const k of [...states.keys()]) if (!keep.has(k)) states.delete(k);
		deferred = deferred.filter((s) => keep.has(s));
		if (cfg.settings.concurrency !== old.settings.concurrency) concurrency = cfg.settings.concurrency;
		// A shorter interval takes effect at once; a longer one from the tick after next.
		if (nextTickAt !== undefined && lastDueAt !== undefined)
			nextTickAt = Math.min(nextTickAt, lastDueAt + cfg.settings.intervalSeconds * 1000);
	};

	const startRunbook = async (siteId: string) => {
		const site = cfg.sites.find((s) => s.site_id === siteId);
		if (!site) return;
		const st = states.get(siteId) as SiteState;
		const id = workflowIdFor(siteId);
		try {
			const h = await startChild<typeof attackResponse>(WORKFLOW_TYPE.attackResponse, {
				workflowId: id,
				args: [{ plan: sitePlan(cfg.template, site) }],
				taskQueue: cfg.taskQueue ?? workflowInfo().taskQueue,
				parentClosePolicy: ParentClosePolicy.ABANDON,
			});
			st.runbook = { id, at: Date.now(), by: 'started' };
			children.add(siteId);
			void h.result().then(
				() => children.delete(siteId),
				() => children.delete(siteId),
			);
		} catch (e) {
			if (
				e instanceof WorkflowExecutionAlreadyStartedError ||
				(e as Error)?.name === 'WorkflowExecutionAlreadyStartedError'
			)
				st.runbook = { id, at: Date.now(), by: 'already-running' };
			else st.why = `runbook not started: ${(e as Error).message}`;
			if (st.runbook?.by === 'already-running') alreadyRunningAt.set(siteId, ticks);
		}
	};

	for (;;) {
		applyPending();
		if (cfg.sites.length === 0) {
			await condition(allHandlersFinished);
			return { fleet: cfg.fleet, index: cfg.index, retired: true };
		}
		// Wait for the tick (an Update may arrive meanwhile; it is applied and the wait goes on). Control flow depends
		// only on which of the two happened, never on comparing clock readings (those differ between a first run,
		// where local-activity results advance the workflow clock, and a replay).
		if (nextTickAt !== undefined) {
			for (;;) {
				const updated = await condition(() => pending !== undefined, Math.max(1, (nextTickAt ?? 0) - Date.now()));
				if (!updated) break;
				applyPending();
				if (cfg.sites.length === 0) break;
			}
			if (cfg.sites.length === 0) continue;
		}

		/** When this tick was due (a grid point, or earlier after an Update); undefined for a new watcher's first tick. */
		const due = nextTickAt;
		const tickAt = Date.now();
		const { intervalSeconds, batchSize, activities } = cfg.settings;
		nextTickAt = undefined;
		// Starvation bound: a site that would pass maxIntervalStretch intervals unchecked by this tick's end goes
		// first, in a higher class of the request budget (worker/src/activities/fleet.mts); then the deferred sites.
		// Runs recorded before replay the old order (deferred first).
		const bounded = patched('fleet-budget-order');
		// Every site in order of its last check, oldest first (never checked first), and each check timed when its
		// answer came: under a budget the watch is then a round robin, each site's gap about sites ÷ the watch's rate;
		// runs recorded before keep the order above and the batch's return as the check time.
		const timed = patched('fleet-check-times');
		// (1.5 intervals before the bound: a site this tick cannot reach still has the next tick's start)
		const urgent = bounded
			? new Set(
					cfg.sites
						.map((s) => ({ id: s.site_id, age: ageIntervals(s.site_id, tickAt) }))
						.filter((x) => x.age >= stretchOf() - 1.5)
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
		deferred = [];
		// The tick ends an interval after it began; since fleet-follow-deferred, at the watcher's grid point nearest
		// to that (the same for a tick on time). A watcher that is behind follows each tick at once, so its ticks
		// would all start and end together with the other watchers' (they begin together when a fleet is applied):
		// ending on the phase-spread grid keeps one watcher's pause between ticks apart from the others', and the
		// budget it leaves goes to them.
		const tickEnd = followBehind
			? nextGridPoint(tickAt + (intervalSeconds * 1000) / 2, cfg.index, intervalSeconds)
			: tickAt + intervalSeconds * 1000;
		const batches: string[][] = [];
		for (let i = 0; i < order.length; i += batchSize) batches.push(order.slice(i, i + batchSize));
		const t = await runTick(batches, {
			activities,
			backoff: paced,
			checkTimes: timed,
			concurrency,
			parallel: cfg.settings.parallelBatches ?? 4,
			intervalSeconds,
			// No new call after the tick's interval is over (the rest is checked first next tick).
			budgetMs: () => Math.max(500, tickEnd - Date.now()),
			states,
			// Under fleet-check-times the oldest sites lead every tick; promoting them to a higher class of the budget
			// made the watchers of one worker starve each other in turns (each tick's urgent lanes took every token).
			...(urgent.size && !timed ? { urgent } : {}),
			// One runbook per site: the id rule refuses a second one; a runbook found running is not asked again for 3 ticks.
			startRunbooks: (attacked) =>
				attacked
					.filter((s) => {
						if (children.has(s)) return false;
						const asked = alreadyRunningAt.get(s);
						return asked === undefined || ticks - asked >= 3;
					})
					.map(startRunbook),
		});
		deferred = t.deferred;
		if (t.rateLimited) {
			rateLimitedTicks++;
			concurrency = Math.max(1, Math.floor(concurrency / 2));
		} else if (concurrency < cfg.settings.concurrency) concurrency++;

		ticks++;
		// the oldest check, in intervals (the starvation bound's metric; not emitted on replay)
		metricMeter
			.createGauge(
				'secsvc_fleet_oldest_check_intervals',
				'float',
				'1',
				'intervals since the least recently checked site of a watcher was checked',
			)
			.set(oldest(Date.now()).max, { fleet: cfg.fleet, watcher: String(cfg.index) });
		lastTickAt = tickAt;
		lastTickMs = Date.now() - tickAt;
		// Ticks fall on the watcher's grid (tickPhaseMs: watchers spread over the interval; no drift from timer or
		// tick latency). A tick that was due on the grid is followed one interval later; a first tick (or one moved by
		// a configuration change) by the first grid point an interval on. A tick that ran past that is followed at once.
		// Under fleet-check-times, a tick the request budget held back (sites left unchecked because their calls got
		// no turn before its end, not a refusal) is followed at once: the next one begins with the sites waiting
		// longest, so waiting for the grid would only leave the budget idle and those sites older. A tick left
		// behind by time alone (run late after a restart) keeps the grid: following it at once would check again
		// the sites it has just checked.
		lastDueAt = due ?? tickAt;
		const behind = followBehind && timed && t.budgetHeld && t.deferred.length > 0 && !t.rateLimited;
		nextTickAt = behind
			? Date.now()
			: paced
				? Math.max(nextTickAfter(lastDueAt, tickAt + t.lateMs, cfg.index, intervalSeconds), Date.now())
				: Math.max(nextGridPoint(lastDueAt + intervalSeconds * 1000, cfg.index, intervalSeconds), Date.now());

		if (ticks >= cfg.settings.ticksPerRun || workflowInfo().continueAsNewSuggested) {
			await condition(allHandlersFinished);
			applyPending();
			const nonQuiet = [...states].filter(([, st]) => st.state !== 'quiet' || st.runbook);
			await continueAsNew<typeof fleetWatch>({
				config: cfg,
				carry: {
					deferred,
					concurrency,
					states: nonQuiet,
					nextTickAt,
					runs: (carry?.runs ?? 0) + 1,
					rateLimitedTicks,
					...(timed ? { checkedAt: cfg.sites.map((x) => states.get(x.site_id)?.at ?? 0) } : {}),
				},
			});
		}
	}
}
