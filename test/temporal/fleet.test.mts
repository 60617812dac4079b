/**
 * Fleet watch on the real dev server, the worker as a child process, the simulator holding a fleet of
 * 3 customers × 4 sites: `fleet apply` adds / changes / removes sites (and a bad file changes nothing), the status
 * output, attacked sites get exactly one runbook each, a worker SIGKILLed in the middle of a batch loses nothing,
 * and a rate-limited API slows the poll without leaving any site unchecked for more than one extra interval; a
 * watcher's history recorded before `fleet-check-times` replays under the current code.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { RunningSimulator } from '../../simulator/index.mts';
import { configQuery, statusQuery, watcherId, type WatcherStatus } from '../../workflows/fleet/shared.mts';
import { run as cli } from '../../worker/src/commands/cli.mts';
import { runFleet } from '../../workflows/fleet/command.mts';
import { parseFleet } from '../../workflows/fleet/clientConfig.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import {
	checksBySite as checks,
	env,
	fleetTemplate as template,
	startSim,
	useDevServer,
	spawnWorker,
	uniqueQueue,
	waitFor,
} from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

const INTERVAL = 2;
const FLEET = 'tfleet';
let s: RunningSimulator;
let queue: string;
let child: ChildProcess;
const dir = scratchDir('secsvc-fleet-');

const site = (n: number) => String(210000 + n);
const cust = (n: number) => String(110001 + Math.floor((n - 1) / 4));

function fleetFile(name: string, sites: number[], over: Record<number, object> = {}, extra: object = {}): string {
	const doc = {
		fleet: FLEET,
		intervalSeconds: INTERVAL,
		sitesPerWatcher: 5,
		batchSize: 3,
		concurrency: 2,
		// Continue-as-new every 3 ticks, so every test below also runs across new runs of the watchers.
		ticksPerRun: 3,
		template,
		sites: sites.map((n) => ({
			customer_id: cust(n),
			site_id: site(n),
			domain_ports: [String(310000 + n)],
			...(over[n] ? { overrides: over[n] } : {}),
		})),
		...extra,
	};
	const f = join(dir, `${name}.json`);
	writeFileSync(f, JSON.stringify(doc));
	return f;
}

/** The fleet part of the CLI with the test's client; returns what it printed. */
async function fleet(...args: string[]): Promise<string> {
	const pos = args.filter((a) => !a.startsWith('--'));
	const o: Record<string, string | boolean> = {};
	for (let i = 0; i < args.length; i++)
		if (args[i].startsWith('--')) o[args[i].slice(2)] = args[i + 1] && !args[i + 1].startsWith('--') ? args[++i] : true;
	let text = '';
	const code = await runFleet(
		pos,
		o,
		async () => env.client,
		queue,
		(v) => (text += typeof v === 'string' ? v + '\n' : JSON.stringify(v) + '\n'),
	);
	assert.equal(code, 0);
	return text;
}

const statuses = async (): Promise<WatcherStatus[]> => {
	const out: WatcherStatus[] = [];
	for (let i = 0; i < 4; i++) {
		try {
			const h = env.client.workflow.getHandle(watcherId(FLEET, i));
			if ((await h.describe()).status.name === 'RUNNING') out.push(await h.query(statusQuery));
		} catch {
			// not there
		}
	}
	return out;
};
const allSites = async () => (await statuses()).flatMap((w) => w.sites);

function kill(c: ChildProcess): Promise<void> {
	return new Promise((resolve) => {
		if (c.exitCode !== null || c.signalCode !== null) return resolve();
		c.once('exit', () => resolve());
		c.kill('SIGKILL');
	});
}

const runbooksOf = async (siteId: string) => {
	const ids: string[] = [];
	for await (const w of env.client.workflow.list({ query: `WorkflowId = 'attack-response-${siteId}'` }))
		ids.push(w.runId);
	return ids;
};

const checksBySite = (since = 0) => checks(s.sim, since);

useDevServer({
	bundle: false,
	start: async () => {
		s = await startSim(12, { fleet: { customers: 3, sitesPerCustomer: 4 } });
		queue = uniqueQueue('fleet');
		child = spawnWorker(env, s.url, queue);
	},
	stop: async () => {
		if (child) await kill(child);
		await s?.close();
	},
});

