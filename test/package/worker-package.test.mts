/**
 * Issue 40 items 1–2: the worker and CLI as an npm package. `npm pack` of worker/ (its prepack compiles dist/), the
 * tarball `npm install`ed into an empty folder (dependencies from the npm registry, or npm's cache), and from there:
 *  - `secsvc worker` + `secsvc start --plan … --wait` against a dev server and the simulator: the runbook mitigates
 *    and reverts; the worker runs the installed dist/main.mjs, and nothing of tsx or the repository is installed;
 *  - `secsvc sandbox --simulator` on fixed (non-default) ports: Temporal, simulator with an attack, the local identity
 *    provider (its discovery document, approver.env 0600), worker; its HTTP API refuses a web page's write; a runbook
 *    started from the printed plan mitigates; SIGINT stops every process; started again on the same database the
 *    runbook is still there; SIGKILL of the sandbox still leaves no process behind (parent-death signal);
 *  - `secsvc sandbox` given TEMPORAL_ADDRESS starts no Temporal server, only the worker.
 * Figures (pack size, install and start times) are printed as `# …` lines.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, startTemporalDev, type TemporalDev } from '../../demo/stack.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { APP_ID, ATTACK_SOURCES, plan, ROOT, SECRET, startSim, uniqueQueue, waitFor } from '../temporal/helpers.mts';
import { packWorker } from '../helpers/packWorker.mts';

const dir = mkdtempSync(join(tmpdir(), 'secsvc-worker-package-'));
const app = join(dir, 'app');
const SECSVC = join(app, 'node_modules', '.bin', 'secsvc');
const PKG = join(app, 'node_modules', '@security-service', 'worker');
let dev: TemporalDev;
let sim: RunningSimulator;
const procs: ChildProcess[] = [];

/** The environment of a user's shell: nothing of ours, nothing of the repository's. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	const e: NodeJS.ProcessEnv = {};
	for (const k of ['PATH', 'HOME', 'LANG', 'TEMPORAL_BIN']) if (process.env[k]) e[k] = process.env[k];
	return { ...e, XDG_DATA_HOME: join(dir, 'data'), XDG_CACHE_HOME: join(dir, 'cache'), ...extra };
}

before(async () => {
	let t = Date.now();
	const tgz = packWorker(ROOT, dir);
	console.log(`# npm pack: ${Date.now() - t} ms, ${tgz} ${statSync(tgz).size} bytes`);
	execFileSync('mkdir', [app]);
	writeFileSync(join(app, 'package.json'), '{ "name": "soc", "private": true }\n');
	t = Date.now();
	execFileSync('npm', ['install', '--no-audit', '--no-fund', tgz], {
		cwd: app,
		stdio: ['ignore', 'ignore', 'pipe'],
	});
	console.log(`# npm install of the tarball into an empty folder: ${Date.now() - t} ms`);
	[dev, sim] = await Promise.all([startTemporalDev(), startSim(40)]);
});
after(async () => {
	for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
	await sim?.close();
	await dev?.stop();
	rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv) {
	const child = spawn(SECSVC, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
	procs.push(child);
	let out = '';
	let err = '';
	child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
	child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
	const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
	return { child, out: () => out, err: () => err, exit, started: Date.now() };
}

async function until(p: ReturnType<typeof run>, what: string, text: string, ms = 120_000) {
	await waitFor(
		what,
		async () => {
			if (p.child.exitCode !== null) throw new Error(`${what}: exited ${p.child.exitCode}: ${p.out()}${p.err()}`);
			return p.out().includes(text) || p.err().includes(text);
		},
		ms,
		100,
	);
	console.log(`# ${what}: ${Date.now() - p.started} ms`);
}

/** Every process below `pid` (from /proc). */
function descendants(pid: number): number[] {
	const kids = new Map<number, number[]>();
	for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
		try {
			const st = readFileSync(`/proc/${d}/stat`, 'utf8');
			const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
			kids.set(ppid, [...(kids.get(ppid) ?? []), Number(d)]);
		} catch {
			// gone
		}
	}
	const out: number[] = [];
	const walk = (p: number) => (kids.get(p) ?? []).forEach((c) => (out.push(c), walk(c)));
	walk(pid);
	return out;
}
const alive = (pid: number) =>
	existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');

