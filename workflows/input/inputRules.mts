import { isObj, type Rules } from './inputChecks.mts';
import { FLEET_BOUNDS } from '../fleet/shared.mts';
import { MAX_KEYS } from '../coordinator/coordination.mts';
import { MAX_SITE_BLOCKS } from '../../api/blockCapacity.ts';

/**
 * The input rules of each workflow type (and of the Updates / signals that carry a whole input), for
 * workflows/input/inputChecks.mts `problems()`. The same bounds as the CLI and the n8n node (worker/src/fleetConfig.mts
 * uses FLEET_BOUNDS; ids: api/limits.ts). Pure.
 */

const STATES = ['adding', 'active', 'queued', 'removing', 'removed', 'taken-over', 'cancelled', 'unknown'] as const;
const isoLike = (v: unknown) => typeof v === 'string' && v.length <= 40 && Number.isFinite(Date.parse(v));

/** attackResponse / attackWatch: what must hold before the plan is parsed (the plan's own rules: the parse activity). */
export function runbookStartRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.bool('dryRun', input.dryRun);
	// The site goes into a search attribute before the plan is parsed: it must be a valid id first.
	if (isObj(input.plan) && input.plan.site_id !== undefined) r.id('site_id', input.plan.site_id);
}

/** attackReport: the CLI's `report --site --hours` rules (the period is then capped at 744 h, ddos_events' limit). */
export function reportRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['site_id', 'periodHours', 'range', 'type', 'html']);
	r.id('site_id', input.site_id);
	r.int('periodHours', input.periodHours, 1, 2160, true);
	r.oneOf('range', input.range, ['hour', 'day', 'week', 'month']);
	r.oneOf('type', input.type, ['bps', 'pps']);
	r.bool('html', input.html);
}

/** durableCall: an operation id and a params object (the operation's own rules: the catalog, in the activity). */
export function durableCallRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['op', 'params']);
	if (typeof input.op !== 'string' || input.op.length > 200 || !/^[a-zA-Z]+(\.[a-zA-Z]+)+$/.test(input.op))
		r.bad('op', 'must be a catalog operation id');
	if (input.params !== undefined) r.obj('params', input.params);
}

/** driftAudit: the shape the workflow reads (the CLI's full schema runs in the `input.checkDesired` local activity). */
export function driftRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['desired', 'enforce']);
	r.bool('enforce', input.enforce);
	const d = input.desired;
	if (!r.obj('desired', d)) return;
	r.id('desired.site_id', d.site_id);
	for (const k of ['customer_id', 'network_id', 'host_id']) r.id(`desired.${k}`, d[k], true);
	if (d.detection !== undefined && r.obj('desired.detection', d.detection) && d.detection.items !== undefined)
		r.obj('desired.detection.items', d.detection.items);
	if (d.domain_ports === undefined || !r.obj('desired.domain_ports', d.domain_ports)) return;
	const dps = Object.entries(d.domain_ports);
	if (dps.length > 100) r.bad('desired.domain_ports', 'must have at most 100 domain-ports');
	for (const [dp, v] of dps.slice(0, 100)) {
		r.id(`desired.domain_ports.${dp}`, dp);
		r.obj(`desired.domain_ports.${dp}`, v);
	}
}

/** blocks (`blocks-<site>-<dp>`): ids, maxPrefix (the CLI's 0–32), and a carried state as the run itself writes it. */
export function blocksRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['site_id', 'domain_port_id', 'maxPrefix', 'blocks', 'ended']);
	r.id('site_id', input.site_id);
	r.id('domain_port_id', input.domain_port_id);
	r.int('maxPrefix', input.maxPrefix, 0, 32, true);
	for (const field of ['blocks', 'ended'] as const) {
		const list = input[field];
		if (!r.list(field, list, 10_000)) continue;
		list.forEach((b, i) => {
			if (!r.obj(`${field}.${i}`, b)) return;
			r.text(`${field}.${i}.range`, b.range, 64);
			r.text(`${field}.${i}.entry`, b.entry, 64);
			if (!isoLike(b.expiresAt)) r.bad(`${field}.${i}.expiresAt`, 'must be a time (ISO 8601)');
			r.oneOf(`${field}.${i}.state`, b.state, STATES, false);
			r.text(`${field}.${i}.by`, b.by, 200, false, 0);
			r.text(`${field}.${i}.reason`, b.reason, 1000, false, 0);
		});
	}
}