test('fleet apply: adds, is idempotent, changes, removes; a bad file changes nothing; status output', async () => {
	const example = parseFleet(
		JSON.parse(readFileSync(new URL('../../examples/fleet/fleet.json', import.meta.url), 'utf8')),
	);
	assert.equal(example.sites.length, 12, 'examples/fleet/fleet.json is a valid fleet file');
	const out1 = await fleet('apply', fleetFile('a', [1, 2, 3, 4, 5, 6, 7, 8]));
	assert.match(out1, /^\+ site 210001 \(customer 110001\) on fleet-watch-tfleet-0$/m);
	assert.match(out1, /^\+ site 210008 \(customer 110002\) on fleet-watch-tfleet-1$/m);
	assert.match(out1, /start fleet-watch-tfleet-0 \(5 sites\)/);
	assert.match(out1, /start fleet-watch-tfleet-1 \(3 sites\)/);
	assert.match(out1, /fleet tfleet: 8 added, 0 changed, 0 removed, 0 unchanged; 2 watcher\(s\)/);
	// Every site checked (the worker child may still be starting).
	await waitFor(
		'every site checked',
		async () => (await allSites()).length === 8 && (await allSites()).every((x) => x.state === 'quiet'),
		60_000,
		300,
	);

	const rev0 = (await env.client.workflow.getHandle(watcherId(FLEET, 0)).query(configQuery)).revision;
	const again = await fleet('apply', fleetFile('a2', [1, 2, 3, 4, 5, 6, 7, 8]));
	assert.match(again, /fleet tfleet: 0 added, 0 changed, 0 removed, 8 unchanged; 2 watcher\(s\)/);
	assert.equal(
		(await env.client.workflow.getHandle(watcherId(FLEET, 0)).query(configQuery)).revision,
		rev0,
		'nothing sent when nothing changed',
	);

	const dry = await fleet('apply', fleetFile('b', [1, 2, 3, 5, 6, 7, 9], { 2: { cooldownSeconds: 30 } }), '--dry-run');
	assert.match(dry, /^dry run, nothing sent: fleet tfleet: 1 added, 1 changed, 2 removed, 5 unchanged/m);
	assert.equal(
		(await env.client.workflow.getHandle(watcherId(FLEET, 0)).query(configQuery)).revision,
		rev0,
		'dry run sends nothing',
	);

	const out2 = await fleet('apply', join(dir, 'b.json'));
	assert.match(out2, /^- site 210004 \(customer 110001\) from fleet-watch-tfleet-0$/m);
	assert.match(out2, /^- site 210008 \(customer 110002\) from fleet-watch-tfleet-1$/m);
	assert.match(out2, /^~ site 210002 \(customer 110001\) on fleet-watch-tfleet-0: cooldownSeconds - → 30$/m);
	assert.match(out2, /^\+ site 210009 \(customer 110003\) on fleet-watch-tfleet-1$/m);
	const cfg0 = await env.client.workflow.getHandle(watcherId(FLEET, 0)).query(configQuery);
	assert.deepEqual(
		cfg0.sites.map((x) => x.site_id),
		['210001', '210002', '210003', '210005'],
	);
	assert.deepEqual(cfg0.sites[1].overrides, { cooldownSeconds: 30 });
	await waitFor(
		'removed sites gone, new site checked',
		async () => {
			const all = await allSites();
			return (
				all.length === 7 &&
				!all.some((x) => x.site_id === '210004' || x.site_id === '210008') &&
				all.find((x) => x.site_id === '210009')?.state === 'quiet'
			);
		},
		30_000,
		300,
	);

	// A bad file: errors name the site and the field; nothing changes (exit code 2 through the real CLI entry).
	const bad = fleetFile('bad', [1, 2, 3, 3], { 2: { cooldownSeconds: -5, protectedRanges: ['not-an-ip'] } });
	let err = '';
	const w = process.stderr.write.bind(process.stderr);
	process.stderr.write = ((c: string) => ((err += c), true)) as typeof process.stderr.write;
	let code: number;
	try {
		code = await cli(['fleet', 'apply', bad]);
	} finally {
		process.stderr.write = w;
	}
	assert.equal(code, 2);
	assert.match(err, /site 210002 \(sites\[1\]\): overrides\.cooldownSeconds: must be at least 0/);
	assert.match(err, /site 210002 \(sites\[1\]\): overrides\.protectedRanges\.0: must be an IPv4 address/);
	const bad2 = fleetFile('bad2', [1, 2, 3, 3]);
	await assert.rejects(
		fleet('apply', bad2),
		/site 210003 \(sites\[3\]\): site_id: is listed twice \(also sites\[2\]\)/,
	);
	const bad3 = fleetFile('bad3', [1], {}, { template: { ...template, cooldownSeconds: 'soon' }, intervalSeconds: 0 });
	await assert.rejects(fleet('apply', bad3), /\(fleet\): intervalSeconds: must be at least 1/);
	assert.deepEqual(
		(await env.client.workflow.getHandle(watcherId(FLEET, 0)).query(configQuery)).sites.length,
		4,
		'bad files changed nothing',
	);

	// Status: one header, one line per watcher, one line per site with its last check, state and runbook. A watcher
	// shows its last tick from its current run: the apply above continued it as new, so wait for that run's first tick
	// (CI under load: the status was read before it, "tick 0 of run 2, last tick -").
	await waitFor(
		"a tick in each watcher's current run",
		async () => (await statuses()).every((w) => w.ticks > 0),
		30_000,
		300,
	);
	const st = await fleet('status', '--fleet', FLEET);
	assert.match(
		st,
		/^fleet tfleet: 2 watcher\(s\), 7 sites — 0 under attack, 7 quiet, 0 deferred, 0 error, 0 unchecked$/m,
	);
	assert.match(
		st,
		/^fleet-watch-tfleet-0: 4 sites, every 2s, local batches of 3, concurrency 2\/2, tick \d+ of run \d+, last tick \d\d:\d\d:\d\d \(\d+ ms\)/m,
	);
	assert.match(st, /^ {2}210009 +110003 +quiet +\d\d:\d\d:\d\d \(\d+s ago\) +-$/m);
	const json = JSON.parse(await fleet('status', '--fleet', FLEET, '--json'));
	assert.equal(json.watchers.length, 2);
	// A run continued as new shows the last tick of the run before until it ticks itself (carried).
	const untimed: string[] = [];
	await waitFor(
		'a continued-as-new run',
		async () => {
			const ws = await statuses();
			for (const w of ws)
				if (w.runs >= 2 && w.lastTickAt === undefined) untimed.push(`watcher ${w.index} run ${w.runs}`);
			return ws.every((w) => w.runs >= 2);
		},
		30_000,
		100,
	);
	assert.deepEqual(untimed, [], 'no status without a last tick after continue-as-new');
	const d = await env.client.workflow.getHandle(watcherId(FLEET, 0)).describe();
	assert.ok(d.historyLength < 60, `history stays short (${d.historyLength} events)`);
});

