import {
	allHandlersFinished,
	condition,
	continueAsNew,
	metricMeter,
	patched,
	setHandler,
	workflowInfo,
} from '@temporalio/workflow';
import {
	configQuery,
	configureUpdate,
	nextGridPoint,
	nextTickAfter,
	statusQuery,
	tickBatches,
	type WatcherInput,
	type WatcherStatus,
} from './shared.mts';
import { runTick } from './tick.mts';
import { WatchState } from './watchState.mts';
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
	const w = new WatchState(input);
	// Rate limiting slows a tick instead of ending it; a late tick is not followed by another within half an interval
	// (runs recorded before replay the old way).
	const paced = patched('fleet-tick-backoff');
	// A tick the request budget held back is followed at once, ticks end on the grid (below; runs recorded before wait
	// for the grid).
	const followBehind = patched('fleet-follow-deferred');
	registerHandlers(w);
	for (;;) {
		w.applyPending();
		if (w.cfg.sites.length === 0) {
			await condition(allHandlersFinished);
			return { fleet: w.cfg.fleet, index: w.cfg.index, retired: true };
		}
		// Wait for the tick (an Update may arrive meanwhile; it is applied and the wait goes on). Control flow depends
		// only on which of the two happened, never on comparing clock readings (those differ between a first run,
		// where local-activity results advance the workflow clock, and a replay).
		if (!(await untilTick(w))) continue;

		const timed = await tick(w, paced, followBehind);

		if (w.ticks >= w.cfg.settings.ticksPerRun || workflowInfo().continueAsNewSuggested) {
			await condition(allHandlersFinished);
			w.applyPending();
			await continueAsNew<typeof fleetWatch>(w.carryInput(timed));
		}
	}
}

/** `fleetConfigure` replaces the configuration at the next tick (its bounds checked first); the two queries. */
function registerHandlers(w: WatchState): void {
	setHandler(
		configureUpdate,
		(c) => {
			w.pending = c;
			return { revision: c.revision, sites: c.sites.length };
		},
		{
			validator: (c) => {
				// The fleet file's bounds (batchSize 0 would never end a tick's batching): refused, nothing changes.
				refuseOn(problems(c, (r, v) => watcherConfigRules(r, v)));
				if (c.fleet !== w.cfg.fleet || c.index !== w.cfg.index)
					throw new Error(`fleetConfigure: fleet/index must be ${w.cfg.fleet}/${w.cfg.index}`);
			},
		},
	);
	setHandler(configQuery, () => w.pending ?? w.cfg);
	setHandler(statusQuery, (): WatcherStatus => w.status());
}

/** Waits for the tick's time, applying Updates that arrive meanwhile; false when the watcher has no sites left. */
async function untilTick(w: WatchState): Promise<boolean> {
	if (w.nextTickAt === undefined) return true;
	for (;;) {
		const updated = await condition(() => w.pending !== undefined, Math.max(1, (w.nextTickAt ?? 0) - Date.now()));
		if (!updated) break;
		w.applyPending();
		if (w.cfg.sites.length === 0) break;
	}
	return w.cfg.sites.length !== 0;
}

/** The oldest check, in intervals (the starvation bound's metric; not emitted on replay). */
function recordOldest(w: WatchState): void {
	metricMeter
		.createGauge(
			'secsvc_fleet_oldest_check_intervals',
			'float',
			'1',
			'intervals since the least recently checked site of a watcher was checked',
		)
		.set(w.oldest(Date.now()).max, { fleet: w.cfg.fleet, watcher: String(w.cfg.index) });
}

