/**
 * Fleet watch: what the watcher workflows, the worker's batch activity and the CLI share. Pure (no zod, no I/O):
 * the workflow bundle imports it. The fleet file's zod schema is in workflows/fleet/clientConfig.mts.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

/** Per-site changes to the plan template (issue 12: cooldown, approval, protected ranges). */
export interface SiteOverrides {
	cooldownSeconds?: number;
	approval?: { required?: boolean; timeoutSeconds?: number; onTimeout?: 'approve' | 'reject' };
	/** Added to the template's `blacklist.protectedRanges` (a site never loses the template's protections). */
	protectedRanges?: string[];
}

export interface FleetSite {
	site_id: string;
	customer_id: string;
	domain_ports: string[];
	overrides?: SiteOverrides;
}

export interface FleetSettings {
	/** Every site is checked once per interval. */
	intervalSeconds: number;
	/** Sites per batch activity. */
	batchSize: number;
	/** is_under_attack calls in flight at once per batch activity (halved on rate limiting, regained one by one). */
	concurrency: number;
	/**
	 * Regular batches: batch activities in flight at once per watcher (default 4). Local batches run one after
	 * another (a runbook start leaves at once only when no local activity is outstanding).
	 */
	parallelBatches?: number;
	/** Batches as local activities (one Temporal action per tick for all of them) or regular activities (one each). */
	activities: 'local' | 'regular';
	/** Ticks per run before continue-as-new (history stays short). */
	ticksPerRun: number;
	/**
	 * Starvation bound: under a request budget the watch stretches its interval, but every site is checked at least
	 * once per this many intervals (default 3); a site near it is checked ahead of the others' polls.
	 */
	maxIntervalStretch?: number;
}

/** One watcher's whole configuration, passed by value (plans hold no secrets). */
export interface WatcherConfig {
	fleet: string;
	index: number;
	/** Set by `secsvc fleet apply` (time of the apply); shown by status. */
	revision: string;
	taskQueue?: string;
	settings: FleetSettings;
	/** Plan fields shared by every site (everything but site_id, customer_id, domain_ports). */
	template: Record<string, unknown>;
	sites: FleetSite[];
}

/** Carried across continue-as-new: what the next run must not forget. */
export interface WatcherCarry {
	/** Sites not checked in the last tick (rate limited): checked first in the next one. */
	deferred: string[];
	/** Current concurrency (after rate-limit slow-downs). */
	concurrency: number;
	/** Non-quiet per-site states (attack, error, deferred, runbook) so status survives continue-as-new. */
	states: [string, SiteState][];
	/** When the next tick is due (ms since epoch). */
	nextTickAt?: number;
	runs: number;
	/** Ticks cut short by rate limiting, over all runs. */
	rateLimitedTicks?: number;
	/** The last tick of the run before (the status shows it until this run ticks). */
	lastTickAt?: number;
	lastTickMs?: number;
	/**
	 * When each site of `config.sites` (same order) was last checked (ms since epoch, 0 = never), so the starvation
	 * bound and the status count across continue-as-new (`patched('fleet-check-times')`).
	 */
	checkedAt?: number[];
}

export interface WatcherInput {
	config: WatcherConfig;
	carry?: WatcherCarry;
}

export interface SiteState {
	/** Time of the last completed check (ms since epoch), absent before the first. */
	at?: number;
	state: 'quiet' | 'attack' | 'deferred' | 'error' | 'unchecked';
	why?: string;
	/** Runbook this watcher started (or found running), and when. */
	runbook?: { id: string; at: number; by: 'started' | 'already-running' };
}

export interface WatcherStatus {
	fleet: string;
	index: number;
	revision: string;
	settings: FleetSettings;
	concurrency: number;
	ticks: number;
	runs: number;
	lastTickAt?: number;
	lastTickMs?: number;
	nextTickAt?: number;
	/** Ticks cut short by rate limiting, over all runs of this watcher. */
	rateLimitedTicks: number;
	/** The starvation bound (settings.maxIntervalStretch, default 3) and the oldest check now, in intervals. */
	maxIntervalStretch?: number;
	oldestCheckIntervals?: number;
	/** Sites whose last check is older than the bound. */
	overdue?: number;
	sites: (SiteState & { site_id: string; customer_id: string })[];
}

/** Input and result of the batch activity (FLEET_CHECK_ACTIVITY). */
export interface CheckBatchInput {
	site_ids: string[];
	concurrency: number;
	/** No new call starts after this many ms from the attempt's start (the rest come back deferred). */
	budgetMs?: number;
	/** Sites past their starvation bound (maxIntervalStretch): checked in a higher class of the request budget. */
	urgent?: string[];
	/**
	 * When each site's check fell due (its last check + the interval, ms since epoch; 0 never checked): its call's place
	 * among the waiting calls of the request budget, longest overdue first, whichever batch or watcher it is in
	 * (docs/rate-budget.md). Not yet due counts as now.
	 */
	dueAt?: Record<string, number>;
}
/** Heartbeat details of the batch activity: what a retried attempt must not check again. */
export interface CheckProgress {
	done: string[];
	attacked: string[];
	failed: [string, string][];
}
export interface CheckBatchResult {
	/** Sites whose is_under_attack said status 1. */
	attacked: string[];
	/** Sites not checked because the API rate limited this batch (checked first next tick). */
	deferred: string[];
	/** Sites whose check failed otherwise: [site, message]. */
	failed: [string, string][];
	rateLimited: boolean;
	/** The batch ran out of its time budget (or was cancelled): `deferred` holds the sites not sent. */
	outOfTime?: boolean;
	/** The worker's request budget (api.rateLimit) held a call past the batch's time budget: the watch is behind. */
	budgetHeld?: boolean;
	/** When this attempt began sending (the worker's clock, ms): when the tick really ran, also after a replay. */
	startedAt?: number;
	/** When each site checked by this attempt was answered (the worker's clock, ms). */
	checkedAt?: Record<string, number>;
}

