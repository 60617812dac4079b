/**
 * The production-shaped cluster of scripts/temporal-cluster.sh (PostgreSQL, four services, mutual TLS, namespace
 * `secsvc`): started by the script when not running, reused when it is (`start` only starts what is down). The
 * script prints the client env; workers, the CLI and our clients get exactly that env.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { Connection } from '@temporalio/client';
import { connectionOptions, loadTemporalConfig } from '../../worker/src/process/config.mts';
import { blocksIdFor } from '../../api/blockRules.ts';
import { coordinatorIdFor } from '../../workflows/coordinator/coordination.mts';
import { workflowIdFor } from '../../api/runbook/contract.ts';
import { ROOT, spawnWorker } from '../temporal/helpers.mts';
import { announceStarted } from '../../demo/stack.mts';
import { connectWithBearer, fetchBearer } from '../../worker/src/process/temporalToken.mts';
import { ensureSearchAttributes } from '../../worker/src/process/runbookMetrics.mts';
import type { NativeConnection } from '@temporalio/worker';
import { secsvcArgs } from '../helpers/secsvcCli.mts';

export const SCRIPT = join(ROOT, 'scripts/temporal-cluster.sh');
export const BASE_PORT = process.env.SECSVC_CLUSTER_BASE_PORT ?? '17300';
const run = promisify(execFile);

export type ClusterEnv = Record<string, string>;

/** `export K=V` lines → an object (the values are paths and addresses: no quoting needed beyond %q's). */
export function parseEnv(text: string): ClusterEnv {
	const env: ClusterEnv = {};
	for (const m of text.matchAll(/^export ([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2].replace(/^'(.*)'$/, '$1');
	return env;
}

/** Starts (or completes) the cluster; returns the client env. Slow the first time (builds, initdb, schemas). */
export async function ensureCluster(): Promise<ClusterEnv> {
	const r = await run('bash', [SCRIPT, 'start', '--base-port', BASE_PORT], {
		maxBuffer: 1 << 20,
		timeout: 20 * 60_000,
	}).catch((e) => {
		throw new Error(`temporal-cluster.sh start failed: ${e.stderr ?? e.message}`);
	});
	const env = parseEnv(r.stdout);
	if (!env.TEMPORAL_ADDRESS) throw new Error(`temporal-cluster.sh start printed no env: ${r.stdout}`);
	// Workers hold `write`, not `admin`: an operator registers the runbooks' search attributes (docs/worker/authorization.md).
	const admin = await clusterClient(env, { as: 'temporal-admin' });
	try {
		await ensureSearchAttributes(admin.connection as unknown as NativeConnection, env.TEMPORAL_NAMESPACE);
	} finally {
		await admin.close();
	}
	announceStarted({
		what: 'temporal cluster (scripts/temporal-cluster.sh)',
		addresses: { grpc: env.TEMPORAL_ADDRESS, http: env.SECSVC_TEMPORAL_HTTP_URL, dir: env.SECSVC_CLUSTER_DIR },
		log: () =>
			['frontend', 'history', 'matching', 'worker']
				.map((s) => `${s}.log:\n${tailOf(() => serviceLog(env, s))}`)
				.join('\n'),
	});
	return env;
}

/** PIDs of the cluster's processes (`status`). */
export function clusterPids(): Record<string, number | undefined> {
	const out = execFileSync('bash', [SCRIPT, 'status', '--base-port', BASE_PORT], { encoding: 'utf8' });
	return Object.fromEntries(
		out
			.trim()
			.split('\n')
			.map((l) => {
				const [n, p] = l.split(' ');
				return [n, p === '-' ? undefined : Number(p)];
			}),
	);
}

/**
 * A client of the cluster with the bearer token of `as` (one of the cluster provider's clients, default the env's
 * temporal-worker; `null` = no token at all), on `namespace` (default the env's).
 */
export async function clusterClient(
	env: ClusterEnv,
	o: { as?: string | null; namespace?: string } = {},
): Promise<Client & { close(): Promise<void> }> {
	const t = loadTemporalConfig(env, undefined);
	const source =
		o.as === null
			? undefined
			: o.as === undefined
				? t.token
				: { ...t.token!, clientId: o.as, clientSecret: secretOf(env, o.as) };
	const connection = await connectWithBearer((x) => Connection.connect(x), connectionOptions(t), source);
	const c = new Client({ connection, namespace: o.namespace ?? t.namespace });
	return Object.assign(c, { close: () => connection.close() });
}

/** The secret of one of the cluster provider's clients (temporal-admin, -worker, -cli, -n8n, -reader). */
export const secretOf = (env: ClusterEnv, clientId: string) =>
	readFileSync(join(env.SECSVC_CLUSTER_DIR, 'idp', `${clientId}.secret`), 'utf8').trim();

/** An access token of one of the cluster provider's clients. */
export const tokenOf = async (env: ClusterEnv, clientId: string) =>
	(
		await fetchBearer({
			issuer: env.SECSVC_TEMPORAL_TOKEN_ISSUER,
			clientId,
			clientSecret: secretOf(env, clientId),
			audience: env.SECSVC_TEMPORAL_TOKEN_AUDIENCE,
		})
	).token;

let deployN = 0;
/** A worker process on the cluster: its own deployment name, so its build becomes current whatever ran before. */
export function clusterWorker(env: ClusterEnv, simUrl: string, queue: string, extra: NodeJS.ProcessEnv = {}) {
	const deployment = `cluster-${process.pid}-${++deployN}`;
	const child = spawnWorker({ address: env.TEMPORAL_ADDRESS }, simUrl, queue, {
		...env,
		SECSVC_DEPLOYMENT_NAME: deployment,
		...extra,
	});
	let log = '';
	child.stdout?.on('data', (d) => (log += d));
	child.stderr?.on('data', (d) => (log += d));
	return Object.assign(child, { deployment, log: () => log });
}

/** `secsvc …` as a child process with the given env (nothing inherited that could point elsewhere). */
export function secsvc(env: NodeJS.ProcessEnv, args: string[]) {
	return run(process.execPath, secsvcArgs(...args), {
		env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
		timeout: 120_000,
	}).then(
		(r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
		(e) => ({ code: Number(e.code ?? 1), stdout: String(e.stdout ?? ''), stderr: String(e.stderr ?? '') }),
	);
}

/** A cluster service's log (for failure messages). */
const tailOf = (read: () => string) => {
	try {
		return read().split('\n').slice(-6).join('\n');
	} catch (e) {
		return `(unreadable: ${(e as Error).message})`;
	}
};

export const serviceLog = (env: ClusterEnv, s: string) =>
	readFileSync(join(env.SECSVC_CLUSTER_DIR, 'log', `${s}.log`), 'utf8').slice(-2000);

/**
 * The cluster outlives test runs, and the simulator's site ids repeat: a site's runbook, coordinator or blocks
 * workflow left running by an earlier run (its worker and task queue gone) would hold up this run's. Terminates them.
 */
export async function freeSites(client: Client, sites: { site_id: string; domain_port_id?: string }[]): Promise<void> {
	const ids = sites.flatMap((x) => [
		workflowIdFor(x.site_id),
		coordinatorIdFor(x.site_id),
		...(x.domain_port_id ? [blocksIdFor(x.site_id, x.domain_port_id)] : []),
	]);
	await Promise.all(
		ids.map(async (id) => {
			const h = client.workflow.getHandle(id);
			const running = await h.describe().then(
				(d) => d.status.name === 'RUNNING',
				() => false,
			);
			if (running) await h.terminate('left running by an earlier test run on the shared cluster');
		}),
	);
}