/** One tick: the sites in order, their batches through runTick, and when the next tick is due. */
async function tick(w: WatchState, paced: boolean, followBehind: boolean): Promise<boolean> {
	/** When this tick was due (a grid point, or earlier after an Update); undefined for a new watcher's first tick. */
	const due = w.nextTickAt;
	const tickAt = Date.now();
	const { intervalSeconds, batchSize, activities } = w.cfg.settings;
	w.nextTickAt = undefined;
	// Starvation bound: a site that would pass maxIntervalStretch intervals unchecked by this tick's end goes
	// first, in a higher class of the request budget (workflows/fleet/activities.mts); then the deferred sites.
	// Runs recorded before replay the old order (deferred first).
	const bounded = patched('fleet-budget-order');
	// Every site in order of its last check, oldest first (never checked first), and each check timed when its
	// answer came: under a budget the watch is then a round robin, each site's gap about sites ÷ the watch's rate;
	// runs recorded before keep the order above and the batch's return as the check time.
	const timed = patched('fleet-check-times');
	const { urgent, order } = w.tickOrder(tickAt, bounded, timed);
	w.deferred = [];
	// The tick ends an interval after it began; since fleet-follow-deferred, at the watcher's grid point nearest
	// to that (the same for a tick on time). A watcher that is behind follows each tick at once, so its ticks
	// would all start and end together with the other watchers' (they begin together when a fleet is applied):
	// ending on the phase-spread grid keeps one watcher's pause between ticks apart from the others', and the
	// budget it leaves goes to them.
	const tickEnd = followBehind
		? nextGridPoint(tickAt + (intervalSeconds * 1000) / 2, w.cfg.index, intervalSeconds)
		: tickAt + intervalSeconds * 1000;
	// Batches running at once each begin with the oldest sites (runs recorded before cut the order in slices).
	const parallel = w.cfg.settings.parallelBatches ?? 4;
	const batches = tickBatches(
		order,
		batchSize,
		patched('fleet-dealt-batches') && activities === 'regular' ? parallel : 1,
	);
	const t = await runTick(batches, {
		activities,
		backoff: paced,
		checkTimes: timed,
		concurrency: w.concurrency,
		parallel,
		intervalSeconds,
		// No new call after the tick's interval is over (the rest is checked first next tick).
		budgetMs: () => Math.max(500, tickEnd - Date.now()),
		states: w.states,
		// Under fleet-check-times the oldest sites lead every tick; promoting them to a higher class of the budget
		// made the watchers of one worker starve each other in turns (each tick's urgent lanes took every token).
		...(urgent.size && !timed ? { urgent } : {}),
		startRunbooks: (attacked) => w.startRunbooks(attacked),
	});
	w.afterTick(t, tickAt);
	recordOldest(w);
	// Ticks fall on the watcher's grid (tickPhaseMs: watchers spread over the interval; no drift from timer or
	// tick latency). A tick that was due on the grid is followed one interval later; a first tick (or one moved by
	// a configuration change) by the first grid point an interval on. A tick that ran past that is followed at once.
	// Under fleet-check-times, a tick the request budget held back (sites left unchecked because their calls got
	// no turn before its end, not a refusal) is followed at once: the next one begins with the sites waiting
	// longest, so waiting for the grid would only leave the budget idle and those sites older. A tick left
	// behind by time alone (run late after a restart) keeps the grid: following it at once would check again
	// the sites it has just checked.
	const lastDueAt = (w.lastDueAt = due ?? tickAt);
	const behind = followBehind && timed && t.budgetHeld && t.deferred.length > 0 && !t.rateLimited;
	// At once means no timer (`nextTickAt` unset, like a first tick): a timer due now fired about 1 s later on the
	// dev server, a quarter of every 4 s tick with nothing sent (runs recorded before keep the timer).
	w.nextTickAt = behind
		? patched('fleet-behind-no-timer')
			? undefined
			: Date.now()
		: paced
			? Math.max(nextTickAfter(lastDueAt, tickAt + t.lateMs, w.cfg.index, intervalSeconds), Date.now())
			: Math.max(nextGridPoint(lastDueAt + intervalSeconds * 1000, w.cfg.index, intervalSeconds), Date.now());
	return timed;
}
