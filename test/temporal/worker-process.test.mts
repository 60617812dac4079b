/**
 * The worker as a production process, against a real Temporal dev server kept in a SQLite file (so it
 * can be stopped and started again on the same state) and the simulator:
 *  - bad settings: exit 1 at once with one line naming the setting;
 *  - `secsvc worker` SIGKILLed: no worker process remains (within a second), nothing polls the task queue, and the
 *    next worker runs the runbooks;
 *  - SIGTERM drains: the slow activity in flight completes once, exit 0; a second SIGTERM or the grace running out
 *    end the process at once;
 *  - /healthz and /readyz while the dev server is stopped and started again.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { freePort, startTemporalDev, type TemporalDev } from '../../demo/stack.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { workerCommand } from '../../worker/src/process/build.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { n8nRuntime } from '../n8n/harness.mts';
import { APP_ID, ROOT, SECRET, startSim, uniqueQueue, waitFor } from './helpers.mts';
import { startAttackReport } from '../../workflows/report/client.mts';

const SECSVC = join(ROOT, 'worker/bin/secsvc.mjs');
const dir = mkdtempSync(join(tmpdir(), 'secsvc-worker-process-'));
const dbFile = join(dir, 'temporal.db');
let dev: TemporalDev;
let temporal: Client;
let sim: RunningSimulator;
let bundle: string;
let workerArgs: string[];
const procs: ChildProcess[] = [];

before(async () => {
	console.log('# before: bundle, build, dev server, simulator');
	bundle = (await workflowBundle()).codePath; // built once, shared by every worker below
	workerArgs = workerCommand().args; // compiled worker (built when stale) with its node flags
	[dev, sim] = await Promise.all([startTemporalDev({ dbFile }), startSim(31)]);
	temporal = new Client({ connection: await Connection.connect({ address: dev.address }) });
});
after(async () => {
	for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
	await temporal?.connection.close();
	await sim?.close();
	await dev?.stop();
	rmSync(dir, { recursive: true, force: true });
});

interface Proc {
	child: ChildProcess;
	started: number;
	out(): string;
	exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

function env(queue: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	const e: NodeJS.ProcessEnv = { ...process.env };
	for (const k of Object.keys(e)) if (k.startsWith('SECSVC_') || k.startsWith('TEMPORAL_')) delete e[k];
	return {
		...e,
		TEMPORAL_ADDRESS: dev.address,
		TEMPORAL_TASK_QUEUE: queue,
		SECSVC_BASE_URL: sim.url,
		SECSVC_APP_ID: APP_ID,
		SECSVC_SECRET: SECRET,
		SECSVC_TIMEOUT_MS: '10000',
		SECSVC_RETRIES: '1',
		SECSVC_WORKFLOW_BUNDLE: bundle,
		...(process.env.TEMPORAL_BIN ? { TEMPORAL_BIN: process.env.TEMPORAL_BIN } : {}),
		...extra,
	};
}

/** `secsvc worker` (the launcher: on node < 22.15 it runs the worker as a child) or the compiled worker itself. */
function launch(how: 'secsvc' | 'compiled', e: NodeJS.ProcessEnv, node = process.execPath): Proc {
	const args = how === 'secsvc' ? [SECSVC, 'worker'] : workerArgs;
	const child = spawn(node, args, { cwd: ROOT, env: e, stdio: ['ignore', 'pipe', 'pipe'] });
	procs.push(child);
	let out = '';
	const add = (d: Buffer) => {
		if (out.length < 50_000) out += d.toString();
	};
	child.stdout?.on('data', add);
	child.stderr?.on('data', add);
	const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((r) =>
		child.once('exit', (code, signal) => r({ code, signal, at: Date.now() })),
	);
	return { child, started: Date.now(), out: () => out, exit };
}

const ready = async (p: Proc) => {
	await waitFor(
		'worker ready',
		async () => {
			if (p.child.exitCode !== null) throw new Error(`worker exited ${p.child.exitCode}: ${p.out()}`);
			return p.out().includes('secsvc worker: task queue');
		},
		60_000,
		100,
	);
	console.log(`# worker ${p.child.pid} ready after ${Date.now() - p.started} ms`);
};

function procStat(pid: number): string[] | undefined {
	try {
		const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return st.slice(st.lastIndexOf(')') + 2).split(' '); // [state, ppid, ...]
	} catch {
		return undefined;
	}
}
const alive = (pid: number) => {
	const s = procStat(pid);
	return s !== undefined && s[0] !== 'Z';
};
const childrenOf = (pid: number) =>
	readdirSync('/proc')
		.filter((d) => /^\d+$/.test(d) && Number(procStat(Number(d))?.[1]) === pid)
		.map(Number);