test('the installed package holds compiled JavaScript only: no sources, no tsx', () => {
	assert.ok(existsSync(join(PKG, 'dist', 'main.mjs')) && existsSync(join(PKG, 'dist', 'workflows.js')));
	assert.ok(!existsSync(join(PKG, 'src')), 'no sources in the package');
	assert.ok(!existsSync(join(app, 'node_modules', 'tsx')), 'tsx is not installed');
	const files = execFileSync('find', [PKG, '-name', '*.mts', '-o', '-name', '*.ts'], { encoding: 'utf8' }).trim();
	assert.equal(files, '', 'no TypeScript files');
});

test(
	'secsvc worker and secsvc start from the installed package: a runbook mitigates and reverts',
	{ timeout: 240_000 },
	async () => {
		const ids = sim.sim.firstIds();
		const queue = uniqueQueue('pkg');
		const env = userEnv({
			TEMPORAL_ADDRESS: dev.address,
			TEMPORAL_TASK_QUEUE: queue,
			SECSVC_BASE_URL: sim.url,
			SECSVC_APP_ID: APP_ID,
			SECSVC_SECRET: SECRET,
		});
		const worker = run(['worker'], env);
		await until(worker, 'installed `secsvc worker` ready', 'secsvc worker: task queue');
		const pids = [worker.child.pid as number, ...descendants(worker.child.pid as number)];
		assert.ok(
			pids.some((p) => cmdline(p).includes(`${join(PKG, 'dist', 'main.mjs')}`)),
			'the worker process runs the installed dist/main.mjs',
		);
		assert.ok(!pids.some((p) => cmdline(p).includes('tsx')), 'no tsx in the worker process');
		sim.sim.startAttack({ site_id: ids.site_id, duration: 6, curve: { peakBps: 5e9 }, sources: ATTACK_SOURCES });
		const planFile = join(dir, 'plan.json');
		writeFileSync(planFile, JSON.stringify(plan(ids)));
		const start = run(['start', '--plan', planFile, '--wait'], env);
		assert.equal(await start.exit, 0, start.err());
		// `start --wait` prints two JSON documents: the started runbook, then its result
		const result = JSON.parse(
			start
				.out()
				.split(/\n(?=\{)/)
				.pop() as string,
		) as { outcome: string };
		assert.equal(result.outcome, 'reverted', start.out());
		worker.child.kill('SIGTERM');
		assert.equal(await worker.exit, 0, worker.err());
	},
);

async function listRunbooks(env: NodeJS.ProcessEnv): Promise<{ workflowId: string; status: string; phase?: string }[]> {
	const l = run(['list', '--json'], env);
	assert.equal(await l.exit, 0, l.err());
	return JSON.parse(l.out()) as { workflowId: string; status: string; phase?: string }[];
}

async function sandboxPorts() {
	const ports: number[] = [];
	while (ports.length < 5) {
		const p = await freePort();
		if (!ports.includes(p)) ports.push(p);
	}
	const [grpc, http, ui, simulator, identity] = ports;
	return { grpc, http, ui, simulator, identity };
}

const sandboxArgs = (p: Awaited<ReturnType<typeof sandboxPorts>>) => [
	'sandbox',
	'--simulator',
	...['--grpc-port', String(p.grpc), '--http-port', String(p.http), '--ui-port', String(p.ui)],
	...['--simulator-port', String(p.simulator), '--attack-seconds', '600', '--identity-port', String(p.identity)],
];

test(
	'secsvc sandbox --simulator: fixed ports, an attack to rehearse on, Ctrl-C stops all, the database is kept',
	{ timeout: 300_000 },
	async () => {
		const p = await sandboxPorts();
		const sb = run(sandboxArgs(p), userEnv());
		await until(sb, 'installed `secsvc sandbox --simulator` ready', '  next ');
		const printed = sb.out();
		assert.match(printed, new RegExp(`Temporal gRPC +127\\.0\\.0\\.1:${p.grpc} `));
		assert.match(printed, new RegExp(`Temporal HTTP +http://127\\.0\\.0\\.1:${p.http} `));
		assert.match(printed, new RegExp(`Temporal UI +http://127\\.0\\.0\\.1:${p.ui}\\n`));
		assert.match(
			printed,
			new RegExp(`simulator +http://127\\.0\\.0\\.1:${p.simulator} +app id demo-app, secret demo-secret`),
		);
		const db = join(dir, 'data', 'secsvc', 'sandbox', 'temporal.db');
		assert.match(printed, new RegExp(`database +${db}\\n`));
		// the local identity provider (oidc-provider, a dependency of the package): its discovery document, and the
		// approvers' settings next to the database, readable by the user only
		const issuer = `http://127.0.0.1:${p.identity}`;
		assert.match(printed, new RegExp(`identity +${issuer} +local OpenID Connect provider`));
		const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { issuer: string };
		assert.equal(discovery.issuer, issuer);
		const approverEnv = join(dir, 'data', 'secsvc', 'sandbox', 'approver.env');
		assert.match(printed, new RegExp(`approvers +\\. ${approverEnv} `));
		assert.equal(statSync(approverEnv).mode & 0o777, 0o600);
		assert.match(readFileSync(approverEnv, 'utf8'), new RegExp(`SECSVC_OIDC_ISSUER='${issuer}'`));
		// its HTTP API refuses a web page's write (issue 41 item 3): a text/plain body, a foreign Origin
		const decide = `http://127.0.0.1:${p.http}/api/v1/namespaces/default/workflows/attack-response-20001/update/decide`;
		for (const [headers, status] of [
			[{ 'content-type': 'text/plain' }, 415],
			[{ 'content-type': 'application/json', origin: 'https://evil.example' }, 403],
		] as const) {
			const r = await fetch(decide, { method: 'POST', headers, body: '{"input":{}}' });
			assert.equal(r.status, status, await r.text());
		}
		const ui = await fetch(`http://127.0.0.1:${p.ui}/`);
		assert.equal(ui.status, 200, 'the Web UI answers on its printed port');
		await ui.arrayBuffer();
		const attacks = (await (await fetch(`http://127.0.0.1:${p.simulator}/__sim/attacks`)).json()) as {
			site_id: string;
			status: string;
		}[];
		assert.ok(
			attacks.some((a) => a.site_id === '20001' && a.status === 'ongoing'),
			'an attack on site 20001 is under way',
		);

		const plan = /secsvc start --plan (\S+)/.exec(printed)?.[1] as string;
		const env = userEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${p.grpc}` });
		const start = run(['start', '--plan', plan], env);
		assert.equal(await start.exit, 0, start.err());
		await waitFor(
			'the runbook mitigating the sandbox attack',
			async () =>
				(await listRunbooks(env)).some((r) => r.workflowId === 'attack-response-20001' && r.phase === 'waiting'),
			120_000,
			1000,
		);
		const pids = descendants(sb.child.pid as number);
		assert.ok(pids.length >= 3, `temporal, simulator and worker run below the sandbox (${pids.length})`);
		let t = Date.now();
		process.kill(sb.child.pid as number, 'SIGINT');
		assert.equal(await sb.exit, 0, sb.err());
		console.log(`# sandbox stopped by SIGINT in ${Date.now() - t} ms`);
		assert.deepEqual(pids.filter(alive), [], 'no process of the sandbox is left');
		assert.ok(existsSync(db), 'the database is kept');

		// Started again on the same database: the runbook is still there; SIGKILL of the sandbox leaves nothing behind.
		t = Date.now();
		const again = run(sandboxArgs(p), userEnv());
		await until(again, 'sandbox started again on its database', '  next ');
		const runbook = (await listRunbooks(env)).find((r) => r.workflowId === 'attack-response-20001');
		assert.equal(runbook?.status, 'RUNNING', 'the runbook survived the restart');
		const pids2 = descendants(again.child.pid as number);
		process.kill(again.child.pid as number, 'SIGKILL');
		await waitFor(
			'every sandbox process gone after SIGKILL',
			async () => pids2.filter(alive).length === 0,
			30_000,
			200,
		);
	},
);

test(
	'secsvc sandbox given TEMPORAL_ADDRESS starts no Temporal server, only the worker',
	{ timeout: 180_000 },
	async () => {
		const sb = run(
			['sandbox'],
			userEnv({
				TEMPORAL_ADDRESS: dev.address,
				TEMPORAL_TASK_QUEUE: uniqueQueue('pkg-sandbox'),
				SECSVC_BASE_URL: sim.url,
				SECSVC_APP_ID: APP_ID,
				SECSVC_SECRET: SECRET,
			}),
		);
		await until(sb, 'installed `secsvc sandbox` with TEMPORAL_ADDRESS ready', '  next ');
		assert.match(sb.out(), /starting worker\n/);
		assert.doesNotMatch(sb.out(), /Temporal gRPC/);
		assert.match(sb.out(), new RegExp(`worker +task queue \\S+ on ${dev.address} \\(TEMPORAL_ADDRESS\\)`));
		const pids = descendants(sb.child.pid as number);
		assert.ok(!pids.some((p) => cmdline(p).includes('temporal server')), 'no Temporal server started');
		process.kill(sb.child.pid as number, 'SIGTERM');
		assert.equal(await sb.exit, 0, sb.err());
		assert.deepEqual(pids.filter(alive), []);
	},
);
