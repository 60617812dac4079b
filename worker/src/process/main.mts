/**
 * Worker process entry. Runs compiled: `MALLOC_ARENA_MAX=2 node --max-old-space-size=512 --max-semi-space-size=2 --heap-growing-percent=20 worker/dist/main.mjs` (build.mts; `secsvc worker`
 * and demo/stack.mts build and start it), or from source: `node --import tsx worker/src/process/main.mts`.
 * Config from env / SECSVC_CONFIG (config.mts, processConfig.mts).
 *
 * As a production process (docs/worker/production.md, deploy/):
 *  - Start-up checks, each failing at once with ONE line naming the setting and a non-zero exit: configuration,
 *    the health listener, the Temporal connection (TEMPORAL_ADDRESS), the API credentials (a token is obtained
 *    before the first poll: never a worker that polls but cannot call the API).
 *  - SIGTERM / SIGINT: stop polling, let running activities finish for up to SECSVC_SHUTDOWN_GRACE (default 30 s),
 *    exit 0. A second signal, or the grace running out, ends the process at once (exit 1; 128+signal number for a
 *    second signal).
 *  - Launched by `secsvc worker` as a child (node < 22.15, no process.execve): SECSVC_PARENT_FD names a pipe from the
 *    launcher; when it closes (the launcher died, even of SIGKILL) this process exits at once: no orphans.
 *  - /healthz and /readyz on SECSVC_HEALTH_ADDRESS (health.mts).
 */
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { ApiError } from '../../../api/errors.ts';
import { assertFreshBuild } from './buildInfo.mts';
import { connectionOptions, loadConfig, type WorkerConfig } from './config.mts';
import { connectWithBearer } from './temporalToken.mts';
import { approvalsNotice } from '../identity/config.mts';
import { explainConnectFailure } from './tlsProbe.mts';
import { startHealthServer, type HealthServer } from './health.mts';
import { loadProcessConfig } from './processConfig.mts';
import { clientFromConfig, safeMessage, startWorker, type RunningWorker } from './worker.mts';
import { installMetrics } from './metrics.mts';
import { markMetricsOn } from './runbookMetrics.mts';
import { refreshRejected, tenantMode } from './tenantWorker.mts';
import { DEFAULT_REFRESH_REJECTED_CODES } from '../../../workflows/tenant/activitiesRenew.mts';

/** A start-up failure: printed as one line, exit code 1. */
export class StartupError extends Error {}

const log = (m: string) => console.log(`secsvc worker: ${m}`);

/** Exits when the launcher's pipe (SECSVC_PARENT_FD) closes: the launcher is gone, whatever killed it. */
export function watchParent(env: NodeJS.ProcessEnv = process.env): void {
	const fd = Number(env.SECSVC_PARENT_FD);
	delete env.SECSVC_PARENT_FD; // not for grandchildren
	if (!Number.isInteger(fd) || fd < 3) return;
	let sock: Socket;
	try {
		sock = new Socket({ fd, readable: true, writable: false });
	} catch {
		return;
	}
	const gone = () => {
		console.error('secsvc worker: launcher exited; stopping now');
		process.exit(1);
	};
	sock.on('end', gone).on('close', gone).on('error', gone);
	sock.resume();
	sock.unref(); // the pipe never keeps a drained worker alive
}

async function connectTemporal(cfg: ReturnType<typeof loadConfig>) {
	const opts = connectionOptions(cfg.temporal); // a bad TLS file: ConfigError naming its setting
	try {
		return await connectWithBearer((o) => NativeConnection.connect(o), opts, cfg.temporal.token);
	} catch (e) {
		if (safeMessage(e).startsWith('Temporal token:')) throw new StartupError(safeMessage(e));
		throw new StartupError(
			await explainConnectFailure(cfg.temporal.address, opts.tls, cfg.temporal.from ?? {}, safeMessage(e)),
		);
	}
}

/** A refresh answer meaning the refresh token is gone (SECSVC_REFRESH_REJECTED_CODES, default 40103). */
const refreshGone = (code: number) => (refreshRejected() ?? DEFAULT_REFRESH_REJECTED_CODES).includes(code);

async function checkCredentials(api: ReturnType<typeof clientFromConfig>, cfg: ReturnType<typeof loadConfig>) {
	try {
		await api.client.tokens?.getToken();
	} catch (e) {
		if (e instanceof ApiError && cfg.api.tokenKind === 'user' && refreshGone(e.code))
			throw new StartupError(
				`SECSVC_REFRESH_TOKEN (api.refreshToken): the service no longer accepts this refresh token — ${safeMessage(e)}. ` +
					`Every renewal replaces a user token's refresh token, so another worker (or n8n) given the same one has most likely renewed it: ` +
					`workers acting for one customer need tenant mode (SECSVC_TENANTS=1 and the same SECSVC_PAYLOAD_KEYS on every worker, ` +
					`one token per customer for the whole cluster: docs/worker/tenants.md), or this worker a refresh token of its own (a new install)`,
			);
		if (e instanceof ApiError)
			throw new StartupError(
				`SECSVC_APP_ID / SECSVC_SECRET (api.appId / api.secret): the service refused a token — ${safeMessage(e)}`,
			);
		throw new StartupError(`SECSVC_BASE_URL (api.baseUrl) ${cfg.api.baseUrl}: no token obtained — ${safeMessage(e)}`);
	}
}