const commOf = (pid: number) => {
	try {
		return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
	} catch {
		return undefined;
	}
};
const isWorker = (pid: number) => {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker/dist/main.mjs');
	} catch {
		return false;
	}
};

/** The pid the worker runs as behind `secsvc worker`: its child (node < 22.15) or itself (process.execve). */
async function workerPidOf(p: Proc): Promise<number> {
	await sleep(200);
	return childrenOf(p.child.pid as number).find(isWorker) ?? (p.child.pid as number);
}

/** Node 24 (the n8n runtime's, scripts/n8n.sh): `secsvc worker` execs the worker in place there. */
const node24 = () => n8nRuntime().node;

async function startReport(queue: string, id: string) {
	return startAttackReport(temporal, queue, { site_id: sim.sim.firstIds().site_id, periodHours: 1 }, id);
}

async function historyEvents(id: string) {
	return (await temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
}

/** Who completed the workflow tasks and ran the activities. */
const identities = (evs: Awaited<ReturnType<typeof historyEvents>>) =>
	evs
		.flatMap((e) => [e.workflowTaskCompletedEventAttributes?.identity, e.activityTaskStartedEventAttributes?.identity])
		.filter((x): x is string => !!x);

test('bad configuration: exit 1 at once, one line naming the setting', { timeout: 60_000 }, async () => {
	const closed = await freePort();
	const q = uniqueQueue('badcfg');
	const cases: [string, 'secsvc' | 'compiled', Record<string, string>, RegExp][] = [
		['no secret', 'compiled', { SECSVC_SECRET: '' }, /SECSVC_SECRET.*required/],
		[
			'unreachable Temporal',
			'compiled',
			{ TEMPORAL_ADDRESS: `127.0.0.1:${closed}` },
			new RegExp(`TEMPORAL_ADDRESS.*127\\.0\\.0\\.1:${closed}.*cannot connect`),
		],
		['malformed grace', 'compiled', { SECSVC_SHUTDOWN_GRACE: 'soon' }, /SECSVC_SHUTDOWN_GRACE.*"soon"/],
		[
			'secret refused by the service',
			'compiled',
			{ SECSVC_SECRET: 'not-the-secret-4711' },
			/SECSVC_SECRET.*refused a token/,
		],
	];
	await Promise.all(
		cases.map(async ([name, how, extra, re]) => {
			const t0 = Date.now();
			const p = launch(how, env(q, extra));
			const ex = await p.exit;
			const lines = p.out().trim().split('\n');
			assert.equal(ex.code, 1, `${name}: ${p.out()}`);
			assert.equal(lines.length, 1, `${name}: one line, got ${p.out()}`);
			assert.match(lines[0], re, name);
			assert.ok(
				!p.out().includes('not-the-secret-4711') && !p.out().includes(SECRET),
				`${name}: no secret in the output`,
			);
			// "at once": no retrying, no polling; the time is node loading the worker's modules (~2 s on an idle
			// machine, several times that when the machine is loaded)
			console.log(`# ${name}: exit ${ex.code} after ${ex.at - t0} ms`);
			assert.ok(ex.at - t0 < 60_000, `${name}: exited at once (${ex.at - t0} ms)`);
		}),
	);
});

test(
	'`secsvc worker` SIGKILLed: the worker ends within a second, nothing polls, the next worker runs the runbooks',
	{ timeout: 120_000 },
	async () => {
		const queue = uniqueQueue('orphan');
		// this node (20: the launcher runs the worker as a child) and node 24 (process.execve: one process)
		const hasExecve = typeof (process as { execve?: unknown }).execve === 'function';
		for (const [node, inPlace] of [
			[process.execPath, hasExecve],
			[node24(), true],
		] as const) {
			const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
			const p = launch('secsvc', env(queue), node);
			await ready(p);
			const pid = await workerPidOf(p);
			assert.equal(
				pid === p.child.pid,
				inPlace,
				`${version}: worker ${inPlace ? 'is' : 'is the child of'} the secsvc process`,
			);
			const t0 = Date.now();
			process.kill(p.child.pid as number, 'SIGKILL');
			await waitFor(`${version}: no worker process left`, async () => !alive(pid), 1000, 20);
			console.log(
				`# ${version}: worker gone ${Date.now() - t0} ms after SIGKILL of secsvc worker (pid ${p.child.pid}, worker pid ${pid})`,
			);
		}

		// Killed while the worker child is still loading its modules (its event loop not yet running: the kernel's
		// parent-death signal, set with setpriv, ends it).
		if (!hasExecve) {
			const p = launch('secsvc', env(queue));
			// Once it runs node (setpriv arms the signal, then execs): killed before, the launcher's death comes before
			// the signal is armed, and only the pipe (after loading) ends the child (final run of session 24: > 1 s).
			const pid = await waitFor(
				'worker child started',
				async () => childrenOf(p.child.pid as number).find((c) => isWorker(c) && commOf(c) === 'node'),
				60_000,
				10,
			);
			const t0 = Date.now();
			process.kill(p.child.pid as number, 'SIGKILL');
			await waitFor('no loading worker left', async () => !alive(pid), 1000, 20);
			console.log(`# loading worker gone ${Date.now() - t0} ms after SIGKILL of secsvc worker`);
			assert.ok(!p.out().includes('secsvc worker: task queue'), 'it never started polling');
		}

		// Nothing works the queue any more: a runbook started now is not run by anyone...
		await sleep(1000); // (the server drops the dead workers' long polls)
		const id = `report-orphan-${Date.now()}`;
		const h = await startReport(queue, id);
		await sleep(1500);
		assert.ok(
			!(await historyEvents(id)).some((e) => e.workflowTaskCompletedEventAttributes),
			'no orphaned worker ran the task',
		);
		// ...until the next worker runs it.
		const second = launch('compiled', env(queue));
		await ready(second);
		await h.result();
		const ids = identities(await historyEvents(id));
		assert.ok(
			ids.length >= 2 && ids.every((i) => i.startsWith(`${second.child.pid}@`)),
			`every task ran on the new worker: ${ids.join(', ')}`,
		);
		second.child.kill('SIGTERM');
		assert.equal((await second.exit).code, 0, second.out());
	},
);

test(
	'SIGTERM to `secsvc worker` drains: the slow activity in flight completes once, exit 0',
	{ timeout: 120_000 },
	async () => {
		const s = await startSim(37);
		try {
			const queue = uniqueQueue('drain');
			const w = launch('secsvc', { ...env(queue, { SECSVC_SHUTDOWN_GRACE: '20s' }), SECSVC_BASE_URL: s.url });
			await ready(w);
			s.sim.addFault({ op: 'dashboard.ddosEvents', kind: 'delay', delayMs: 4000, count: 1 });
			const id = `report-drain-${Date.now()}`;
			const h = await startAttackReport(temporal, queue, { site_id: s.sim.firstIds().site_id, periodHours: 1 }, id);
			await waitFor(
				'slow ddosEvents request in flight',
				async () => s.sim.requests({ op: 'dashboard.ddosEvents' }).length >= 1,
				30_000,
				50,
			);
			const pid = await workerPidOf(w);
			const t0 = Date.now();
			w.child.kill('SIGTERM');
			// The worker says it drains in the same step that asks its pollers to stop (process/main.mts onSignal).
			await waitFor('the worker draining', async () => /SIGTERM: draining/.test(w.out()), 30_000, 20);
			const late = await startReport(queue, `${id}-late`); // started while draining: not taken
			const ex = await w.exit;
			assert.ok(!alive(pid), 'the worker process ended with secsvc worker');
			console.log(`# drained in ${ex.at - t0} ms (activity delayed 4000 ms)`);
			assert.equal(ex.code, 0, w.out());
			assert.ok(ex.at - t0 >= 2000, `waited for the running activity (${ex.at - t0} ms)`);
			assert.match(w.out(), /SIGTERM: draining/);

			// The activity completed on its first attempt, recorded before the process exited.
			const evs = await historyEvents(id);
			const sched = evs.find(
				(e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'dashboard.ddosEvents',
			);
			assert.ok(sched, 'ddosEvents scheduled');
			const sid = Number(sched.eventId);
			const started = evs.find((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === sid);
			assert.equal(started?.activityTaskStartedEventAttributes?.attempt, 1);
			assert.ok(
				evs.some((e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === sid),
				'completed, not failed or cancelled',
			);

			assert.equal(s.sim.requests({ op: 'dashboard.ddosEvents' }).length, 1, 'requested once: not retried');
			assert.ok(
				!(await historyEvents(late.workflowId)).some((e) => e.workflowTaskCompletedEventAttributes),
				'no new task taken while draining',
			);
			await Promise.all([h.terminate('test over'), late.terminate('test over')]); // (a next worker would finish them: see the SIGKILL test)
		} finally {
			await s.close();
		}
	},
);

test(
	'drain cut short: the grace running out or a second SIGTERM end the worker at once',
	{ timeout: 120_000 },
	async () => {
		const s = await startSim(41);
		const handles: Awaited<ReturnType<typeof startReport>>[] = [];
		try {
			const slowMs = 8000;
			s.sim.addFault({ op: 'dashboard.ddosEvents', kind: 'delay', delayMs: slowMs, count: 2 });
			const [qa, qb] = [uniqueQueue('grace'), uniqueQueue('twice')];
			const a = launch('compiled', { ...env(qa, { SECSVC_SHUTDOWN_GRACE: '1s' }), SECSVC_BASE_URL: s.url });
			const b = launch('compiled', { ...env(qb, { SECSVC_SHUTDOWN_GRACE: '30s' }), SECSVC_BASE_URL: s.url });
			await Promise.all([ready(a), ready(b)]);
			for (const q of [qa, qb])
				handles.push(await startAttackReport(temporal, q, { site_id: s.sim.firstIds().site_id }, `report-${q}`));
			await waitFor(
				'both slow requests in flight',
				async () => s.sim.requests({ op: 'dashboard.ddosEvents' }).length >= 2,
				30_000,
				50,
			);
			// Without the cut both would drain until their slow request is answered (the simulator's clock).
			const answered =
				Math.min(...s.sim.requests({ op: 'dashboard.ddosEvents' }).map((r) => r.recvAt as number)) + slowMs;
			const t0 = Date.now();
			a.child.kill('SIGTERM');
			b.child.kill('SIGTERM');
			// The second SIGTERM once b has taken the first: two sent while it gets no CPU arrive as one (Linux keeps one
			// pending signal of a kind), and b drained for its whole grace.
			await waitFor('b draining', async () => /SIGTERM: draining/.test(b.out()), 30_000, 20);
			b.child.kill('SIGTERM');
			const [ea, eb] = await Promise.all([a.exit, b.exit]);
			console.log(
				`# grace 1 s: exit ${ea.code} after ${ea.at - t0} ms; second SIGTERM: exit ${eb.code} after ${eb.at - t0} ms`,
			);
			assert.equal(ea.code, 1, a.out());
			assert.match(a.out(), /grace of 1000 ms ran out/);
			assert.ok(ea.at - t0 >= 1000 && ea.at < answered, `grace: ${ea.at - t0} ms, answer at ${answered - t0} ms`);
			assert.equal(eb.code, 143, b.out());
			assert.match(b.out(), /SIGTERM again; stopping now/);
			assert.ok(eb.at < answered, `second SIGTERM: ${eb.at - t0} ms, answer at ${answered - t0} ms`);
		} finally {
			await Promise.all(handles.map((h) => h.terminate('test over').catch(() => {})));
			await s.close();
		}
	},
);

test('/healthz and /readyz while the Temporal server stops and starts again', { timeout: 120_000 }, async () => {
	const port = await freePort();
	const queue = uniqueQueue('health');
	const w = launch('compiled', env(queue, { SECSVC_HEALTH_ADDRESS: `127.0.0.1:${port}` }));
	await ready(w);
	const get = async (path: string) => {
		const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
		return {
			status: r.status,
			body: (await r.json()) as {
				ready?: boolean;
				status?: string;
				checks?: Record<string, { ok: boolean; error?: string }>;
			},
		};
	};
	assert.deepEqual(await get('/healthz'), { status: 200, body: { status: 'ok' } });
	const up = await get('/readyz');
	assert.equal(up.status, 200, JSON.stringify(up.body));
	assert.deepEqual(up.body, {
		ready: true,
		checks: { temporal: { ok: true }, polling: { ok: true }, api: { ok: true } },
	});

	const [devPort, httpPort] = [Number(dev.address.split(':')[1]), Number(new URL(dev.httpUrl).port)];
	let t = Date.now();
	await dev.stop();
	const down = await waitFor(
		'readyz 503',
		async () => {
			const r = await get('/readyz');
			return r.status === 503 && r;
		},
		20_000,
		250,
	);
	assert.equal(down.body.ready, false);
	assert.equal(down.body.checks?.temporal.ok, false, JSON.stringify(down.body));
	assert.ok((down.body.checks?.temporal.error ?? '').length > 0, 'says why');
	assert.deepEqual(down.body.checks?.api, { ok: true });
	assert.equal((await get('/healthz')).status, 200, 'still alive');
	console.log(`# dev server stopped, /readyz 503 after ${Date.now() - t} ms: ${down.body.checks?.temporal.error}`);
	t = Date.now();

	dev = await startTemporalDev({ port: devPort, httpPort, dbFile });
	await waitFor('readyz 200 again', async () => (await get('/readyz')).status === 200, 30_000, 250);
	console.log(`# dev server restarted, /readyz 200 after ${Date.now() - t} ms`);
	t = Date.now();
	assert.equal(w.child.exitCode, null, 'the same worker process');
	const h = await startReport(queue, `report-health-${Date.now()}`);
	await h.result(); // polling again
	console.log(`# runbook completed ${Date.now() - t} ms after`);
	w.child.kill('SIGTERM');
	assert.equal((await w.exit).code, 0, w.out());
});