test('attacked sites get exactly one runbook each', async () => {
	const a1 = s.sim.startAttack({ site_id: '210003', duration: 0, sources: [{ ip: '198.18.0.3' }] });
	const a2 = s.sim.startAttack({ site_id: '210009', duration: 0, sources: [{ ip: '198.18.0.9' }] });
	try {
		await waitFor(
			'both runbooks started',
			async () => (await runbooksOf('210003')).length === 1 && (await runbooksOf('210009')).length === 1,
			30_000,
			300,
		);
		// Several more ticks while both attacks go on: still one runbook each.
		await new Promise((r) => setTimeout(r, 3.5 * INTERVAL * 1000));
		assert.equal((await runbooksOf('210003')).length, 1);
		assert.equal((await runbooksOf('210009')).length, 1);
		for (const id of ['210001', '210002', '210005'])
			assert.equal((await runbooksOf(id)).length, 0, `no runbook for quiet site ${id}`);
		const st = await fleet('status', '--fleet', FLEET);
		assert.match(st, /^ {2}210003 +110001 +attack .* attack-response-210003 RUNNING \((started|already-running) /m);
		assert.match(st, / 2 under attack, 5 quiet/);
		const d = await env.client.workflow.getHandle('attack-response-210009').describe();
		assert.equal(d.status.name, 'RUNNING');
	} finally {
		s.sim.stopAttack(a1.id);
		s.sim.stopAttack(a2.id);
		for (const id of ['attack-response-210003', 'attack-response-210009'])
			await env.client.workflow
				.getHandle(id)
				.terminate('test done')
				.catch(() => {});
	}
});

test('worker SIGKILLed in the middle of a batch: nothing is lost, one runbook', async () => {
	// Slow one check down so the kill lands inside a batch, and attack a site of that watcher.
	const since = s.sim.requests().at(-1)?.seq ?? 0;
	s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'delay', delayMs: 4000, count: 1 });
	await waitFor(
		'a delayed check in flight',
		async () => s.sim.requests({ op: 'dashboard.isUnderAttack', since }).some((r) => r.fault === 'delay'),
		20_000,
		50,
	);
	const attack = s.sim.startAttack({ site_id: '210005', duration: 0, sources: [{ ip: '198.18.0.5' }] });
	await kill(child);
	const killedAt = s.sim.nowMs();
	child = spawnWorker(env, s.url, queue);
	try {
		await waitFor(
			'runbook for the attacked site after the restart',
			async () => (await runbooksOf('210005')).length === 1,
			60_000,
			300,
		);
		await waitFor(
			'every site checked again after the kill',
			async () => {
				const all = await allSites();
				return all.length === 7 && all.every((x) => (x.at ?? 0) > killedAt);
			},
			30_000,
			300,
		);
		await new Promise((r) => setTimeout(r, 2 * INTERVAL * 1000));
		assert.equal((await runbooksOf('210005')).length, 1, 'exactly one runbook');
	} finally {
		s.sim.stopAttack(attack.id);
		await env.client.workflow
			.getHandle('attack-response-210005')
			.terminate('test done')
			.catch(() => {});
	}
});

