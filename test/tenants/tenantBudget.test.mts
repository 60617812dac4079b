/**
 * The per-tenant request budget (issue 27; docs/rate-budget.md `tenant`): a real dev server, the simulator in strict
 * tenancy limiting each customer to 4 requests/s (burst 3), and one compiled worker in tenant mode whose budget
 * gives each tenant 3/s (burst 2) within the app's 50/s. Load: a fleet watch every second over 8 sites of tenant A
 * (8 requests/s wanted) and 1 site of tenant B (1/s).
 *  - the simulator refuses nothing (without the tenant budget A would send 8/s and be refused);
 *  - A's requests at the service stay within 3/s + its burst over every 4 s of the window;
 *  - B's site is still checked about once a second: a tenant out of budget does not hold another back.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startSimulator, type RunningSimulator } from '../../simulator/index.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { parseKeys, SealedPayloadCodec } from '../../worker/src/temporal/codec.mts';
import { applyFleet } from '../../workflows/fleet/client.mts';
import { parseFleet } from '../../workflows/fleet/clientConfig.mts';
import { watcherIdPrefix } from '../../workflows/fleet/shared.mts';
import { APP_ID, SECRET, createEnv, killChild, spawnWorker, uniqueQueue, waitFor } from '../temporal/helpers.mts';
import { installAll, WATCH_ONLY_TEMPLATE } from './tenancy.mts';

const KEYS = `k1:${randomBytes(32).toString('base64')}`;
const TENANT = { rps: 3, burst: 2 };
const WINDOW_MS = 12_000;

let env: TestWorkflowEnvironment;
let connection: Connection;
let client: Client;
let s: RunningSimulator;
let worker: ChildProcess | undefined;
let log = '';
const tmp = mkdtempSync(join(tmpdir(), 'secsvc-tenant-budget-'));

before(async () => {
	[env, s] = await Promise.all([
		createEnv(),
		startSimulator({
			port: 0,
			appId: APP_ID,
			secret: SECRET,
			seed: 5,
			tenancy: 'strict',
			registeredHost: 'https://app.example.com',
			fleet: { customers: 2, sitesPerCustomer: 8 },
			rateLimit: { rps: 100, burst: 10, tenant: { rps: 4, burst: 3 } },
		}),
	]);
	connection = await Connection.connect({ address: env.address });
	client = new Client({
		connection,
		namespace: 'default',
		dataConverter: { payloadCodecs: [new SealedPayloadCodec(parseKeys(KEYS))] },
	});
});
after(async () => {
	if (worker) await killChild(worker);
	await connection?.close();
	await env?.teardown();
	await s?.close();
	rmSync(tmp, { recursive: true, force: true });
});

test('a tenant over its budget waits, within its own limit; another tenant is not held back', async () => {
	const queue = uniqueQueue('tenant-budget');
	worker = spawnWorker({ address: env.address }, s.url, queue, {
		SECSVC_TENANTS: '1',
		SECSVC_PAYLOAD_KEYS: KEYS,
		SECSVC_TOKEN_STORE: join(tmp, 'tokens.json'),
		SECSVC_RATE_LIMIT_RPS: '50',
		SECSVC_RATE_LIMIT_BURST: '5',
		SECSVC_TENANT_RATE_LIMIT_RPS: String(TENANT.rps),
		SECSVC_TENANT_RATE_LIMIT_BURST: String(TENANT.burst),
		SECSVC_RATE_LIMIT_REFRESH: '1',
	});
	worker.stdout?.on('data', (d: Buffer) => (log += d.toString()));
	worker.stderr?.on('data', (d: Buffer) => (log += d.toString()));
	// the whole budget is this worker's once it knows it is alone
	await waitFor('the worker alone with the budget', async () => /shared by 1:/.test(log), 120_000);

	// the simulator's fleet: 2 customers × 8 sites (the seeded world's customers are not used)
	const fleetSites = (
		(await (await fetch(`${s.url}/__sim/fleet`)).json()) as {
			sites: { customer_id: string; site_id: string; domain_port_ids: string[] }[];
		}
	).sites;
	const by = new Map<string, { site_id: string; customer_id: string; domain_ports: string[] }[]>();
	for (const x of fleetSites)
		by.set(x.customer_id, [
			...(by.get(x.customer_id) ?? []),
			{ site_id: x.site_id, customer_id: x.customer_id, domain_ports: x.domain_port_ids },
		]);
	const [[custA, sitesA], [custB, sitesB]] = [...by];
	assert.equal(sitesA.length, 8);
	const app = createApiClient({ baseUrl: s.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	try {
		await installAll(app, client, queue, [
			{ customerId: custA, sites: sitesA },
			{ customerId: custB, sites: sitesB },
		]);
	} finally {
		await app.close();
	}
	const fleet = `tbudget${process.pid}`;
	await applyFleet(
		client,
		queue,
		parseFleet({
			fleet,
			intervalSeconds: 1,
			sitesPerWatcher: 8,
			batchSize: 50,
			concurrency: 16,
			activities: 'local',
			template: WATCH_ONLY_TEMPLATE,
			sites: [...sitesA, sitesB[0]],
		}),
	);
	const siteB = sitesB[0].site_id;
	const ofA = new Set(sitesA.map((x) => x.site_id));
	const polls = () => s.sim.requests({ op: 'dashboard.isUnderAttack' });
	// B's site answered: the tenants' tokens are in place and the watch runs
	await waitFor(
		'tenant B checked',
		async () => polls().some((r) => r.path.includes(`/${siteB}/`) && r.code === 0),
		60_000,
	);
	await sleep(3000);
	const t0 = Date.now();
	await sleep(WINDOW_MS);
	const t1 = Date.now();
	const inWindow = polls().filter((r) => (r.recvAt ?? r.time) >= t0 && (r.recvAt ?? r.time) < t1);
	const siteOf = (p: string) => /\/site\/([^/]+)\//.exec(p)?.[1] ?? '';
	const a = inWindow.filter((r) => ofA.has(siteOf(r.path)) && r.code === 0).map((r) => r.recvAt ?? r.time);
	const b = inWindow.filter((r) => siteOf(r.path) === siteB && r.code === 0);
	const refused = s.sim.requests().filter((r) => r.fault === 'ratelimit');
	const detail = `A ${a.length}, B ${b.length} answered in ${WINDOW_MS / 1000} s; refused ${refused.length}`;
	assert.equal(refused.length, 0, `the service refused nothing (${detail})`);
	// A within its budget over every 4 s of the window (3/s × 4 s + the burst), and not starved either
	let worst = 0;
	for (const t of a) worst = Math.max(worst, a.filter((x) => x >= t && x < t + 4000).length);
	assert.ok(
		worst <= TENANT.rps * 4 + TENANT.burst,
		`A at most ${TENANT.rps * 4 + TENANT.burst} in 4 s, saw ${worst} (${detail})`,
	);
	assert.ok(a.length >= TENANT.rps * (WINDOW_MS / 1000) * 0.6, `A used its budget (${detail})`);
	// B's one site, due every second, is checked at its own pace while A's polls wait for A's budget
	assert.ok(b.length >= (WINDOW_MS / 1000) * 0.6, `B checked about once a second (${detail})`);
	for await (const w of client.workflow.list({
		query: `WorkflowId STARTS_WITH '${watcherIdPrefix(fleet)}' AND ExecutionStatus = 'Running'`,
	}))
		await client.workflow
			.getHandle(w.workflowId)
			.terminate('test done')
			.catch(() => {});
});
