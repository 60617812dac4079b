/**
 * The running stack of the demo, the benchmarks and the n8n → Temporal tests: a Temporal dev server (CLI from
 * scripts/temporal.sh, Web UI and HTTP API on), the simulator and the worker as a child process. Loopback only.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { channel } from 'node:diagnostics_channel';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { searchAttributeArgs } from '../workflows/attackResponse/searchAttributes.mts';
import { freePort } from '../worker/src/process/freePort.mts';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

export { freePort } from '../worker/src/process/freePort.mts';

/** `preferred` when nothing listens on it, otherwise a free port. */
export function portOr(preferred: number | undefined): Promise<number> {
	if (!preferred) return freePort();
	return new Promise((resolve) => {
		const s = createServer();
		s.once('error', () => resolve(freePort()));
		s.listen(preferred, '127.0.0.1', () => s.close(() => resolve(preferred)));
	});
}

/** A server or process this process started, as announced on `secsvc:started` (announceStarted). */
export interface StartedThing {
	what: string;
	pid?: number;
	/** Addresses and ports, e.g. { grpc: '127.0.0.1:40123', http: 'http://127.0.0.1:40124' }. */
	addresses?: Record<string, string | number | undefined>;
	seed?: number;
	/** Its log so far (output, stderr, or a request log); a report prints the last lines. */
	log?: () => string;
}

export const STARTED_CHANNEL = 'secsvc:started';

/**
 * Announces what was started on the diagnostics channel `secsvc:started`: a failing test prints it
 * (test/helpers/started.mts); where nobody listens (the demo, the benchmarks) it costs nothing.
 */
export function announceStarted(s: StartedThing): void {
	channel(STARTED_CHANNEL).publish(s);
}

/** A child's output: the first `headMax` characters (start-up lines callers look for) and the last 20,000 (reports). */
export function captureOutput(headMax: number) {
	let head = '';
	let tail = '';
	return {
		add(d: Buffer | string) {
			const s = d.toString();
			if (head.length < headMax) head += s;
			tail = (tail + s).slice(-20_000);
		},
		head: () => head,
		tail: () => tail,
	};
}

let bin: string | undefined;
/** The Temporal CLI (TEMPORAL_BIN, PATH, cache, or obtained by scripts/temporal.sh). */
export function temporalBin(): string {
	bin ??=
		process.env.TEMPORAL_BIN ||
		execFileSync('bash', [`${ROOT}scripts/temporal.sh`, 'path'], {
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'inherit'],
		}).trim();
	return bin;
}

export interface TemporalDev {
	/** gRPC address host:port (workers, SDK clients). */
	address: string;
	/** HTTP API base, e.g. http://127.0.0.1:7243 (the n8n Runbook node talks to it). */
	httpUrl: string;
	/** Web UI, when started with ui. */
	uiUrl?: string;
	/** With guardHttp: the server's own HTTP API behind the guard (it answers only what the guard forwards). */
	serverHttpUrl?: string;
	namespace: string;
	child: ChildProcess;
	stop(): Promise<void>;
}

export interface TemporalDevOptions {
	ui?: boolean;
	port?: number;
	httpPort?: number;
	uiPort?: number;
	namespace?: string;
	/** SQLite file to keep the server's state in (a restart on the same file continues it); in-memory when unset. */
	dbFile?: string;
	/** Give up after this long (ms). */
	readyTimeoutMs?: number;
	/** worker/src/process/httpGuard.mts in front of the HTTP API (the demo): `httpUrl` is the guard. */
	guardHttp?: boolean;
}