test('a rate-limited API slows the poll; no site waits more than one extra interval', async () => {
	await waitFor('a clean tick first', async () => (await allSites()).every((x) => x.state === 'quiet'), 30_000, 200);
	const since = s.sim.requests().at(-1)?.seq ?? 0;
	const t0 = s.sim.nowMs();
	// 6 rate-limited answers (the client retries a 42901 once, so 3 sites' checks are refused) over the next ticks.
	s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'ratelimit', count: 6 });
	await waitFor('faults used up', async () => s.sim.faults.length === 0, 30_000, 200);
	const limitedAt = s.sim.nowMs();
	await new Promise((r) => setTimeout(r, 3 * INTERVAL * 1000));
	const st = await statuses();
	assert.ok(st.reduce((n, w) => n + w.rateLimitedTicks, 0) >= 1, 'a tick was cut short by rate limiting');
	const limited = s.sim
		.requests({ op: 'dashboard.isUnderAttack', since })
		.filter((r) => r.fault === 'ratelimit').length;
	assert.equal(limited, 6);
	// Every site: successive successful checks at most 2 intervals apart (+1 s for timing), before, during, after.
	const checks = checksBySite(since);
	assert.equal(checks.size, 7);
	const end = s.sim.nowMs();
	for (const [id, times] of checks) {
		const all = [t0, ...times, end];
		const gap = Math.max(...all.slice(1).map((t, i) => t - all[i]));
		assert.ok(
			gap <= 2 * INTERVAL * 1000 + 1000,
			`site ${id}: ${gap} ms between checks (limit ${2 * INTERVAL * 1000 + 1000}); limited at ${limitedAt - t0} ms`,
		);
	}
	// Normal again: one call per site per interval (no extra calls from the watcher).
	const since2 = s.sim.requests().at(-1)?.seq ?? 0;
	await new Promise((r) => setTimeout(r, 3 * INTERVAL * 1000 + 200));
	const per = [...checksBySite(since2).values()].map((t) => t.length);
	assert.ok(
		per.every((n) => n >= 2 && n <= 4),
		`checks per site in 3 intervals: ${per.join(',')}`,
	);
});