/**
 * Bounds of a fleet's numbers ([min, max]), the same for the fleet file (worker/src/fleetConfig.mts) and a watcher's
 * input / `fleetConfigure` Update (workflows/input/inputRules.mts): e.g. `batchSize: 0` would never end a tick's batching.
 */
export const FLEET_BOUNDS = {
	fleetRe: /^[A-Za-z0-9_.-]{1,40}$/,
	intervalSeconds: [1, 3600],
	sitesPerWatcher: [1, 5000],
	batchSize: [1, 1000],
	concurrency: [1, 64],
	parallelBatches: [1, 64],
	ticksPerRun: [1, 10_000],
	maxIntervalStretch: [1, 100],
	/** Highest watcher index (a fleet of 10,000 watchers). */
	watchers: 10_000,
} as const;

export const FLEET_CHECK_ACTIVITY = 'fleet.checkSites';

export const configureUpdate = defineUpdate<{ revision: string; sites: number }, [WatcherConfig]>('fleetConfigure');
export const configQuery = defineQuery<WatcherConfig>('fleetConfig');
export const statusQuery = defineQuery<WatcherStatus>('fleetStatus');

export const watcherIdPrefix = (fleet: string) => `fleet-watch-${fleet}-`;
export const watcherId = (fleet: string, index: number) => `${watcherIdPrefix(fleet)}${index}`;

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The attack-response plan of one site: template + site ids + overrides (validated by the runbook's parser). */
export function sitePlan(template: Record<string, unknown>, site: FleetSite): Record<string, unknown> {
	const plan: Record<string, unknown> = {
		...template,
		site_id: site.site_id,
		customer_id: site.customer_id,
		domain_ports: [...site.domain_ports],
	};
	const o = site.overrides;
	if (!o) return plan;
	if (o.cooldownSeconds !== undefined) plan.cooldownSeconds = o.cooldownSeconds;
	if (o.approval) plan.approval = { ...(isObj(template.approval) ? template.approval : {}), ...o.approval };
	if (o.protectedRanges?.length) {
		const bl = isObj(template.blacklist) ? template.blacklist : {};
		const base = Array.isArray(bl.protectedRanges) ? (bl.protectedRanges as string[]) : [];
		plan.blacklist = { ...bl, protectedRanges: [...base, ...o.protectedRanges.filter((r) => !base.includes(r))] };
	}
	return plan;
}

/** A watcher's tick grid: ticks fall on `phase + k × interval` (epoch ms), the phase spread by the watcher's index
 * (golden-ratio steps), so the watchers of a fleet do not all tick at the same moment. */
export function tickPhaseMs(index: number, intervalSeconds: number): number {
	return Math.floor(((index * 0.6180339887498949) % 1) * intervalSeconds * 1000);
}

/** First grid point at or after `t`. */
export function nextGridPoint(t: number, index: number, intervalSeconds: number): number {
	const step = intervalSeconds * 1000;
	const phase = tickPhaseMs(index, intervalSeconds);
	return Math.ceil((t - phase) / step) * step + phase;
}

/**
 * When the tick after one that was due at `dueAt` and really checked its sites from `ranAt` on falls: the first grid point
 * one interval after `dueAt` that is also at least half an interval after `ranAt`. A tick run late (worker killed
 * and restarted, replayed after a lost workflow task) is thus never followed by another within half an interval
 * (no site checked twice back to back), and the gap it leaves is at most one interval plus its lateness.
 */
export function nextTickAfter(dueAt: number, ranAt: number, index: number, intervalSeconds: number): number {
	return nextGridPoint(
		Math.max(dueAt + intervalSeconds * 1000, ranAt + (intervalSeconds * 1000) / 2),
		index,
		intervalSeconds,
	);
}

/**
 * A tick's sites (oldest first) in batches of `size`. `together` batches run at once (regular activities: the
 * watcher's `parallelBatches`; 1 for local ones, which run one after another): the sites of each such group are dealt
 * round robin, so every batch running at once begins with the oldest sites. Cut in order instead, the oldest sites
 * were all in the first batch, whose calls the request budget served no sooner than a later batch's fresh ones (its
 * activity could land on a worker whose share went to those): sites went 10+ intervals unchecked (docs/rate-budget.md).
 */
export function tickBatches(order: string[], size: number, together: number): string[][] {
	const out: string[][] = [];
	const group = size * Math.max(1, together);
	for (let g = 0; g < order.length; g += group) {
		const sites = order.slice(g, g + group);
		const n = Math.ceil(sites.length / size);
		const dealt: string[][] = Array.from({ length: n }, () => []);
		sites.forEach((s, i) => dealt[i % n].push(s));
		out.push(...dealt);
	}
	return out;
}

/** Stable JSON (sorted keys) to compare configurations. */
export function stableJson(v: unknown): string {
	if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
	if (isObj(v))
		return `{${Object.keys(v)
			.filter((k) => v[k] !== undefined)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
			.join(',')}}`;
	return JSON.stringify(v);
}
