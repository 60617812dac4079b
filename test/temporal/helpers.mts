/**
 * Test helpers: a real Temporal dev server (the CLI from scripts/temporal.sh, passed to @temporalio/testing as an
 * existing path), the simulator on an ephemeral port, and workers (in-process or as a child process).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client as TemporalClient } from '@temporalio/client';
import { startSimulator, type RunningSimulator, type SimOptions } from '../../simulator/index.mts';
import { createClient, type Client } from '../../api/client.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import type { WorkerConfig } from '../../worker/src/process/config.mts';
import type { RunningWorker } from '../../worker/src/process/worker.mts';
import { coordinatorQueueFor } from '../../worker/src/process/admission.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import type { PlanInput } from '../../api/runbook/plan.ts';
import { workerCommand } from '../../worker/src/process/build.mts';
import { SA } from '../../workflows/attackResponse/searchAttributes.mts';
import { startDurableCall } from '../../workflows/durableCall/client.mts';
import { announceStarted, captureOutput, freePort, startWorkerProcess, type WorkerProcess } from '../../demo/stack.mts';
import '../helpers/started.mts'; // a failing test prints what its file started

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const APP_ID = 'app-temporal-tests';
export const SECRET = 'S3cret-temporal-0f9e8d7c6b5a';

let bin: string | undefined;
export function temporalBin(): string {
	bin ??=
		process.env.TEMPORAL_BIN ??
		execFileSync('bash', [`${ROOT}scripts/temporal.sh`, 'path'], {
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'inherit'],
		}).trim();
	return bin;
}

/** A dev server; `extraArgs` for `temporal server start-dev` (e.g. `--dynamic-config-value` pairs). */
export async function createEnv(extraArgs: string[] = []): Promise<TestWorkflowEnvironment> {
	const { TestWorkflowEnvironment } = await import('@temporalio/testing'); // lazily: not every file starts one
	const env = await TestWorkflowEnvironment.createLocal({
		server: {
			executable: { type: 'existing-path', path: temporalBin() },
			ip: '127.0.0.1',
			log: { format: 'pretty', level: 'error' },
			// the runbooks' custom search attributes (workflows/attackResponse/searchAttributes.mts)
			searchAttributes: Object.values(SA),
			extraArgs,
		},
	});
	announceStarted({ what: 'temporal dev server (TestWorkflowEnvironment)', addresses: { grpc: env.address } });
	return env;
}

/** The dev server of the test file that called `useDevServer()` (one per file: node --test runs each file alone). */
export let env: TestWorkflowEnvironment;

/**
 * The set-up of a test file on the real dev server: started before its tests (`extraArgs` for `temporal server
 * start-dev`, or a function that finds them; the workflow bundle built first unless `bundle: false`, for files whose
 * workers build their own), then `start` (what the file starts on it), in one hook: node --test runs a file's root
 * `before` hooks without waiting for each other. After the tests, `stop` stops what the file started, then the server
 * goes. The file reads it as `env`.
 */
export function useDevServer(
	o: {
		bundle?: boolean;
		extraArgs?: string[] | (() => Promise<string[]>);
		start?: () => Promise<unknown>;
		stop?: () => Promise<unknown>;
	} = {},
): void {
	before(async () => {
		env = await createEnv(typeof o.extraArgs === 'function' ? await o.extraArgs() : o.extraArgs);
		if (o.bundle !== false) await workflowBundle();
		await o.start?.();
	});
	after(async () => {
		try {
			await o.stop?.();
		} finally {
			await env?.teardown();
		}
	});
}

/** A test's world on the file's dev server: a simulator (seed), an in-process worker on a queue of its own, an operator's API client; `close()` stops all three. */
export async function siteWorld(seed: number, name: string) {
	const s = await startSim(seed);
	const ids: Ids = s.sim.firstIds();
	const queue = uniqueQueue(name);
	const worker = await startInProcessWorker(env, s.url, queue);
	const op = operatorClient(s.url);
	const close = async () => {
		await worker.shutdown();
		await op.close();
		await s.close();
	};
	return { s, ids, queue, worker, op, close };
}

