/**
 * What every schedule shares: one dev server, one simulator with a fleet (one site per schedule), the runbooks' worker
 * as a child process (app token; SIGKILLed by PID and started again), a worker for expiring blocks and drift enforces
 * (customer P's user token), an n8n-style API client (customer N's user token) and the vendor's console (the
 * simulator's control API). The simulator's log tells them apart by `caller`.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client as TemporalClient } from '@temporalio/client';
import { startSimulator, type RunningSimulator } from '../../../simulator/index.mts';
import { createClient, type Client } from '../../../api/client.ts';
import { createUndiciTransport } from '../../../worker/src/service/undici.mts';
import { startWorker, type RunningWorker } from '../../../worker/src/process/worker.mts';
import { workflowBundle } from '../../../worker/src/process/bundle.mts';
import { APP_ID, createEnv, SECRET, supervisedWorker, uniqueQueue, type Ids } from '../helpers.mts';
import type { Actor } from './invariant.mts';

export interface World {
	env: TestWorkflowEnvironment;
	client: TemporalClient;
	sim: RunningSimulator;
	/** Task queues: the runbooks' worker (R) and the blocks / drift worker (P). */
	queueR: string;
	queueP: string;
	n8n: Client;
	sites: Ids[];
	/** The log's caller → actor (blocks and drift share P's token: blacklist writes are the blocks', the rest drift's). */
	actorOf(caller: string, key: string): Actor | undefined;
	/** SIGKILLs the runbooks' worker by PID (and starts it again), unless one was killed less than `gapMs` ago (an infinite gap: never). */
	kill(): Promise<boolean>;
	kills: number[];
	close(): Promise<void>;
}

const P_CUSTOMER = '10001';
const N_CUSTOMER = '10002';

/** A customer's refresh token, through the install flow (/oauth/connect → code → /oauth/access_token). */
async function refreshTokenOf(url: string, customer: string): Promise<string> {
	const q = new URLSearchParams({
		app_id: APP_ID,
		redirect_uri: 'https://app.example.com/cb',
		state: 's',
		response_type: 'code',
		scope: 'install_login',
		customer_id: customer,
	});
	const res = await fetch(`${url}/oauth/connect?${q}`, { redirect: 'manual' });
	const code = new URL(res.headers.get('location') ?? 'x:').searchParams.get('code');
	if (!code) throw new Error(`install flow for customer ${customer}: no code (HTTP ${res.status})`);
	const t = await fetch(`${url}/oauth/access_token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: APP_ID, secret: SECRET, code, grant_type: 'authorization_code' }),
	});
	const j = (await t.json()) as { code: number; result?: { refresh_token?: string } };
	if (j.code !== 0 || !j.result?.refresh_token)
		throw new Error(`install flow for customer ${customer}: ${JSON.stringify(j)}`);
	return j.result.refresh_token;
}

export async function startWorld(o: { sites: number; killGapMs?: number }): Promise<World> {
	const env = await createEnv();
	await workflowBundle();
	const sim = await startSimulator({
		port: 0,
		appId: APP_ID,
		secret: SECRET,
		seed: 7,
		fleet: { customers: Math.ceil(o.sites / 10), sitesPerCustomer: 10 },
		logLimit: 10_000_000,
	});
	const queueR = uniqueQueue('interleave-r');
	const queueP = uniqueQueue('interleave-p');
	const api = { baseUrl: sim.url, appId: APP_ID, secret: SECRET, timeoutMs: 4000, retries: 1 };
	const p: RunningWorker = await startWorker(
		{
			temporal: { address: env.address, namespace: 'default', taskQueue: queueP },
			api: { ...api, tokenKind: 'user', refreshToken: await refreshTokenOf(sim.url, P_CUSTOMER) },
		},
		{ connection: env.nativeConnection },
	);
	const r = supervisedWorker(env, sim.url, queueR);
	const transport = createUndiciTransport({ connections: 16 });
	const n8n = createClient({
		baseUrl: sim.url,
		transport,
		credentials: {
			appId: APP_ID,
			secret: SECRET,
			tokenKind: 'user',
			refreshToken: await refreshTokenOf(sim.url, N_CUSTOMER),
		},
		retries: 0,
	});
	const sites = sim.sim
		.snapshot()
		.sites.filter((s) => Number(s.site_id) >= 210001)
		.map((s) => ({ customer_id: s.customer_id, site_id: s.site_id, domain_port_id: s.domain_port_ids[0] }));
	const gap = o.killGapMs ?? 30_000;
	const w: World = {
		env,
		client: env.client,
		sim,
		queueR,
		queueP,
		n8n,
		sites,
		actorOf(caller, key) {
			if (caller === 'app') return 'runbook';
			if (caller === `user:${P_CUSTOMER}`) return key.startsWith('bl.') ? 'block' : 'drift';
			if (caller === `user:${N_CUSTOMER}`) return 'n8n';
			if (caller === 'console') return 'console';
			return undefined;
		},
		kills: [],
		async kill() {
			const last = w.kills.at(-1);
			if (!Number.isFinite(gap) || (last !== undefined && Date.now() - last < gap)) return false;
			w.kills.push(Date.now());
			await r.kill();
			return true;
		},
		async close() {
			await r.stop();
			await p.shutdown();
			await transport.close();
			await sim.close();
			await env.teardown();
		},
	};
	return w;
}
