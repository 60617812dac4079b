import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
	ActivityFailure,
	ParentClosePolicy,
	allHandlersFinished,
	condition,
	continueAsNew,
	proxyActivities,
	proxyLocalActivities,
	setHandler,
	startChild,
	workflowInfo,
} from '@temporalio/workflow';
import { workflowIdFor } from './defs.mts';
import {
	FLEET_CHECK_ACTIVITY,
	configQuery,
	configureUpdate,
	sitePlan,
	statusQuery,
	type CheckBatchInput,
	type CheckBatchResult,
	type SiteState,
	type WatcherConfig,
	type WatcherInput,
	type WatcherStatus,
} from './fleetShared.mts';

/**
 * A long-running watcher covering many sites (issue 12). Every `intervalSeconds` it checks each of its sites once
 * (`dashboard.isUnderAttack`, through a batch activity that checks `batchSize` sites with bounded concurrency) and
 * starts `attack-response-<site>` for a site under attack (the workflow id keeps it to one per site). Rate limiting
 * stops the tick: the sites not checked are checked first in the next tick, and the concurrency is halved (then
 * regained one step per clean tick). Continued as new every `ticksPerRun` ticks (or when the server suggests it), so
 * its history stays short. `fleetConfigure` (Update) replaces its configuration at the next tick; an empty site list
 * retires it. A killed worker loses nothing: a batch whose result is not in history is checked again on replay.
 */

type Check = (i: CheckBatchInput) => Promise<CheckBatchResult>;
const local = proxyLocalActivities<Record<string, Check>>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 3, initialInterval: '500ms' } });
const regular = proxyActivities<Record<string, Check>>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 3, initialInterval: '500ms' } });

export interface FleetWatchResult {
	fleet: string;
	index: number;
	retired: true;
}

export async function fleetWatch(input: WatcherInput): Promise<FleetWatchResult> {
	let cfg: WatcherConfig = input.config;
	let pending: WatcherConfig | undefined;
	const carry = input.carry;
	let concurrency = Math.max(1, Math.min(cfg.settings.concurrency, carry?.concurrency ?? cfg.settings.concurrency));
	let deferred: string[] = carry?.deferred ?? [];
	const states = new Map<string, SiteState>(carry?.states ?? []);
	/** Runbooks this run started and that have not finished. */
	const children = new Set<string>();
	/** Tick at which a site's runbook was found already running (asked again 3 ticks later at the earliest). */
	const alreadyRunningAt = new Map<string, number>();
	let ticks = 0;
	let rateLimitedTicks = carry?.rateLimitedTicks ?? 0;
	let lastTickAt: number | undefined;
	let lastTickMs: number | undefined;
	let nextTickAt: number | undefined = carry?.nextTickAt;
	/** The tick grid (nextTickAt while waiting; kept while a tick runs). */
	let gridAt: number | undefined = carry?.nextTickAt;

	setHandler(
		configureUpdate,
		(c) => {
			pending = c;
			return { revision: c.revision, sites: c.sites.length };
		},
		{
			validator: (c) => {
				if (!c || c.fleet !== cfg.fleet || c.index !== cfg.index) throw new Error(`fleetConfigure: fleet/index must be ${cfg.fleet}/${cfg.index}`);
				if (!Array.isArray(c.sites) || !c.settings || !(c.settings.intervalSeconds >= 1)) throw new Error('fleetConfigure: sites and settings.intervalSeconds are required');
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
			sites: cfg.sites.map((s) => ({ site_id: s.site_id, customer_id: s.customer_id, ...(states.get(s.site_id) ?? { state: 'unchecked' as const }) })),
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
		if (nextTickAt !== undefined && lastTickAt !== undefined) gridAt = nextTickAt = Math.min(nextTickAt, lastTickAt + cfg.settings.intervalSeconds * 1000);
	};

	const startRunbook = async (siteId: string) => {
		const site = cfg.sites.find((s) => s.site_id === siteId);
		if (!site) return;
		const st = states.get(siteId) as SiteState;
		const id = workflowIdFor(siteId);
		try {
			const h = await startChild('attackResponse', {
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
			if (e instanceof WorkflowExecutionAlreadyStartedError || (e as Error)?.name === 'WorkflowExecutionAlreadyStartedError')
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

		const tickAt = Date.now();
		const { intervalSeconds, batchSize, activities } = cfg.settings;
		nextTickAt = undefined;
		const check = (activities === 'regular' ? regular : local)[FLEET_CHECK_ACTIVITY];
		const first = new Set(deferred);
		const order = [...deferred, ...cfg.sites.map((s) => s.site_id).filter((s) => !first.has(s))];
		deferred = [];
		let limited = false;
		const attacked: string[] = [];
		for (let i = 0; i < order.length; i += batchSize) {
			const batch = order.slice(i, i + batchSize);
			if (limited) {
				deferred.push(...batch);
				continue;
			}
			let r: CheckBatchResult;
			try {
				r = await check({ site_ids: batch, concurrency });
			} catch (e) {
				const why = e instanceof ActivityFailure ? (e.cause?.message ?? e.message) : (e as Error).message;
				for (const s of batch) states.set(s, { ...states.get(s), at: states.get(s)?.at, state: 'error', why });
				continue;
			}
			const now = Date.now();
			const bad = new Map(r.failed);
			const later = new Set(r.deferred);
			const hit = new Set(r.attacked);
			for (const s of batch) {
				const prev = states.get(s);
				if (later.has(s)) states.set(s, { ...prev, state: 'deferred', why: 'rate limited: checked first next tick' });
				else if (bad.has(s)) states.set(s, { ...prev, at: now, state: 'error', why: bad.get(s) });
				else if (hit.has(s)) states.set(s, { at: now, state: 'attack', runbook: prev?.runbook });
				else states.set(s, { at: now, state: 'quiet', runbook: prev?.runbook });
			}
			attacked.push(...r.attacked);
			deferred.push(...r.deferred);
			if (r.rateLimited) limited = true;
		}
		if (limited) {
			rateLimitedTicks++;
			concurrency = Math.max(1, Math.floor(concurrency / 2));
		} else if (concurrency < cfg.settings.concurrency) concurrency++;

		// One runbook per site: the id rule refuses a second one; a runbook found running is not asked again for 3 ticks.
		const starts = attacked.filter((s) => {
			if (children.has(s)) return false;
			const asked = alreadyRunningAt.get(s);
			return asked === undefined || ticks - asked >= 3;
		});
		await Promise.all(starts.map(startRunbook));

		ticks++;
		lastTickAt = tickAt;
		lastTickMs = Date.now() - tickAt;
		// Ticks stay on their grid (no drift from timer latency); a tick that ran past the next one is followed at once.
		const grid = (gridAt ?? tickAt) + intervalSeconds * 1000;
		gridAt = Math.max(grid, Date.now());
		nextTickAt = gridAt;

		if (ticks >= cfg.settings.ticksPerRun || workflowInfo().continueAsNewSuggested) {
			await condition(allHandlersFinished);
			applyPending();
			const nonQuiet = [...states].filter(([, st]) => st.state !== 'quiet' || st.runbook);
			await continueAsNew<typeof fleetWatch>({
				config: cfg,
				carry: { deferred, concurrency, states: nonQuiet, nextTickAt, runs: (carry?.runs ?? 0) + 1, rateLimitedTicks },
			});
		}
	}
}
