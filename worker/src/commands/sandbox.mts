import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { searchAttributeArgs } from '../../../workflows/attackResponse/searchAttributes.mts';
import { unverifiedApprovalsOptIn } from '../identity/config.mts';
import { ConfigError, loadConfig, loadTemporalConfig } from '../process/config.mts';
import { DIST, PACKAGE_DIR, PACKAGED } from '../process/launch.mts';
import { GUARDED_DEV_SERVER_ARGS, startHttpGuard } from '../process/httpGuard.mts';
import { assertPortFree, runParts, type Part, type SandboxIo } from '../process/sandbox.mts';
import { freePort } from '../process/freePort.mts';
import { temporalCli } from '../process/temporalCli.mts';
import { UsageError } from './args.mts';

/**
 * `secsvc sandbox`: from nothing to a working sandbox in one command — a Temporal dev server on fixed ports with its
 * database kept under the user's data folder, the worker, and with --simulator the simulator with an attack under
 * way to rehearse on; Ctrl-C stops them together (process/sandbox.mts). Given a Temporal address of its own
 * (TEMPORAL_ADDRESS, SECSVC_CONFIG or a Temporal profile: the worker's own settings) it starts no server and runs
 * the worker against it.
 */

export const SANDBOX_USAGE = `  sandbox [--simulator] [--grpc-port 7233] [--http-port 7243] [--ui-port 8233] [--db FILE]
          [--simulator-port 8443] [--attack-seconds 300] [--identity-port 7253]
                                           a Temporal dev server (fixed ports, database kept in
                                           \${XDG_DATA_HOME:-~/.local/share}/secsvc/sandbox), a local identity
                                           provider (proven approvals), the worker and with --simulator the simulator
                                           and an attack on site 20001; Ctrl-C stops all.
                                           With TEMPORAL_ADDRESS (or a profile) set: only the worker`;

const SIM = { appId: 'demo-app', secret: 'demo-secret', site: '20001' };

function port(o: Record<string, string | boolean>, flag: string, dflt: number): number {
	const v = o[flag.slice(2)];
	if (v === undefined) return dflt;
	const n = Number(v);
	if (!(Number.isInteger(n) && n >= 1 && n <= 65535)) throw new UsageError(`${flag}: must be a port number 1–65535`);
	return n;
}

export function sandboxDb(env: NodeJS.ProcessEnv = process.env): string {
	return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'secsvc', 'sandbox', 'temporal.db');
}

const node = (packaged: string, source: string, args: string[]) =>
	PACKAGED
		? { command: process.execPath, args: [join(DIST, packaged), ...args] }
		: { command: process.execPath, args: ['--import', 'tsx', join(PACKAGE_DIR, '..', source), ...args] };

async function answers(url: string): Promise<boolean> {
	try {
		const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
		await r.arrayBuffer();
		return r.ok;
	} catch {
		return false;
	}
}

/**
 * The dev server; its HTTP API answers only through the guard (process/httpGuard.mts) on the printed port, which
 * refuses a web page's cross-origin or text/plain write (issue 41): `serverHttp` is the server's own, unprinted port.
 */