/** A worker process on the file's dev server that serves Prometheus metrics (on a free port, read at `metricsUrl`). */
export async function metricsWorker(
	simUrl: string,
	taskQueue: string,
): Promise<{ worker: WorkerProcess; metricsUrl: string }> {
	const port = await freePort();
	const worker = await startWorkerProcess({
		temporalAddress: env.address,
		taskQueue,
		simUrl,
		appId: APP_ID,
		secret: SECRET,
		env: { SECSVC_METRICS_ADDRESS: `127.0.0.1:${port}` },
	});
	return { worker, metricsUrl: `http://127.0.0.1:${port}/metrics` };
}

/** `n` HTTP-filter creates on the site's domain-port, started as durable calls; the policies are `<name>-<i>`. */
export function startFilterCreates(queue: string, ids: Ids, n: number, name: string) {
	return Promise.all(
		Array.from({ length: n }, (_, i) =>
			startDurableCall(
				env.client,
				queue,
				{
					op: 'applicationProtection.httpFilter.create',
					params: {
						site_id: ids.site_id,
						domain_port_id: ids.domain_port_id,
						action: 'BLOCK_HTTP',
						host: `h${i}.example.com`,
						uri: `/p${i}`,
						p_name: `${name}-${i}`,
					},
				},
				`${name}-filter-${process.pid}-${i}-${Date.now()}`,
			),
		),
	);
}

/** A blacklist as read by `liveSettings`, as sorted `start-end` ranges. */
export const listedRanges = (live: { blacklist: unknown }) =>
	(live.blacklist as { start_ip: string; end_ip: string }[]).map((e) => `${e.start_ip}-${e.end_ip}`).sort();

/** A simulator on an ephemeral port with the tests' app credentials; `more` for other options (a fleet, faults). */
export function startSim(seed = 7, more: Partial<SimOptions> = {}): Promise<RunningSimulator> {
	return startSimulator({ port: 0, appId: APP_ID, secret: SECRET, seed, ...more });
}

/**
 * The tests that approve by a typed name run their workers opted in to unverified approvals (issue 41: without an
 * identity provider and without this opt-in, a runbook that requires approval is refused at start). Every worker
 * these helpers start (workerConfig, spawnWorker, and through process.env demo/stack.mts's startWorkerProcess) gets
 * it; the proven path is tested with a real provider (identity.test, runbook-identity.test), the default refusal in
 * approvalDefault.test.
 */
export const UNVERIFIED_OPT_IN = { SECSVC_UNVERIFIED_APPROVALS: '1' } as const;
process.env.SECSVC_UNVERIFIED_APPROVALS ??= UNVERIFIED_OPT_IN.SECSVC_UNVERIFIED_APPROVALS;

export function workerConfig(env: TestWorkflowEnvironment, simUrl: string, taskQueue: string): WorkerConfig {
	return {
		unverifiedApprovals: true,
		temporal: { address: env.address, namespace: 'default', taskQueue },
		api: { baseUrl: simUrl, appId: APP_ID, secret: SECRET, tokenKind: 'app', timeoutMs: 4000, retries: 1 },
	};
}

let queueN = 0;
export const uniqueQueue = (name: string) => `${name}-${process.pid}-${++queueN}`;

export async function startInProcessWorker(
	env: TestWorkflowEnvironment,
	simUrl: string,
	taskQueue: string,
): Promise<RunningWorker> {
	// A failing test's report names its queues: the workflows it started are found by them (TaskQueue = '…').
	announceStarted({
		what: 'in-process worker',
		addresses: { temporal: env.address, taskQueue, coordinators: coordinatorQueueFor(taskQueue), service: simUrl },
	});
	const { startWorker } = await import('../../worker/src/process/worker.mts'); // lazily: 32 of the 61 importers start none
	const w = await startWorker(workerConfig(env, simUrl, taskQueue), { connection: env.nativeConnection });
	const stop = w.shutdown;
	w.shutdown = async () => {
		await endCoordinators(env.client, taskQueue).catch(() => {});
		await stop();
	};
	return w;
}

