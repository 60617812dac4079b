/**
 * Fleet watch under faults, real dev server, the worker as a child process, a simulator
 * fleet of 30 sites in two watchers (interval 4 s, local batches, the default):
 * - rate-limit windows (every is_under_attack answered 42901 for 1.5 s, twice per pair, three pairs): a refused
 *   check slows the tick, it does not end it — no site waits more than one extra interval, since the service grants
 *   capacity again within the interval;
 * - the worker SIGKILLed twice while a batch is in flight and restarted at once: no site is checked twice within half
 *   an interval, and none waits longer than one interval plus the outage (the hanging check → the first check after
 *   the restart) plus one tick.
 * Gaps are read from the simulator's request log (successful checks only). "An interval" and "a tick" are measured
 * on the fault-free fleet just before the faults, in the same process and at the same load (`faultFree`), not
 * assumed: at load 15–42 on 2 cores a tick's own latency passed the fixed 500 ms and 1 s allowed before.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunningSimulator } from '../../simulator/index.mts';
import { statusQuery, watcherId } from '../../workflows/fleet/shared.mts';
import { runFleet } from '../../workflows/fleet/command.mts';
import {
	checksBySite as checks,
	env,
	fleetTemplate,
	startSim,
	useDevServer,
	killChild,
	spawnWorker,
	uniqueQueue,
	waitFor,
} from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

const INTERVAL_MS = 4000;
const FLEET = 'ffault';
const SITES = 30;
let s: RunningSimulator;
let queue: string;
let child: ChildProcess;
/** Each watcher's sites (from its status), to read its ticks from the request log. */
let watchers: string[][] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

useDevServer({
	bundle: false,
	start: async () => {
		s = await startSim(31, { fleet: { customers: 3, sitesPerCustomer: 10 } });
		queue = uniqueQueue('fleet-faults');
		child = spawnWorker(env, s.url, queue);
		const f = join(scratchDir('secsvc-fleet-faults-'), 'fleet.json');
		const sites = Array.from({ length: SITES }, (_, i) => ({
			customer_id: String(110001 + Math.floor(i / 10)),
			site_id: String(210001 + i),
			domain_ports: [String(310001 + i)],
		}));
		writeFileSync(
			f,
			JSON.stringify({
				fleet: FLEET,
				intervalSeconds: INTERVAL_MS / 1000,
				sitesPerWatcher: 15,
				batchSize: 5,
				concurrency: 4,
				ticksPerRun: 5,
				template: fleetTemplate,
				sites,
			}),
		);
		assert.equal(
			await runFleet(
				['apply', f],
				{},
				async () => env.client,
				queue,
				() => {},
			),
			0,
		);
		await waitFor(
			'every site checked',
			async () => {
				const st = await Promise.all(
					[0, 1].map((i) =>
						env.client.workflow
							.getHandle(watcherId(FLEET, i))
							.query(statusQuery)
							.catch(() => undefined),
					),
				);
				if (!st.every((w) => w && w.sites.every((x) => x.state === 'quiet'))) return false;
				watchers = st.map((w) => w?.sites.map((x) => x.site_id) ?? []);
				return true;
			},
			60_000,
			300,
		);
	},
	stop: async () => {
		if (child) await killChild(child);
		await s?.close();
	},
});

const checksBySite = (since: number) => checks(s.sim, since);
/** Per site: the longest and the shortest time between two successive checks, from `t0` to `end`. */
function gaps(since: number, t0: number, end: number) {
	const out: { site: string; max: number; min: number }[] = [];
	for (const [site, times] of checksBySite(since)) {
		const all = [t0, ...times, end];
		const d = all.slice(1).map((t, i) => t - all[i]);
		out.push({
			site,
			max: Math.max(...d),
			min: times.length > 1 ? Math.min(...times.slice(1).map((t, i) => t - times[i])) : Infinity,
		});
	}
	return out;
}
const seqNow = () => s.sim.requests().at(-1)?.seq ?? 0;