function temporalPart(
	bin: string,
	p: { grpc: number; http: number; ui: number; serverHttp: number },
	db: string,
): Part {
	return {
		name: 'temporal',
		command: bin,
		// eager activity dispatch as in demo/stack.mts; the runbooks' search attributes
		args: [
			...['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(p.grpc), '--http-port', String(p.serverHttp)],
			...['--ui-ip', '127.0.0.1', '--ui-port', String(p.ui), '--db-filename', db, '--log-level', 'error'],
			...['--dynamic-config-value', 'system.enableActivityEagerExecution=true', ...searchAttributeArgs()],
			...GUARDED_DEV_SERVER_ARGS,
		],
		ready: () => answers(`http://127.0.0.1:${p.http}/api/v1/namespaces/default`),
		summary: () => [
			`  Temporal gRPC   127.0.0.1:${p.grpc}           TEMPORAL_ADDRESS of secsvc and workers`,
			`  Temporal HTTP   http://127.0.0.1:${p.http}    n8n's Temporal API credential (HTTP API Address)`,
			`  Temporal UI     http://127.0.0.1:${p.ui}`,
			`  database        ${db}`,
		],
	};
}

function simulatorPart(simPort: number, attackSeconds: number): Part {
	const url = `http://127.0.0.1:${simPort}`;
	const attack = {
		site_id: SIM.site,
		attack_type: 'UDP Total',
		duration: attackSeconds,
		curve: { shape: 'ramp', peakBps: 20e9, peakPps: 4e6, rampSeconds: 3 },
		sources: [{ ip: '203.0.113.10', weight: 3 }, { ip: '203.0.113.11', weight: 2 }, { cidr: '198.51.100.4/30' }],
	};
	let started = false;
	let ids: Record<string, string> = {}; // the simulator's first ids, as it prints them
	return {
		name: 'simulator',
		...node('simulator.mjs', 'simulator/main.mts', ['--port', String(simPort), '--app-id', SIM.appId]),
		env: { SECSVC_SIM_SECRET: SIM.secret },
		ready: async (out) => {
			if (!out.includes(url)) return false;
			ids = JSON.parse(/first ids: (\{[^}]*\})/.exec(out)?.[1] ?? '{}') as Record<string, string>;
			if (!started) {
				const r = await fetch(`${url}/__sim/attacks`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify(attack),
				});
				if (!r.ok) throw new Error(`simulator: the sandbox's attack was refused: ${await r.text()}`);
				started = true;
			}
			return true;
		},
		summary: () => [
			`  simulator       ${url}    app id ${SIM.appId}, secret ${SIM.secret} (n8n's Security Service API credential)`,
			`  site            ${SIM.site} (customer ${ids.customer_id}, domain-port ${ids.domain_port_id}): its own addresses, for Protected Ranges: ${url}/__sim/sites/${SIM.site}/network`,
			`  attack          site ${SIM.site}: ${attack.attack_type}, ${attackSeconds} s from now; another: curl -X POST ${url}/__sim/attacks \\`,
			`                    -H 'content-type: application/json' -d '${JSON.stringify({ ...attack, duration: 120 })}'`,
		],
	};
}

function workerPart(env: NodeJS.ProcessEnv, where: string, taskQueue: string, plan: string, more: string[]): Part {
	return {
		name: 'worker',
		command: process.execPath,
		args: [join(PACKAGE_DIR, 'bin', 'secsvc.mjs'), 'worker'],
		env,
		ready: (out) => out.includes('secsvc worker: task queue'),
		stopGraceMs: 60_000,
		summary: () => [
			...more,
			`  worker          task queue ${taskQueue} on ${where}`,
			`  next            secsvc start --plan ${plan} --wait     (then: secsvc timeline ${SIM.site})`,
		],
	};
}

const OPTIONS = [
	...['simulator', 'grpc-port', 'http-port', 'ui-port', 'db', 'simulator-port', 'attack-seconds', 'identity-port'],
	'help',
];

/**
 * The local identity provider (identity/demoIdentity.mts: the real oidc-provider, demo people), run inside this
 * process, so the sandbox's default approval path is the proven one: the worker verifies every decision's ID token,
 * `secsvc approve SITE --login` logs the person in, n8n's Decide takes a token from `secsvc id-token SITE`. Its
 * signing key, the payload key and the approvers' settings (approver.env, 0600) are kept next to the database.
 */
async function localIdentity(dir: string, idPort: number, grpc: number) {
	const { startDemoIdentity, DEMO_PEOPLE, DEMO_APPROVER_GROUP } = await import('../identity/demoIdentity.mts');
	const identity = await startDemoIdentity({ port: idPort, dir });
	const file = join(dir, 'approver.env');
	const vars = { ...identity.clientEnv, TEMPORAL_ADDRESS: `127.0.0.1:${grpc}` };
	writeFileSync(
		file,
		Object.entries(vars)
			.map(([k, v]) => `export ${k}='${v}'\n`)
			.join(''),
		{ mode: 0o600 },
	);
	const people = Object.entries(DEMO_PEOPLE).map(([id, p]) => `${id} (${p.groups.join(', ')})`);
	const lines = [
		`  identity        ${identity.provider.issuer}    local OpenID Connect provider: approvals are proven; people ${people.join(', ')}; approver group ${DEMO_APPROVER_GROUP}`,
		`  approvers       . ${file}    then: secsvc approve ${SIM.site} --login   (a login page in your browser)`,
		`  n8n             Temporal API credential › Payload Key: SECSVC_PAYLOAD_KEYS in ${file}; Runbook › Start / Decide › ID Token: secsvc id-token [SITE]`,
	];
	return { env: identity.workerEnv, lines, stop: identity.stop };
}