test('regular batches: a batch retried after a worker SIGKILL does not call again the sites it had checked', async () => {
	// Regular batch activities, one call at a time, watcher 0's four sites (210001 210002 210003 210005) in one batch,
	// checked in order of their last check, oldest first (WatchState.tickOrder): the order the earlier ticks left.
	const regularFile = fleetFile(
		'regular',
		[1, 2, 3, 5, 6, 7, 9],
		{},
		{ activities: 'regular', concurrency: 1, batchSize: 4 },
	);
	assert.match(await fleet('apply', regularFile), /settings\.activities "local" → "regular" \(every site\)/);
	const h = env.client.workflow.getHandle(watcherId(FLEET, 0));
	let order: string[] = [];
	await waitFor(
		'a regular tick',
		async () => {
			const st = await h.query(statusQuery);
			order = st.sites
				.map((x, i) => ({ id: x.site_id, i, at: x.at ?? 0 }))
				.sort((a, b) => a.at - b.at || a.i - b.i)
				.map((x) => x.id);
			return st.settings.activities === 'regular' && st.sites.every((x) => x.state === 'quiet');
		},
		30_000,
		200,
	);
	// One call at a time keeps that order from tick to tick. The third site's check hangs 10 s: the first two are
	// checked (and heartbeated) before the kill. (The site ids' order is not the batch's: a fault on 210003 when it came
	// second left 210001, checked by the batch before, counted as this one's — once in 5 runs under load.)
	assert.deepEqual([...order].sort(), ['210001', '210002', '210003', '210005']);
	const [first, second, hung, last] = order;
	const since = s.sim.requests().at(-1)?.seq ?? 0;
	s.sim.addFault({
		op: 'dashboard.isUnderAttack',
		kind: 'delay',
		delayMs: 10_000,
		count: 1,
		pathContains: `/site/${hung}/`,
	});
	await waitFor(
		'the hanging check in flight',
		async () => s.sim.requests({ op: 'dashboard.isUnderAttack', since }).some((r) => r.fault === 'delay'),
		20_000,
		50,
	);
	const hungSeq = (
		s.sim.requests({ op: 'dashboard.isUnderAttack', since }).find((r) => r.fault === 'delay') as { seq: number }
	).seq;
	// Past the heartbeat throttle (0.8 × the 3 s heartbeat timeout, with margin), so the progress has reached the server.
	await new Promise((r) => setTimeout(r, 4000));
	const runId = (await h.describe()).runId;
	await kill(child);
	const killedAt = s.sim.nowMs();
	child = spawnWorker(env, s.url, queue);
	// The batch is retried (heartbeat timeout) on the new worker; find when that retried attempt completed.
	let retriedDoneAt = 0;
	await waitFor(
		'the retried batch completed',
		async () => {
			const events = (await env.client.workflow.getHandle(watcherId(FLEET, 0), runId).fetchHistory()).events ?? [];
			const started = events.find((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 0) >= 2);
			const done =
				started &&
				events.find(
					(e) => e.activityTaskCompletedEventAttributes?.startedEventId?.toString() === started.eventId?.toString(),
				);
			if (done?.eventTime)
				retriedDoneAt = Number(done.eventTime.seconds) * 1000 + Math.floor((done.eventTime.nanos ?? 0) / 1e6);
			return retriedDoneAt > 0;
		},
		60_000,
		300,
	);
	// One call at a time: the two checks of the watcher's sites just before the hanging one are this batch's first two
	// (a batch in flight when the fault was added may have checked the first before `since`). Not a window from the
	// previous batch's check of the hanging site: a batch of the old settings, four calls at once, ran just before.
	const siteOf = (r: { path: string }) => /\/site\/([^/]+)\//.exec(r.path)?.[1];
	const before = s.sim
		.requests({ op: 'dashboard.isUnderAttack' })
		.filter((r) => r.seq < hungSeq && order.includes(siteOf(r) as string))
		.map(siteOf);
	assert.deepEqual(
		before.slice(-2),
		[first, second],
		`sites ${first} and ${second} were checked, in that order, just before the hanging ${hung}`,
	);
	const retried = s.sim
		.requests({ op: 'dashboard.isUnderAttack', since: hungSeq })
		.filter((r) => r.time >= killedAt && r.time <= retriedDoneAt)
		.map((r) => /\/site\/([^/]+)\//.exec(r.path)?.[1] as string)
		.filter((x) => order.includes(x));
	// The retried attempt calls only what the killed one had not finished: the hanging site (its answer was lost) and the last.
	assert.deepEqual(retried, [hung, last], `calls of the retried batch: ${retried.join(', ')}`);
	await waitFor(
		'every site checked again after the kill',
		async () => (await h.query(statusQuery)).sites.every((x) => (x.at ?? 0) > killedAt && x.state === 'quiet'),
		30_000,
		300,
	);
});

test('a watcher run recorded before fleet-check-times replays under the current code (patched)', async () => {
	// fixtures/fleet-budget-run.json: a watcher of 12 sites every second under a request budget of 4/s (code of
	// 2026-11-26 before `fleet-check-times`: urgent and deferred sites first, a check timed when its batch returned),
	// local batches of 4 with deferrals, 11 markers (the patches and the batches' local activities).
	const json = JSON.parse(readFileSync(new URL('./fixtures/fleet-budget-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	assert.ok((history.events ?? []).filter((e) => e.markerRecordedEventAttributes).length >= 5);
	// Throws DeterminismViolationError if the current code issued other commands for it.
	await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'fleet-budget-run');
});
