// The real n8n 2.40.7 in server mode (`n8n start`) for the editor test: the packed package in ~/.n8n/nodes, an
// owner account, and the address the browser opens. Listens on 127.0.0.1 with free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { announceStarted } from '../../demo/stack.mts';
import { freePort, makeN8nHome, n8nRuntime, stopCommands, type N8nHome } from './harness.mts';

export const OWNER = {
	email: 'soc@example.com',
	firstName: 'Sam',
	lastName: 'Analyst',
	password: 'Editor-Test-Pass-1',
};

export interface N8nServer {
	url: string;
	pid: number | undefined;
	home: N8nHome;
	log(): string;
	stop(): Promise<void>;
}

/** `prepare` runs in the fresh user folder before the server starts (import credentials / workflows, publish). */
export async function startN8nServer(tgz: string, prepare?: (home: N8nHome) => Promise<void>): Promise<N8nServer> {
	const rt = n8nRuntime();
	const home = makeN8nHome(tgz, 'nodes'); // as Settings › Community Nodes installs it: the credential Test works
	const port = await freePort();
	const brokerPort = await freePort();
	Object.assign(home.env, {
		N8N_PORT: String(port),
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_RUNNERS_BROKER_PORT: String(brokerPort),
		N8N_EDITOR_BASE_URL: `http://127.0.0.1:${port}/`,
		N8N_LOG_LEVEL: 'warn',
		NODE_ENV: 'production',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_PUBLIC_API_DISABLED: 'true',
		N8N_AI_ENABLED: 'false',
		N8N_COMMUNITY_PACKAGES_PREVENT_LOADING: 'false',
		N8N_METRICS: 'false',
		// n8n 2.40.7 pings its database every 2 s and, on SQLite, a ping not answered within DB_PING_TIMEOUT_MS
		// (default 5 s, a timer raced against the query) marks it disconnected: readiness and EVERY request answer 503
		// "Database is not ready!" until a later ping succeeds (no recovery on SQLite: the monitor's only effect). A
		// local file's `SELECT 1` is late only when the process is starved (its event loop blocked > 5 s by its own
		// work at a fraction of a core), so the 5 s bound measured the machine's load, not the database — and a
		// credential Save that met it showed only a toast (docs/test-runs.md, session 14). Stuck is stuck at 120 s.
		DB_PING_TIMEOUT_MS: '120000',
	});
	if (prepare) await prepare(home);
	await stopCommands(home); // its database is the server's now
	let log = '';
	const child: ChildProcess = spawn(rt.node, [rt.n8n, 'start'], {
		env: home.env,
		cwd: home.dir,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	child.stdout?.on('data', (d) => (log += d));
	child.stderr?.on('data', (d) => (log += d));
	const url = `http://127.0.0.1:${port}`;
	announceStarted({
		what: 'n8n server (n8n start)',
		pid: child.pid,
		addresses: { url, broker: brokerPort, home: home.dir },
		log: () => log,
	});
	await waitReady(child, url, () => log);
	const setup = await fetch(`${url}/rest/owner/setup`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify(OWNER),
	});
	if (!setup.ok) throw new Error(`owner setup failed: HTTP ${setup.status} ${await setup.text()}`);
	return {
		url,
		pid: child.pid,
		home,
		log: () => log,
		stop: async () => {
			if (child.exitCode === null) {
				child.kill('SIGTERM');
				await new Promise<void>((r) => {
					const t = setTimeout(() => {
						child.kill('SIGKILL');
						r();
					}, 10_000);
					child.once('exit', () => {
						clearTimeout(t);
						r();
					});
				});
			}
			home.cleanup();
		},
	};
}

/** CPU seconds (user + system) the process has used so far; undefined once it is gone. */
export function cpuSeconds(pid: number | undefined): number | undefined {
	try {
		// fields after the command's closing parenthesis: state is the 1st, utime the 12th, stime the 13th
		const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
		return (Number(f[11]) + Number(f[12])) / 100; // clock ticks (USER_HZ, 100 on Linux)
	} catch {
		return undefined;
	}
}

/**
 * n8n's start is bounded by its progress, not by wall time: a wall bound measures the machine's load (at load 13-30
 * n8n got 13 CPU-s in 120 s, less than its start needs), while n8n stuck or dead is what a failure should say. So
 * this waits for /healthz/readiness as long as the process is alive and its CPU time keeps advancing, and fails
 * when it exits, when it used no CPU for STUCK_MS (waiting on nothing we gave it), or when it spent CPU_BUDGET_S
 * without becoming ready (several times what a start needs, measured in docs/test-runs.md).
 */
const STUCK_MS = 60_000;
const CPU_BUDGET_S = 90;
async function waitReady(child: ChildProcess, url: string, log: () => string): Promise<void> {
	const t0 = Date.now();
	let cpu = 0;
	let progressAt = t0;
	const fail = (why: string) => {
		child.kill('SIGKILL');
		return new Error(
			`n8n did not become ready: ${why} (${Math.round((Date.now() - t0) / 1000)} s, ${cpu.toFixed(1)} CPU-s):\n${log().slice(-4000)}`,
		);
	};
	for (;;) {
		if (child.exitCode !== null) throw new Error(`n8n start exited with ${child.exitCode}:\n${log().slice(-4000)}`);
		try {
			if ((await fetch(`${url}/healthz/readiness`)).ok) break;
		} catch {
			// not listening yet
		}
		const now = cpuSeconds(child.pid) ?? cpu;
		if (now > cpu + 0.05) progressAt = Date.now();
		cpu = now;
		if (cpu > CPU_BUDGET_S) throw fail(`it used more than ${CPU_BUDGET_S} CPU-s`);
		if (Date.now() - progressAt > STUCK_MS) throw fail(`no CPU used for ${STUCK_MS / 1000} s (stuck)`);
		await new Promise((r) => setTimeout(r, 500));
	}
	console.log(
		`n8n ready after ${Math.round((Date.now() - t0) / 1000)} s, ${(cpuSeconds(child.pid) ?? cpu).toFixed(1)} CPU-s`,
	);
}