/** siteCoordinator (`site-<site>`): the site id and carried holds / successors as the run itself writes them. */
export function coordinatorRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['site_id', 'holds', 'packed', 'successors']);
	r.id('site_id', input.site_id);
	const packed = input.packed;
	if (r.list('packed', packed, MAX_SITE_BLOCKS))
		packed.forEach((g, i) => {
			if (!r.obj(`packed.${i}`, g)) return;
			r.text(`packed.${i}.owner`, g.owner, 500);
			r.oneOf(`packed.${i}.mode`, g.mode, ['hold', 'lease'], false);
			if (!isoLike(g.until)) r.bad(`packed.${i}.until`, 'must be a time (ISO 8601)');
			const keys = g.keys;
			if (r.list(`packed.${i}.keys`, keys, MAX_SITE_BLOCKS, false))
				keys.forEach((k, j) => r.text(`packed.${i}.keys.${j}`, k, 500));
		});
	for (const field of ['holds', 'successors'] as const) {
		const list = input[field];
		if (!r.list(field, list, MAX_KEYS * 5)) continue;
		list.forEach((h, i) => {
			if (!r.obj(`${field}.${i}`, h)) return;
			r.text(`${field}.${i}.key`, h.key, 500);
			r.text(`${field}.${i}.owner`, h.owner, 500);
			if (field === 'holds') {
				r.oneOf(`${field}.${i}.mode`, h.mode, ['hold', 'lease'], false);
				if (!isoLike(h.until)) r.bad(`${field}.${i}.until`, 'must be a time (ISO 8601)');
			} else r.int(`${field}.${i}.ttlSeconds`, h.ttlSeconds, 1, 40 * 86400);
		});
	}
}

/** A watcher's whole configuration (fleetWatch input and the `fleetConfigure` Update): the fleet file's bounds. */
export function watcherConfigRules(r: Rules, c: unknown, at = 'config'): void {
	if (!r.obj(at, c)) return;
	const B = FLEET_BOUNDS;
	if (typeof c.fleet !== 'string' || !B.fleetRe.test(c.fleet))
		r.bad(`${at}.fleet`, 'must be 1–40 letters, digits, _ . -');
	r.int(`${at}.index`, c.index, 0, B.watchers);
	r.text(`${at}.revision`, c.revision, 200, false, 0);
	r.text(`${at}.taskQueue`, c.taskQueue, 256, true);
	if (r.obj(`${at}.settings`, c.settings)) {
		const s = c.settings;
		r.int(`${at}.settings.intervalSeconds`, s.intervalSeconds, ...B.intervalSeconds);
		r.int(`${at}.settings.batchSize`, s.batchSize, ...B.batchSize);
		r.int(`${at}.settings.concurrency`, s.concurrency, ...B.concurrency);
		r.int(`${at}.settings.parallelBatches`, s.parallelBatches, ...B.parallelBatches, true);
		r.oneOf(`${at}.settings.activities`, s.activities, ['local', 'regular'], false);
		r.int(`${at}.settings.ticksPerRun`, s.ticksPerRun, ...B.ticksPerRun);
		r.int(`${at}.settings.maxIntervalStretch`, s.maxIntervalStretch, ...B.maxIntervalStretch, true);
	}
	if (c.template !== undefined) r.obj(`${at}.template`, c.template);
	const sites = c.sites;
	if (!Array.isArray(sites)) return void r.bad(`${at}.sites`, 'must be a list of sites');
	if (sites.length > B.sitesPerWatcher[1])
		return void r.bad(`${at}.sites`, `must have at most ${B.sitesPerWatcher[1]} sites per watcher`);
	sites.forEach((s, i) => {
		const f = `${at}.sites.${i}`;
		if (!r.obj(f, s)) return;
		r.id(`${f}.site_id`, s.site_id);
		r.id(`${f}.customer_id`, s.customer_id);
		if (r.list(`${f}.domain_ports`, s.domain_ports, 100, false))
			s.domain_ports.forEach((dp, j) => r.id(`${f}.domain_ports.${j}`, dp));
		if (s.overrides !== undefined && r.obj(`${f}.overrides`, s.overrides)) {
			r.int(`${f}.overrides.cooldownSeconds`, s.overrides.cooldownSeconds, 0, 7 * 86400, true);
			if (s.overrides.approval !== undefined) r.obj(`${f}.overrides.approval`, s.overrides.approval);
			const pr = s.overrides.protectedRanges;
			if (r.list(`${f}.overrides.protectedRanges`, pr, 1000))
				pr.forEach((x, j) => r.text(`${f}.overrides.protectedRanges.${j}`, x, 64));
		}
	});
}

/** fleetWatch input: the configuration and, after continue-as-new, the carry the run itself wrote. */
export function watcherInputRules(r: Rules, input: unknown): void {
	if (!r.obj('(input)', input)) return;
	r.keys('', input, ['config', 'carry']);
	watcherConfigRules(r, input.config);
	const c = input.carry;
	if (c === undefined || !r.obj('carry', c)) return;
	if (r.list('carry.deferred', c.deferred, FLEET_BOUNDS.sitesPerWatcher[1], false))
		c.deferred.forEach((s, i) => r.id(`carry.deferred.${i}`, s));
	r.int('carry.concurrency', c.concurrency, ...FLEET_BOUNDS.concurrency);
	r.list('carry.states', c.states, FLEET_BOUNDS.sitesPerWatcher[1], false);
	r.num('carry.nextTickAt', c.nextTickAt, 0, 8.64e15, true);
	r.int('carry.runs', c.runs, 0, Number.MAX_SAFE_INTEGER);
	r.int('carry.rateLimitedTicks', c.rateLimitedTicks, 0, Number.MAX_SAFE_INTEGER, true);
	if (r.list('carry.checkedAt', c.checkedAt, FLEET_BOUNDS.sitesPerWatcher[1]))
		c.checkedAt.forEach((t, i) => r.num(`carry.checkedAt.${i}`, t, 0, 8.64e15));
}