/**
 * The fleet with no fault injected, from now until every site has been checked three times: the worst gap between two
 * checks of a site (an interval plus what this machine adds to it at its present load: timers, workflow tasks, local
 * activities) and the widest tick (a watcher's first check of a tick to its last).
 */
async function faultFree(): Promise<{ gap: number; tick: number }> {
	const since = seqNow();
	const per = await waitFor(
		'three fault-free checks of every site',
		async () => {
			const m = checksBySite(since);
			return m.size === SITES && [...m.values()].every((t) => t.length >= 3) && m;
		},
		60_000,
		100,
	);
	const gap = Math.max(...[...per.values()].flatMap((t) => t.slice(1).map((x, i) => x - t[i])));
	const tick = Math.max(...watchers.map((sites) => widestTick(sites.flatMap((x) => per.get(x) ?? []))));
	return { gap, tick };
}

/** Among one watcher's checks, the longest from a tick's first to its last (a tick ends after half an interval without one). */
function widestTick(times: number[]): number {
	const t = [...times].sort((a, b) => a - b);
	let widest = 0;
	let first = t[0];
	for (let i = 1; i < t.length; i++) {
		if (t[i] - t[i - 1] > INTERVAL_MS / 2) first = t[i];
		widest = Math.max(widest, t[i] - first);
	}
	return widest;
}

test('429 windows slow the tick, they do not end it: no site waits more than one extra interval', async (ctx) => {
	const ff = await faultFree();
	const since = seqNow();
	const t0 = s.sim.nowMs();
	for (let pair = 0; pair < 3; pair++) {
		s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'ratelimit', forMs: 1500 });
		await sleep(1.2 * INTERVAL_MS);
		s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'ratelimit', forMs: 1500 });
		await sleep(1.2 * INTERVAL_MS + 700);
	}
	await sleep(INTERVAL_MS);
	const end = s.sim.nowMs();
	const refused = s.sim
		.requests({ op: 'dashboard.isUnderAttack', since })
		.filter((r) => r.fault === 'ratelimit').length;
	assert.ok(refused >= 6, `the windows refused checks (${refused})`);
	const g = gaps(since, t0, end);
	assert.equal(g.length, SITES, 'every site checked');
	const worst = g.reduce((a, b) => (b.max > a.max ? b : a));
	// A refused check is asked again within its tick (after the window and a back-off of at most 2 s) or, past the
	// tick's end, first in the next one: one interval more than the fault-free worst at most.
	const limit = ff.gap + INTERVAL_MS;
	ctx.diagnostic(`fault-free: worst gap ${ff.gap} ms, widest tick ${ff.tick} ms; under the windows: ${worst.max} ms`);
	assert.ok(
		worst.max <= limit,
		`site ${worst.site}: ${worst.max} ms between checks (limit ${limit}: the fault-free worst ${ff.gap} + one interval)`,
	);
	// Not more checks than one per site per interval meanwhile (a refused call is asked again, not the site twice).
	const per = [...checksBySite(since).values()].map((t) => t.length);
	assert.ok(Math.max(...per) <= Math.ceil((end - t0) / INTERVAL_MS) + 1, `checks per site: ${Math.max(...per)}`);
});

/** The site a request of the log checked. */
const siteOf = (r: { path: string }) => /\/site\/([^/]+)\//.exec(r.path)?.[1] ?? '?';

/**
 * Kills the worker while a check hangs and restarts it; per watcher, its outage: from the hanging check (the watch
 * last seen working) to the watcher's first check after the restart. The watchers come back at different times
 * (the one with the batch in flight after its workflow task times out, the other after its timer's task leaves the
 * dead worker's sticky queue), so each watcher's sites are measured against its own.
 */