/**
 * Before a test's in-process worker stops, the site coordinators on its queue end. Every seed's first site is the
 * same (20001) and each test has a queue of its own: a coordinator left RUNNING there is never polled again, and the
 * next test's claim for that site attaches to it and waits forever (test/README.md, the "bulk add" hang). One
 * completes once nothing is held; one still holding after 20 s (a failed test's runbook) is terminated.
 */
async function endCoordinators(client: TemporalClient, taskQueue: string): Promise<void> {
	const query = `TaskQueue = '${coordinatorQueueFor(taskQueue)}' AND ExecutionStatus = 'Running'`;
	const running = async () => {
		const ids: string[] = [];
		for await (const x of client.workflow.list({ query })) ids.push(x.workflowId);
		return ids;
	};
	const until = Date.now() + 20_000;
	let left = await running();
	while (left.length && Date.now() < until) {
		await new Promise((r) => setTimeout(r, 250));
		left = await running();
	}
	for (const id of left)
		await client.workflow
			.getHandle(id)
			.terminate('its test ended: nobody polls its queue any more')
			.catch(() => undefined); // completed meanwhile
}

/** The worker as a child process (the compiled worker with its node flags, as deployed: worker/src/process/build.mts), configured through its environment. */
export function spawnWorker(
	env: { address: string },
	simUrl: string,
	taskQueue: string,
	extraEnv: NodeJS.ProcessEnv = {},
): ChildProcess {
	const cmd = workerCommand();
	const child = spawn(cmd.command, cmd.args, {
		cwd: ROOT,
		env: {
			...process.env,
			...cmd.env,
			TEMPORAL_ADDRESS: env.address,
			TEMPORAL_NAMESPACE: 'default',
			TEMPORAL_TASK_QUEUE: taskQueue,
			SECSVC_BASE_URL: simUrl,
			SECSVC_APP_ID: APP_ID,
			SECSVC_SECRET: SECRET,
			SECSVC_TOKEN_KIND: 'app',
			SECSVC_TIMEOUT_MS: '4000',
			SECSVC_RETRIES: '1',
			...extraEnv,
		},
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const out = captureOutput(0);
	child.stdout?.on('data', out.add);
	child.stderr?.on('data', out.add);
	announceStarted({
		what: 'worker process',
		pid: child.pid,
		addresses: { temporal: env.address, taskQueue, service: simUrl },
		log: out.tail,
	});
	return child;
}

/** An API client of its own (the "operator"), to read and change settings behind the runbook's back. */
export function operatorClient(simUrl: string): Client & { close: () => Promise<void> } {
	const transport = createUndiciTransport({ connections: 2 });
	const c = createClient({
		baseUrl: simUrl,
		transport,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		retries: 0,
	});
	return Object.assign(c, { close: () => transport.close() });
}

export interface Ids {
	customer_id: string;
	site_id: string;
	domain_port_id: string;
}

export function plan(ids: Ids, over: Partial<PlanInput> = {}): PlanInput {
	return {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		detection: {
			rapidMode: true,
			thresholds: [
				{ name: 'tcp_syn', factor: 0.5 },
				{ name: 'total_traffic', factor: 0.5 },
			],
		},
		blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0, protectedRanges: ['198.51.100.2'] },
		ipAuth: {
			action: 'ratelimit',
			enable: 1,
			mode: 2,
			action_ratelimit: { duration: 120, ratelimit_rps: 50, threshold_rps: 100 },
		},
		switches: [{ name: 'p_auth', enable: 1 }],
		cooldownSeconds: 2,
		pollSeconds: 1,
		activityTimeoutSeconds: 5,
		maxDurationSeconds: 120,
		...over,
	};
}

export const ATTACK_SOURCES = [{ ip: '203.0.113.5' }, { ip: '203.0.113.6' }, { cidr: '198.51.100.0/30' }];

/** Everything the default plan touches, read live. */
export async function liveSettings(c: Client, ids: Ids) {
	const op = { customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0' };
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const pol = await c.call('detection.getPolicy', op);
	return {
		model: pol.model,
		tcp_syn: pol.tcp.tcp_syn,
		total_traffic: pol.total_traffic.total_traffic,
		blacklist: (
			(await c.call('applicationProtection.ipBlacklist.get', dp)) as { p_info: { ipv4: { black_soc: unknown[] } } }
		).p_info.ipv4.black_soc,
		ipAuth: await c.call('applicationProtection.authIp.get', dp),
		switches: await c.call('applicationProtection.switch.list', dp),
	};
}

export async function waitFor<T>(
	what: string,
	fn: () => Promise<T | undefined | false>,
	timeoutMs = 30_000,
	everyMs = 200,
): Promise<T> {
	const end = Date.now() + timeoutMs;
	let last: unknown;
	while (Date.now() < end) {
		try {
			const v = await fn();
			if (v) return v;
		} catch (e) {
			last = e;
		}
		await new Promise((r) => setTimeout(r, everyMs));
	}
	throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

/** Fetches a workflow's full history as JSON text (what Temporal stores). */
export async function historyJson(client: TemporalClient, workflowId: string, runId?: string): Promise<string> {
	const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
	return JSON.stringify(h);
}

/** SIGKILLs (or signals) a child process this test started, by its PID, and resolves once it has exited. */
export function killChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
	return new Promise((resolve) => {
		if (child.exitCode !== null || child.signalCode !== null) return resolve();
		child.once('exit', () => resolve());
		child.kill(signal);
	});
}

/**
 * A Temporal dev server (`temporal server start-dev`, as scripts/temporal.sh start runs it) that keeps its state in a
 * SQLite file, on fixed ports chosen once: `kill()` SIGKILLs it (no shutdown of any kind), `start()` starts it again
 * on the same database file and ports. `address` stays valid across restarts.
 */
export interface DbDevServer {
	address: string;
	/** The HTTP API's base URL (http://127.0.0.1:PORT). */
	http: string;
	dbFile: string;
	child: ChildProcess | undefined;
	start(): Promise<void>;
	kill(): Promise<void>;
	stop(): Promise<void>;
}

export async function devServerWithDb(
	dbFile: string,
	o: { namespace?: string; readyTimeoutMs?: number } = {},
): Promise<DbDevServer> {
	const port = await freePort();
	const httpPort = await freePort();
	const namespace = o.namespace ?? 'default';
	const args = [
		'server',
		'start-dev',
		'--ip',
		'127.0.0.1',
		'--port',
		String(port),
		'--http-port',
		String(httpPort),
		'--headless',
		'--namespace',
		namespace,
		'--log-level',
		'error',
		'--db-filename',
		dbFile,
		'--dynamic-config-value',
		'system.enableActivityEagerExecution=true',
	];
	const srv: DbDevServer = {
		address: `127.0.0.1:${port}`,
		http: `http://127.0.0.1:${httpPort}`,
		dbFile,
		child: undefined,
		async start() {
			if (srv.child && srv.child.exitCode === null && srv.child.signalCode === null)
				throw new Error('dev server already running');
			const child = spawn(temporalBin(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
			srv.child = child;
			const output = captureOutput(20_000);
			child.stderr?.on('data', output.add);
			announceStarted({
				what: `temporal dev server (${dbFile})`,
				pid: child.pid,
				addresses: { grpc: srv.address, http: `http://127.0.0.1:${httpPort}` },
				log: output.tail,
			});
			const deadline = Date.now() + (o.readyTimeoutMs ?? 60_000);
			for (;;) {
				if (child.exitCode !== null)
					throw new Error(`temporal dev server exited with ${child.exitCode}: ${output.head().slice(0, 2000)}`);
				try {
					const r = await fetch(`http://127.0.0.1:${httpPort}/api/v1/namespaces/${encodeURIComponent(namespace)}`, {
						signal: AbortSignal.timeout(2000),
					});
					await r.arrayBuffer();
					if (r.ok) return;
				} catch {
					// not up yet
				}
				if (Date.now() > deadline) {
					await killChild(child);
					throw new Error(
						`temporal dev server (${dbFile}) not ready within ${o.readyTimeoutMs ?? 60_000} ms: ${output.head().slice(0, 2000)}`,
					);
				}
				await new Promise((r) => setTimeout(r, 200));
			}
		},
		async kill() {
			if (srv.child) await killChild(srv.child, 'SIGKILL');
		},
		async stop() {
			if (srv.child) await killChild(srv.child, 'SIGTERM');
		},
	};
	await srv.start();
	return srv;
}

/**
 * A worker child process that is started again whenever it exits on its own (e.g. when the Temporal server it polls
 * went away); `kill()` SIGKILLs the current process and starts a new one; `stop()` ends it for good.
 */
export function supervisedWorker(server: { address: string }, simUrl: string, taskQueue: string) {
	let stopped = false;
	let child: ChildProcess;
	const respawns: number[] = [];
	const run = () => {
		child = spawnWorker(server, simUrl, taskQueue);
		child.once('exit', () => {
			if (stopped || deliberate) return;
			respawns.push(Date.now());
			run();
		});
	};
	let deliberate = false;
	run();
	return {
		get pid() {
			return child.pid;
		},
		/** Times the worker exited by itself and was started again. */
		respawns,
		async kill() {
			deliberate = true;
			await killChild(child, 'SIGKILL');
			deliberate = false;
			run();
		},
		async stop() {
			stopped = true;
			await killChild(child, 'SIGKILL');
		},
	};
}

/** The ids of the first `n` sites of the simulator's seeded world (customer, site, its first domain-port). */
export function siteIds(
	sim: { snapshot(): { sites: { site_id: string; customer_id: string; domain_port_ids: string[] }[] } },
	n: number,
): Ids[] {
	const sites = sim.snapshot().sites;
	if (sites.length < n) throw new Error(`the simulator has ${sites.length} sites, ${n} wanted`);
	return sites
		.slice(0, n)
		.map((s) => ({ customer_id: s.customer_id, site_id: s.site_id, domain_port_id: s.domain_port_ids[0] }));
}

/** A small seeded PRNG (mulberry32) for reproducible "random" moments in tests. */
export function seededRandom(seed: number): () => number {
	announceStarted({ what: 'seeded random moments (seededRandom)', seed });
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Successful is_under_attack checks per site (simulator clock, ms) since a request-log sequence number. */
export function checksBySite(sim: RunningSimulator['sim'], since = 0): Map<string, number[]> {
	const m = new Map<string, number[]>();
	for (const r of sim.requests({ op: 'dashboard.isUnderAttack', since })) {
		if (r.code !== 0) continue;
		const id = /\/site\/([^/]+)\//.exec(r.path)?.[1] ?? '?';
		m.set(id, [...(m.get(id) ?? []), r.time]);
	}
	return m;
}

/**
 * Runs the CLI in-process against a dev server (`address`) and task queue, with extra environment for the call;
 * returns the exit code and what it printed. The environment is restored afterwards.
 */
export async function runCli(
	server: string | { address: string },
	args: string[],
	queue: string,
	extraEnv: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
	const address = typeof server === 'string' ? server : server.address;
	const vars = { TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: queue, ...extraEnv };
	const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
	const { run: cli } = await import('../../worker/src/commands/cli.mts'); // lazily: 10 of the 61 importers run it
	Object.assign(process.env, vars);
	let out = '';
	let err = '';
	try {
		const code = await cli(args, { out: (x) => void (out += x), err: (x) => void (err += x) });
		return { code, out, err };
	} finally {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}
}

/** The fleet tests' plan template: rapid detection, no blacklist, short polls (sites add their domain-ports). */
export const fleetTemplate = {
	detection: { rapidMode: true, thresholds: [] },
	blacklist: { enabled: false },
	cooldownSeconds: 600,
	pollSeconds: 2,
	maxDurationSeconds: 600,
};
