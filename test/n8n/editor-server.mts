// The real n8n 2.40.7 in server mode (`n8n start`) for the editor test: the packed package in ~/.n8n/nodes, an
// owner account, and the address the browser opens. Listens on 127.0.0.1 with free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { announceStarted } from '../../demo/stack.mts';
import { freePort, makeN8nHome, n8nRuntime, type N8nHome } from './harness.mts';

export const OWNER = {
	email: 'soc@example.com',
	firstName: 'Sam',
	lastName: 'Analyst',
	password: 'Editor-Test-Pass-1',
};

export interface N8nServer {
	url: string;
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
	});
	if (prepare) await prepare(home);
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
	const deadline = Date.now() + 120_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`n8n start exited with ${child.exitCode}:\n${log.slice(-4000)}`);
		try {
			const r = await fetch(`${url}/healthz/readiness`);
			if (r.ok) break;
		} catch {
			// not listening yet
		}
		if (Date.now() > deadline) {
			child.kill('SIGKILL');
			throw new Error(`n8n did not become ready within 120 s:\n${log.slice(-4000)}`);
		}
		await new Promise((r) => setTimeout(r, 500));
	}
	const setup = await fetch(`${url}/rest/owner/setup`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify(OWNER),
	});
	if (!setup.ok) throw new Error(`owner setup failed: HTTP ${setup.status} ${await setup.text()}`);
	return {
		url,
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