async function killMidBatch(): Promise<{ at: number; outages: number[] }> {
	const mark = seqNow();
	// One check hangs 3 s: a batch (and its local-activity workflow task) is in flight when the worker dies.
	s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'delay', delayMs: 3000, count: 1 });
	const hung = await waitFor(
		'a hanging check in flight',
		async () => s.sim.requests({ op: 'dashboard.isUnderAttack', since: mark }).find((r) => r.fault === 'delay'),
		20_000,
		20,
	);
	await sleep(300);
	await killChild(child);
	const killedAt = s.sim.nowMs();
	const killSeq = seqNow();
	child = spawnWorker(env, s.url, queue);
	const back = await waitFor(
		'every watcher checks again after the restart',
		async () => {
			const after = s.sim
				.requests({ op: 'dashboard.isUnderAttack', since: killSeq })
				.filter((r) => r.code === 0 && r.time > killedAt);
			const first = watchers.map((sites) => after.find((r) => sites.includes(siteOf(r)))?.time);
			return first.every((t) => t !== undefined) && (first as number[]);
		},
		60_000,
		100,
	);
	return { at: killedAt, outages: back.map((t) => t - hung.time) };
}

test('worker SIGKILLed twice mid-batch: no site checked twice within half an interval, none late by more than the restart', async (ctx) => {
	const ff = await faultFree();
	const since = seqNow();
	const t0 = s.sim.nowMs();
	/** Per kill, per watcher: the outage (killMidBatch). */
	const kills: { at: number; outages: number[] }[] = [];
	for (let k = 0; k < 2; k++) {
		kills.push(await killMidBatch());
		await sleep(3 * INTERVAL_MS);
	}
	const end = s.sim.nowMs();
	const g = gaps(since, t0, end);
	assert.equal(g.length, SITES, 'every site checked');
	const twice = g.filter((x) => x.min < INTERVAL_MS / 2);
	assert.deepEqual(
		twice.map((x) => `${x.site}: ${x.min} ms`),
		[],
		'no site checked twice within half an interval',
	);
	// A site's last check before the outage is at most a fault-free gap before the hanging one; after its watcher's
	// restart every site is checked within the first tick. Both are single samples of what faultFree measured as maxima
	// (on a quiet machine this bound is nearly exact): 250 ms for their jitter (docs/test-runs.md, session 24).
	const watcherOf = (site: string) => watchers.findIndex((sites) => sites.includes(site));
	const limit = (site: string, outages: number[]) => ff.gap + outages[watcherOf(site)] + ff.tick + 250;
	const shown = kills.map((k) => k.outages.join('/')).join(', ');
	ctx.diagnostic(
		`fault-free: worst gap ${ff.gap} ms, widest tick ${ff.tick} ms; outages per kill, per watcher ${shown} ms`,
	);
	// Across each kill (a site's last check before it to its first after it), against that kill's outage.
	const late: string[] = [];
	for (const [n, k] of kills.entries())
		for (const [site, times] of checksBySite(since)) {
			const gap = (times.find((t) => t > k.at) ?? end) - (times.filter((t) => t <= k.at).at(-1) ?? t0);
			if (gap > limit(site, k.outages))
				late.push(`${site}: ${gap} ms across kill ${n} (limit ${limit(site, k.outages)})`);
		}
	assert.deepEqual(
		late,
		[],
		`later than the fault-free worst ${ff.gap} + the watcher's outage + tick ${ff.tick} + 250`,
	);
	// And no gap anywhere longer than that with the longest outage of its watcher.
	const most = watchers.map((_, w) => Math.max(...kills.map((k) => k.outages[w])));
	const worst = g.reduce((a, b) => (b.max - limit(b.site, most) > a.max - limit(a.site, most) ? b : a));
	assert.ok(
		worst.max <= limit(worst.site, most),
		`site ${worst.site}: ${worst.max} ms between checks (limit ${limit(worst.site, most)}: the fault-free worst ${ff.gap} + its watcher's longest outage (per kill, per watcher: ${shown} ms) + the widest fault-free tick ${ff.tick} + 250)`,
	);
});