/** The options checked, and the worker's environment for them: nothing is started yet. */
function sandboxSettings(o: Record<string, string | boolean>) {
	const unknown = Object.keys(o).find((k) => !OPTIONS.includes(k));
	if (unknown) throw new UsageError(`sandbox: unknown option --${unknown}\nusage: secsvc${SANDBOX_USAGE.slice(1)}`);
	const ports = {
		grpc: port(o, '--grpc-port', 7233),
		http: port(o, '--http-port', 7243),
		ui: port(o, '--ui-port', 8233),
		sim: port(o, '--simulator-port', 8443),
		identity: port(o, '--identity-port', 7253),
	};
	const attackSeconds = o['attack-seconds'] === undefined ? 300 : Number(o['attack-seconds']);
	if (!(Number.isInteger(attackSeconds) && attackSeconds >= 1 && attackSeconds <= 86400))
		throw new UsageError('--attack-seconds: must be an integer of 1–86400 seconds');
	const simulator = o.simulator === true;
	const t = loadTemporalConfig();
	const external = t.from?.address !== undefined; // the user's own Temporal: no dev server
	const env: NodeJS.ProcessEnv = { SECSVC_SHUTDOWN_GRACE: process.env.SECSVC_SHUTDOWN_GRACE || '5s' };
	if (!external) Object.assign(env, { TEMPORAL_ADDRESS: `127.0.0.1:${ports.grpc}`, TEMPORAL_NAMESPACE: 'default' });
	if (simulator)
		Object.assign(env, {
			SECSVC_BASE_URL: `http://127.0.0.1:${ports.sim}`,
			SECSVC_APP_ID: SIM.appId,
			SECSVC_SECRET: SIM.secret,
			SECSVC_TOKEN_KIND: 'app',
		});
	else
		try {
			loadConfig({ ...process.env, ...env }); // the service's settings: one line naming what is missing, nothing started
		} catch (e) {
			if (!(e instanceof ConfigError)) throw e;
			throw new UsageError(
				`${e.message} (the service the worker acts on; or --simulator to rehearse on the simulator)`,
			);
		}
	// A local identity provider unless the user brought one, opted in to typed approvals, or runs their own Temporal.
	const identity = !external && !process.env.SECSVC_OIDC_ISSUER && !unverifiedApprovalsOptIn();
	const db = typeof o.db === 'string' ? resolve(o.db) : sandboxDb();
	return { ports, attackSeconds, simulator, t, external, env, identity, db };
}

export async function runSandbox(o: Record<string, string | boolean>, io: SandboxIo): Promise<number> {
	if (o.help) {
		io.out(`usage: secsvc${SANDBOX_USAGE.slice(1)}\n`);
		return 0;
	}
	const { ports, attackSeconds, simulator, t, external, env, identity, db } = sandboxSettings(o);
	const used = new Set<number>();
	const flags = [
		...(external
			? []
			: ([
					[ports.grpc, '--grpc-port'],
					[ports.http, '--http-port'],
					[ports.ui, '--ui-port'],
				] as const)),
		...(simulator ? ([[ports.sim, '--simulator-port']] as const) : []),
		...(identity ? ([[ports.identity, '--identity-port']] as const) : []),
	];
	for (const [p, flag] of flags) {
		if (used.has(p)) throw new UsageError(`${flag} ${p}: already used by another of the sandbox's ports`);
		used.add(p);
		await assertPortFree(p, flag).catch((e: Error) => {
			throw new UsageError(e.message);
		});
	}
	const parts: Part[] = [];
	const inProcess: { close(): Promise<void> }[] = []; // the HTTP API's guard, the identity provider
	try {
		if (!external) {
			mkdirSync(dirname(db), { recursive: true });
			const bin = await temporalCli((s) => io.err(`secsvc sandbox: ${s}\n`));
			const serverHttp = await freePort();
			inProcess.push(await startHttpGuard(`http://127.0.0.1:${serverHttp}`, ports.http));
			parts.push(temporalPart(bin, { ...ports, serverHttp }, db));
		}
		if (simulator) parts.push(simulatorPart(ports.sim, attackSeconds));
		const idp = identity ? await localIdentity(dirname(db), ports.identity, ports.grpc) : undefined;
		if (idp) inProcess.push({ close: idp.stop });
		const plan = PACKAGED
			? join(DIST, 'examples', 'attack-response.json')
			: join(PACKAGE_DIR, '..', 'examples/plans/attack-response-demo.json');
		const where = external ? `${t.address} (${t.from?.address})` : `127.0.0.1:${ports.grpc}`;
		parts.push(workerPart({ ...env, ...idp?.env }, where, t.taskQueue, plan, idp?.lines ?? []));
		const names = [...parts.map((p) => p.name), ...(idp ? ['identity provider'] : [])];
		io.out(`secsvc sandbox: starting ${names.join(', ')}\n`);
		return await runParts(parts, {
			out: (s) => io.out(`secsvc sandbox: running; Ctrl-C stops everything\n${s}`),
			err: io.err,
		});
	} finally {
		for (const p of inProcess.reverse()) await p.close();
		if (parts.length) io.out(`secsvc sandbox: stopped\n`);
	}
}