/**
 * Dynamic config of the dev server (the same the Temporal TypeScript SDK's own tests use): eager activity dispatch
 * hands an activity the workflow just scheduled straight back to the worker in the workflow-task response, instead
 * of through a poll, so the runbook's first write group (a regular activity) starts without waiting for one
 * (figures: docs/benchmarks.md, bench 3). A production server enables it with the same key; without it the runbooks work the same, a little slower.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = ['--dynamic-config-value', 'system.enableActivityEagerExecution=true'];

/** Starts `temporal server start-dev` (in-memory) and waits until its HTTP API answers for the namespace. */
export async function startTemporalDev(o: TemporalDevOptions = {}): Promise<TemporalDev> {
	const port = o.port ?? (await freePort());
	const httpPort = o.guardHttp ? await freePort() : (o.httpPort ?? (await freePort()));
	const namespace = o.namespace ?? 'default';
	const guarded = o.guardHttp ? await import('../worker/src/process/httpGuard.mts') : undefined;
	const args = [
		'server',
		'start-dev',
		'--ip',
		'127.0.0.1',
		'--port',
		String(port),
		'--http-port',
		String(httpPort),
		'--namespace',
		namespace,
		'--log-level',
		'error',
		...DEV_SERVER_DYNAMIC_CONFIG,
		...searchAttributeArgs(),
		...(guarded?.GUARDED_DEV_SERVER_ARGS ?? []),
	];
	if (o.dbFile) args.push('--db-filename', o.dbFile);
	let uiPort: number | undefined;
	if (o.ui) {
		uiPort = o.uiPort ?? (await freePort());
		args.push('--ui-ip', '127.0.0.1', '--ui-port', String(uiPort));
	} else args.push('--headless');
	// Own process group: a terminal's Ctrl-C reaches the demo, which then stops the server itself (in order).
	const child = spawn(temporalBin(), args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
	const output = captureOutput(20_000);
	child.stderr?.on('data', output.add);
	const guard = guarded && (await guarded.startHttpGuard(`http://127.0.0.1:${httpPort}`, o.httpPort ?? 0));
	const httpUrl = guard?.url ?? `http://127.0.0.1:${httpPort}`;
	announceStarted({
		what: 'temporal dev server',
		pid: child.pid,
		addresses: { grpc: `127.0.0.1:${port}`, http: httpUrl, ui: uiPort && `http://127.0.0.1:${uiPort}`, namespace },
		log: output.tail,
	});
	const stop = async () => {
		await guard?.close();
		await stopChild(child);
	};
	const deadline = Date.now() + (o.readyTimeoutMs ?? 60_000);
	for (;;) {
		if (child.exitCode !== null)
			throw new Error(`temporal dev server exited with ${child.exitCode}: ${output.head().slice(0, 2000)}`);
		try {
			const r = await fetch(`${httpUrl}/api/v1/namespaces/${encodeURIComponent(namespace)}`, {
				signal: AbortSignal.timeout(2000),
			});
			await r.arrayBuffer();
			if (r.ok) break;
		} catch {
			// not up yet
		}
		if (Date.now() > deadline) {
			await stop();
			throw new Error(
				`temporal dev server did not answer on ${httpUrl} within ${o.readyTimeoutMs ?? 60_000} ms: ${output.head().slice(0, 2000)}`,
			);
		}
		await sleep(200);
	}
	return {
		address: `127.0.0.1:${port}`,
		httpUrl,
		uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : undefined,
		...(guard ? { serverHttpUrl: `http://127.0.0.1:${httpPort}` } : {}),
		namespace,
		child,
		stop,
	};
}

export interface WorkerProcessOptions {
	temporalAddress: string;
	namespace?: string;
	taskQueue: string;
	simUrl: string;
	appId: string;
	secret: string;
	readyTimeoutMs?: number;
	/** Extra environment (e.g. NODE_OPTIONS). */
	env?: NodeJS.ProcessEnv;
	/** Node / V8 options before the entry, instead of the worker's defaults (worker/src/process/build.mts workerNodeFlags). */
	nodeArgs?: string[];
}

export interface WorkerProcess {
	child: ChildProcess;
	pid: number;
	/** What the worker printed (stdout + stderr; the first 50,000 characters), for diagnostics. */
	output(): string;
	stop(): Promise<void>;
}

/**
 * The worker as its own process, configured through its environment: the compiled worker with its node flags
 * (`node --max-old-space-size=512 --max-semi-space-size=2 --heap-growing-percent=20 worker/dist/main.mjs`, rebuilt first when stale;
 * worker/src/process/build.mts).
 */
export async function startWorkerProcess(o: WorkerProcessOptions): Promise<WorkerProcess> {
	const { workerCommand, workerNodeFlags } = await import('../worker/src/process/build.mts');
	const cmd = workerCommand({ ...process.env, ...o.env }, o.nodeArgs ?? workerNodeFlags({ ...process.env, ...o.env }));
	const child = spawn(cmd.command, cmd.args, {
		cwd: ROOT,
		env: {
			...process.env,
			...o.env,
			...cmd.env,
			TEMPORAL_ADDRESS: o.temporalAddress,
			TEMPORAL_NAMESPACE: o.namespace ?? 'default',
			TEMPORAL_TASK_QUEUE: o.taskQueue,
			SECSVC_BASE_URL: o.simUrl,
			SECSVC_APP_ID: o.appId,
			SECSVC_SECRET: o.secret,
			SECSVC_TOKEN_KIND: 'app',
			SECSVC_TIMEOUT_MS: '5000',
			SECSVC_RETRIES: '1',
		},
		stdio: ['ignore', 'pipe', 'pipe'],
		detached: true,
	});
	const out = captureOutput(50_000);
	child.stdout?.on('data', out.add);
	child.stderr?.on('data', out.add);
	announceStarted({
		what: 'worker process',
		pid: child.pid,
		addresses: { temporal: o.temporalAddress, taskQueue: o.taskQueue, service: o.simUrl },
		log: out.tail,
	});
	const deadline = Date.now() + (o.readyTimeoutMs ?? 120_000);
	while (!out.head().includes('secsvc worker: task queue')) {
		if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode}: ${out.head().slice(0, 2000)}`);
		if (Date.now() > deadline) {
			await stopChild(child);
			throw new Error(`worker not ready within ${o.readyTimeoutMs ?? 120_000} ms: ${out.head().slice(0, 2000)}`);
		}
		await sleep(100);
	}
	return { child, pid: child.pid as number, output: out.head, stop: () => stopChild(child) };
}

/** SIGTERM to the child's process group, SIGKILL after 5 s. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
	const exited = new Promise<void>((r) => child.once('exit', () => r()));
	const kill = (sig: NodeJS.Signals) => {
		try {
			process.kill(-(child.pid as number), sig);
		} catch {
			try {
				child.kill(sig);
			} catch {
				// gone
			}
		}
	};
	kill('SIGTERM');
	const t = setTimeout(() => kill('SIGKILL'), graceMs);
	await exited;
	clearTimeout(t);
}

/** Resident set size of a process in bytes (Linux /proc), 0 when unknown. */
export async function rssOf(pid: number): Promise<number> {
	try {
		const { readFile } = await import('node:fs/promises');
		const s = await readFile(`/proc/${pid}/status`, 'utf8');
		const m = /VmRSS:\s+(\d+)\s+kB/.exec(s);
		return m ? Number(m[1]) * 1024 : 0;
	} catch {
		return 0;
	}
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
