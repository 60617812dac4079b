/**
 * Shape checks for scenarios, attacks and flow-down alerts given to the control API (or in-process): a sandbox
 * gets hostile input too, and a rejected scenario changes nothing (everything is checked before anything is
 * applied). Times are bounded so the clock and every computed time stay finite.
 */

const MAX_ITEMS = 1000;
const MAX_SOURCES = 1000;
const MAX_POINTS = 10_000;
/** Offsets (`at`, `duration`, point offsets) are at most 10 years. */
const MAX_SECONDS = 10 * 365 * 86400;
/** Absolute start times: unix seconds from 2000 to 2200. */
const MIN_UNIX = 946_684_800;
const MAX_UNIX = 7_258_118_400;
const MAX_TEXT = 256;

export class ScenarioError extends Error {}

const fail = (where: string, rule: string): never => {
	throw new ScenarioError(`${where}: ${rule}`);
};
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function num(v: unknown, where: string, min: number, max: number, integer = false) {
	if (v === undefined) return;
	if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v)))
		fail(where, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
}
function text(v: unknown, where: string) {
	if (v === undefined) return;
	if (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT)
		fail(where, `must be a non-empty string of at most ${MAX_TEXT} characters`);
}
function list(v: unknown, where: string, max: number): unknown[] {
	if (v === undefined) return [];
	if (!Array.isArray(v)) fail(where, 'must be an array');
	const a = v as unknown[];
	if (a.length > max) fail(where, `must have at most ${max} entries (got ${a.length})`);
	return a;
}

export function checkAttackItem(a: unknown, where: string): void {
	if (!isObj(a)) fail(where, 'must be an object');
	const x = a as Record<string, unknown>;
	text(x.site_id, `${where}.site_id`);
	text(x.attack_type, `${where}.attack_type`);
	num(x.at, `${where}.at`, -MAX_SECONDS, MAX_SECONDS);
	num(x.start, `${where}.start`, MIN_UNIX, MAX_UNIX);
	num(x.duration, `${where}.duration`, 0, MAX_SECONDS);
	if (x.autoMitigate !== undefined && typeof x.autoMitigate !== 'boolean')
		fail(`${where}.autoMitigate`, 'must be true or false');
	text(x.protocol, `${where}.protocol`);
	if (x.dest_port !== undefined && typeof x.dest_port !== 'number') text(x.dest_port, `${where}.dest_port`);
	if (x.curve !== undefined) {
		if (!isObj(x.curve)) fail(`${where}.curve`, 'must be an object');
		const c = x.curve as Record<string, unknown>;
		num(c.peakBps, `${where}.curve.peakBps`, 0, 1e15);
		num(c.peakPps, `${where}.curve.peakPps`, 0, 1e13);
		num(c.rampSeconds, `${where}.curve.rampSeconds`, 0, MAX_SECONDS);
		for (const [i, p] of list(c.points, `${where}.curve.points`, MAX_POINTS).entries()) {
			if (!Array.isArray(p) || p.length < 2 || p.length > 3)
				fail(`${where}.curve.points.${i}`, 'must be [offsetSeconds, bps, pps]');
			const q = p as unknown[];
			num(q[0], `${where}.curve.points.${i}.0`, 0, MAX_SECONDS);
			num(q[1], `${where}.curve.points.${i}.1`, 0, 1e15);
			num(q[2], `${where}.curve.points.${i}.2`, 0, 1e13);
		}
	}
	checkSources(x.sources, `${where}.sources`);
	for (const [i, wv] of list(x.waves, `${where}.waves`, MAX_WAVES).entries()) {
		if (!isObj(wv)) fail(`${where}.waves.${i}`, 'must be an object { at, sources }');
		const o = wv as Record<string, unknown>;
		num(o.at, `${where}.waves.${i}.at`, 1, MAX_SECONDS, true);
		if (o.at === undefined) fail(`${where}.waves.${i}.at`, 'is required (seconds after the attack start)');
		checkSources(o.sources, `${where}.waves.${i}.sources`);
	}
}

/** Later waves of one attack (shifting and returning sources), at most this many. */
const MAX_WAVES = 100;

function checkSources(v: unknown, where: string): void {
	for (const [i, s] of list(v, where, MAX_SOURCES).entries()) {
		if (!isObj(s)) fail(`${where}.${i}`, 'must be an object');
		const o = s as Record<string, unknown>;
		for (const k of ['ip', 'cidr', 'country'] as const) text(o[k], `${where}.${i}.${k}`);
		if (o.asn !== undefined && typeof o.asn !== 'number') text(o.asn, `${where}.${i}.asn`);
		num(o.weight, `${where}.${i}.weight`, Number.MIN_VALUE, 1e9);
	}
}

export function checkFlowDownItem(f: unknown, where: string): void {
	if (!isObj(f)) fail(where, 'must be an object');
	const x = f as Record<string, unknown>;
	text(x.site_id, `${where}.site_id`);
	text(x.router_name, `${where}.router_name`);
	num(x.at, `${where}.at`, -MAX_SECONDS, MAX_SECONDS);
	num(x.duration, `${where}.duration`, 0, MAX_SECONDS);
}

/** A scenario: `{ seed?, fleet?, attacks?: [...], flowDowns?: [...] }`, at most 1000 attacks and flow-downs
 * (the fleet's own shape is checked by checkFleet in simulator/fleet.mts). */
export function checkScenario(s: unknown): void {
	if (!isObj(s)) fail('scenario', 'must be a JSON object');
	const x = s as Record<string, unknown>;
	for (const k of Object.keys(x))
		if (!['seed', 'fleet', 'attacks', 'flowDowns'].includes(k))
			fail(`scenario.${k.slice(0, 64)}`, 'is not a scenario field (seed, fleet, attacks, flowDowns)');
	if (x.fleet !== undefined && !isObj(x.fleet)) fail('scenario.fleet', 'must be an object');
	num(x.seed, 'scenario.seed', 0, 2 ** 32, true);
	for (const [i, a] of list(x.attacks, 'scenario.attacks', MAX_ITEMS).entries())
		checkAttackItem(a, `scenario.attacks.${i}`);
	for (const [i, f] of list(x.flowDowns, 'scenario.flowDowns', MAX_ITEMS).entries())
		checkFlowDownItem(f, `scenario.flowDowns.${i}`);
}