/** What /readyz asks (health.mts): Temporal answers, the worker polls, the service gives a token. */
function readinessChecks(
	cfg: WorkerConfig,
	api: ReturnType<typeof clientFromConfig>,
	now: () => { connection?: NativeConnection; w?: RunningWorker; draining: boolean },
) {
	return {
		temporal: async () => {
			const { connection: c } = now();
			if (!c) throw new Error('not connected yet');
			// Core retries while the server is down: bound it here with a message that says what failed
			let timer: NodeJS.Timeout | undefined;
			const late = new Promise<never>((_, reject) => {
				timer = setTimeout(
					() => reject(new Error(`${cfg.temporal.address}: no answer to GetSystemInfo within 1500 ms`)),
					1500,
				);
			});
			try {
				await Promise.race([c.withDeadline(Date.now() + 1500, () => c.workflowService.getSystemInfo({})), late]);
			} finally {
				clearTimeout(timer);
			}
		},
		polling: () => {
			const { draining, w } = now();
			if (draining) throw new Error('draining: shutdown requested');
			const state = w?.worker.getState();
			if (state !== 'RUNNING') throw new Error(`worker state ${state ?? 'starting'}`);
		},
		api: async () => {
			await api.client.tokens?.getToken();
		},
	};
}

/** The /healthz /readyz listener; a busy address is a start-up error naming the setting. */
async function serveHealth(
	address: NonNullable<ReturnType<typeof loadProcessConfig>['health']>,
	checks: ReturnType<typeof readinessChecks>,
): Promise<HealthServer> {
	let health: HealthServer;
	try {
		health = await startHealthServer(address, checks);
	} catch (e) {
		throw new StartupError(
			`SECSVC_HEALTH_ADDRESS (health.address) ${address.host}:${address.port}: cannot listen — ${safeMessage(e)}`,
		);
	}
	log(`health on http://${health.address.host}:${health.address.port} (/healthz, /readyz)`);
	return health;
}

export async function main(): Promise<number> {
	watchParent();
	assertFreshBuild(fileURLToPath(import.meta.url)); // compiled worker older than its sources: refuse
	const cfg = loadConfig();
	tenantMode(cfg); // tenant mode without the payload key: one line naming SECSVC_PAYLOAD_KEYS, before anything starts
	const proc = loadProcessConfig();
	// Prometheus /metrics (worker/src/process/metrics.mts): the SDK Runtime must be installed before the first connection.
	if (cfg.metrics?.address) {
		installMetrics(cfg.metrics.address);
		markMetricsOn();
		log(`metrics on http://${cfg.metrics.address}/metrics`);
	}

	let w: RunningWorker | undefined;
	let connection: NativeConnection | undefined;
	let draining = false;
	const api = clientFromConfig(cfg);
	const health = proc.health
		? await serveHealth(
				proc.health,
				readinessChecks(cfg, api, () => ({ connection, w, draining })),
			)
		: undefined;

	let drainStart = 0;
	const onSignal = (sig: NodeJS.Signals) => {
		if (draining || !w) {
			if (w) console.error(`secsvc worker: ${sig} again; stopping now`);
			process.exit(w ? 128 + (sig === 'SIGINT' ? 2 : 15) : 0); // nothing runs before the worker started
		}
		draining = true;
		drainStart = Date.now();
		log(`${sig}: draining (no new tasks; running activities have ${proc.shutdownGraceMs} ms)`);
		if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
		setTimeout(() => {
			console.error(`secsvc worker: shutdown grace of ${proc.shutdownGraceMs} ms ran out; stopping now`);
			process.exit(1);
		}, proc.shutdownGraceMs + 250).unref();
	};
	for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, onSignal);

	try {
		connection = await connectTemporal(cfg);
		await checkCredentials(api, cfg);
		w = await startWorker(cfg, {
			connection,
			api,
			// Core cancels activities still running when the grace runs out; the timer below ends the process.
			shutdown: { shutdownGraceTime: proc.shutdownGraceMs },
		});
	} catch (e) {
		await api.close().catch(() => {});
		await connection?.close().catch(() => {});
		await health?.close();
		throw e;
	}
	log(
		`task queue ${cfg.temporal.taskQueue} on ${cfg.temporal.address} (${cfg.temporal.namespace}); drain grace ${proc.shutdownGraceMs} ms`,
	);
	// Once started (a start-up failure stays one line naming its cause): how approvals are proven, loudly when not.
	console.error(`secsvc worker: ${approvalsNotice(cfg.identity, cfg.unverifiedApprovals === true)}`);

	try {
		await w.done;
	} finally {
		await connection.close().catch(() => {});
		await health?.close();
	}
	log(draining ? 'drained; exiting' : 'stopped');
	return drainStart && Date.now() - drainStart >= proc.shutdownGraceMs ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	main().then(
		(code) => process.exit(code),
		(e) => {
			console.error(`secsvc worker: ${safeMessage(e).replace(/\s*\n\s*/g, ' ')}`); // one line
			process.exit(1);
		},
	);
}
