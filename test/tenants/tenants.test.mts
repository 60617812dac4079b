/**
 * Tenants: a real dev server, the simulator in STRICT tenancy with 30 s access tokens, and compiled worker
 * processes in tenant mode (SECSVC_TENANTS=1, the payload key), each with its own local files (as separate hosts).
 *
 *  a. the install flow end to end through the entrance (`secsvc entrance`): connect with a fresh state, exchange, the
 *     tenant usable; every bad input named (missing/unknown customer, oversized or unknown parameters, a reused code,
 *     an expired code, a state the service did not send back), nothing stored; a worker without the key fails at
 *     start with one line naming the setting;
 *  b. 10 tenants, 3 workers, one attack-response runbook per tenant through several token expiries, one worker
 *     SIGKILLed and restarted: 0 lock-outs (every tenant ok, no refused refresh), renewals per tenant = expiries (at
 *     most one extra after a kill), 0 calls refused for a foreign token, every runbook reverted exactly; no token in
 *     plain text in `temporal workflow show -o json`, the histories, the worker logs, the metrics; the window
 *     between the service's answer to a renewal and the server's record of it, measured.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createApiClient } from '../../worker/src/service/client.mts';
import { freePort } from '../../worker/src/process/freePort.mts';
import { parseKeys, SealedPayloadCodec } from '../../worker/src/temporal/codec.mts';
import {
	connectForCode,
	exchangeCode,
	installTenant,
	listTenants,
	TenantInputError,
} from '../../workflows/tenant/client.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { startSimulator, type RunningSimulator } from '../../simulator/index.mts';
import { installAll, REDIRECT, settingsOf } from './tenancy.mts';
import { tenantWorkflowId, tokenUpdate, type RenewResult } from '../../workflows/tenant/shared.mts';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import {
	APP_ID,
	ATTACK_SOURCES,
	createEnv,
	killChild,
	plan,
	ROOT,
	SECRET,
	spawnWorker,
	temporalBin,
	uniqueQueue,
	waitFor,
	type Ids,
} from '../temporal/helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';
import { secsvcArgs } from '../helpers/secsvcCli.mts';

const KEYS = `k1:${randomBytes(32).toString('base64')},k2:${randomBytes(32).toString('base64')}`;
const TTL = 30;
/** Every token and code the simulator issues: ut_/rt_/at_ + 64 hex, cd_ + 48 hex. */
const SECRET_RE = /\b(?:ut|rt|at)_[0-9a-f]{64}\b|\bcd_[0-9a-f]{48}\b/;

let env: TestWorkflowEnvironment;
let client: Client;
let connection: Connection;
const codec = new SealedPayloadCodec(parseKeys(KEYS));
const tmp = scratchDir('secsvc-tenants-');

before(async () => {
	env = await createEnv();
	connection = await Connection.connect({ address: env.address });
	client = new Client({ connection, namespace: 'default', dataConverter: { payloadCodecs: [codec] } });
});
after(async () => {
	await connection?.close();
	await env?.teardown();
});

const tenantEnv = (sim: RunningSimulator, queue: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
	...process.env,
	TEMPORAL_ADDRESS: env.address,
	TEMPORAL_NAMESPACE: 'default',
	TEMPORAL_TASK_QUEUE: queue,
	SECSVC_BASE_URL: sim.url,
	SECSVC_APP_ID: APP_ID,
	SECSVC_SECRET: SECRET,
	SECSVC_PAYLOAD_KEYS: KEYS,
	SECSVC_REDIRECT_URI: REDIRECT,
	...extra,
});

/** Tenants in test b: 10 by default; SECSVC_TEST_TENANTS=50 for the size (a fleet of customers beyond the seeded 23). */
const N_TENANTS = Number(process.env.SECSVC_TEST_TENANTS ?? 10);
const strictSim = () =>
	startSimulator({
		port: 0,
		appId: APP_ID,
		secret: SECRET,
		seed: 11,
		tenancy: 'strict',
		tokenTtl: TTL,
		registeredHost: 'https://app.example.com',
		...(N_TENANTS > 20 ? { fleet: { customers: N_TENANTS, sitesPerCustomer: 1 } } : {}),
	});

/** Customers of the seeded world with their sites. */
function customers(sim: RunningSimulator, n: number): { customerId: string; sites: Ids[] }[] {
	const by = new Map<string, Ids[]>();
	for (const s of sim.sim.snapshot().sites) {
		const l = by.get(s.customer_id) ?? [];
		l.push({ customer_id: s.customer_id, site_id: s.site_id, domain_port_id: s.domain_port_ids[0] });
		by.set(s.customer_id, l);
	}
	return [...by].slice(0, n).map(([customerId, sites]) => ({ customerId, sites }));
}

/** The CLI as a child process (compiled: test/helpers/secsvcCli.mts), output collected. */
function cli(args: string[], e: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
	return new Promise((resolve) => {
		const c = spawn(process.execPath, secsvcArgs(...args), {
			cwd: ROOT,
			env: e,
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let out = '';
		let err = '';
		c.stdout.on('data', (d) => (out += d));
		c.stderr.on('data', (d) => (err += d));
		c.on('exit', (code) => resolve({ code: code ?? -1, out, err }));
	});
}

async function startEntrance(e: NodeJS.ProcessEnv): Promise<{ url: string; child: ChildProcess; log: () => string }> {
	const child = spawn(process.execPath, secsvcArgs('entrance', '--listen', '127.0.0.1:0'), {
		cwd: ROOT,
		env: e,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let log = '';
	child.stdout?.on('data', (d) => (log += d));
	child.stderr?.on('data', (d) => (log += d));
	// listening, or exited (its log in the error); the wall bound only backs that up: the start (tsx compiling the CLI's
	// imports) is CPU work, so a wall bound measures the machine's load (60 s was missed at load 42, session 15). A
	// start that fails kills the child: the caller has no handle to it yet.
	const url = await waitFor(
		'the entrance listening',
		async () => {
			if (child.exitCode !== null) throw new Error(`the entrance exited (${child.exitCode}): ${log.slice(-2000)}`);
			return /listening on (http:\/\/\S+)/.exec(log)?.[1];
		},
		600_000,
	).catch(async (err: unknown) => {
		await killChild(child, 'SIGKILL');
		throw err;
	});
	return { url, child, log: () => log };
}

/** Tenant workflow ids are per namespace (one per customer): each test ends its tenants so the next one starts afresh. */
async function endTenants(ids: string[]) {
	for (const id of ids)
		await client.workflow
			.getHandle(tenantWorkflowId(id))
			.terminate('test over')
			.catch(() => {});
}

const tenantExists = async (customerId: string) =>
	client.workflow
		.getHandle(tenantWorkflowId(customerId))
		.describe()
		.then(() => true)
		.catch(() => false);

test('a. install flow through the entrance; bad inputs named, nothing stored; a worker without the key fails at start', async () => {
	const sim = await strictSim();
	const queue = uniqueQueue('tenants-a');
	const e = tenantEnv(sim, queue);
	const worker = spawnWorker({ address: env.address }, sim.url, queue, {
		SECSVC_TENANTS: '1',
		SECSVC_PAYLOAD_KEYS: KEYS,
	});
	let wlog = '';
	worker.stdout?.on('data', (d) => (wlog += d));
	worker.stderr?.on('data', (d) => (wlog += d));
	const [c1, c2, c3] = customers(sim, 3);
	let entrance: Awaited<ReturnType<typeof startEntrance>> | undefined;
	try {
		entrance = await startEntrance(e);
		const { url } = entrance;
		await waitFor('the tenant worker polling', async () => /task queue/.test(wlog), 120_000);
		const get = async (q: string) => {
			const r = await fetch(`${url}${q}`);
			return { status: r.status, body: (await r.json()) as Record<string, unknown> };
		};
		// the happy path: the portal calls the entrance with xspe and customer_id
		const ok = await get(
			`?customer_id=${c1.customerId}&xspe=portal-7&sites=${c1.sites.map((s) => s.site_id).join(',')}`,
		);
		assert.equal(ok.status, 200, JSON.stringify(ok.body));
		assert.equal(ok.body.status, 'ok');
		assert.equal(ok.body.customerId, c1.customerId);
		assert.ok(ok.body.validUntil, 'the token record is in the tenant workflow');
		assert.doesNotMatch(JSON.stringify(ok.body), SECRET_RE, 'the answer carries no token');
		const connects = sim.sim.requests({ op: 'authorization.connect' });
		assert.equal(connects.length, 1);
		const state = connects[0].query.state as string;
		assert.match(state, /^[0-9a-f]{32}$/, 'a fresh 128-bit state');
		assert.equal(connects[0].query.xspe, 'portal-7');
		assert.equal(sim.sim.requests({ op: 'authorization.accessToken' }).filter((r) => r.code === 0).length, 1);

		// bad inputs: the field named, nothing stored
		const bad: [string, number, string][] = [
			['', 400, 'customer_id'],
			['?customer_id=99999', 400, 'customer_id'],
			[`?customer_id=${c2.customerId}&xspe=${'x'.repeat(600)}`, 400, 'xspe'],
			[`?customer_id=${c2.customerId}&color=red`, 400, 'color'],
			[`?customer_id=${c2.customerId}&customer_id=${c3.customerId}`, 400, 'customer_id'],
			[`?customer_id=${c2.customerId}&sites=${'9'.repeat(5000)}`, 414, 'request'],
			[`?customer_id=${c2.customerId}&sites=a/b`, 400, 'sites[0]'],
			['?customer_id=../x', 400, 'customer_id'],
		];
		for (const [q, status, field] of bad) {
			const r = await get(q);
			assert.equal(r.status, status, `${q.slice(0, 80)}: ${JSON.stringify(r.body)}`);
			assert.equal(r.body.field, field, `${q.slice(0, 80)}: ${JSON.stringify(r.body)}`);
			assert.match(String(r.body.error), new RegExp(`^${field.replace(/[[\]]/g, '\\$&')}: `));
		}
		assert.equal(await tenantExists(c2.customerId), false, 'nothing stored for a refused install');
		assert.equal(await tenantExists('99999'), false);

		// secsvc tenants add --code: a code used once works, used again is refused naming the code
		const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
		const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c2.customerId });
		const added = await cli(
			[
				'tenants',
				'add',
				'--customer',
				c2.customerId,
				'--code',
				code,
				'--sites',
				c2.sites.map((s) => s.site_id).join(','),
			],
			e,
		);
		assert.equal(added.code, 0, added.err);
		assert.doesNotMatch(added.out + added.err, SECRET_RE);
		const reused = await cli(['tenants', 'add', '--customer', c3.customerId, '--code', code], e);
		assert.equal(reused.code, 2);
		assert.match(reused.err, /^secsvc: code: .*already used/);
		assert.doesNotMatch(reused.err, SECRET_RE, 'the refused code is not echoed');
		const missing = await cli(['tenants', 'add', '--customer', c3.customerId], e);
		assert.equal(missing.code, 2);
		assert.match(missing.err, /--code: is required/);
		// an expired code (codes live 300 s): the simulator's clock moved past it
		const old = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c3.customerId });
		sim.sim.advance(301);
		const expired = await cli(['tenants', 'add', '--customer', c3.customerId, '--code', old], e);
		assert.equal(expired.code, 2);
		assert.match(expired.err, /^secsvc: code: .*expired/);
		assert.equal(await tenantExists(c3.customerId), false, 'nothing stored for a refused code');

		// a service that redirects with another state: refused naming the state, no exchange made
		const evil = createServer((req, res) => {
			const u = new URL(req.url ?? '/', 'http://x');
			res
				.writeHead(302, { location: `${u.searchParams.get('redirect_uri')}?code=cd_${'0'.repeat(48)}&state=forged` })
				.end();
		});
		await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
		const evilApp = createApiClient({
			baseUrl: `http://127.0.0.1:${(evil.address() as { port: number }).port}`,
			credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		});
		await assert.rejects(
			connectForCode(evilApp, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c3.customerId }),
			(err: Error) => err instanceof TenantInputError && err.field === 'state',
		);
		await evilApp.close();
		evil.close();
		await app.close();

		// list / show: token state, never a secret
		const list = await cli(['tenants', 'list', '--json'], e);
		assert.equal(list.code, 0, list.err);
		const rows = JSON.parse(list.out) as { customerId: string; status: string; validUntil: string }[];
		assert.deepEqual(rows.map((r) => r.customerId).sort(), [c1.customerId, c2.customerId].sort());
		assert.doesNotMatch(list.out, SECRET_RE);

		// a worker in tenant mode without the key: one line naming the setting, non-zero exit
		const keyless = spawnWorker({ address: env.address }, sim.url, queue, {
			SECSVC_TENANTS: '1',
			SECSVC_PAYLOAD_KEYS: '',
		});
		let err = '';
		keyless.stderr?.on('data', (d) => (err += d));
		const code2 = await new Promise<number>((r) => keyless.on('exit', (c) => r(c ?? -1)));
		assert.equal(code2, 1);
		assert.match(err.trim(), /^secsvc worker: SECSVC_PAYLOAD_KEYS \/ SECSVC_PAYLOAD_KEYS_FILE: required[^\n]*$/);
		assert.doesNotMatch(wlog, SECRET_RE);
	} finally {
		await endTenants([c1, c2, c3].map((c) => c.customerId));
		await killChild(worker, 'SIGKILL');
		if (entrance) await killChild(entrance.child, 'SIGTERM');
		await sim.close();
	}
});

test(`b. ${N_TENANTS} tenants, 3 workers, runbooks through token expiries, a worker SIGKILLed: no tenant left locked out, one renewal per expiry, nothing in clear`, async (t) => {
	const sim = await strictSim();
	const queue = uniqueQueue('tenants-b');
	const N = N_TENANTS;
	const tenants = customers(sim, N);
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	const logs: string[] = ['', '', ''];
	const workers: ChildProcess[] = [];
	const metricsPort = await freePort();
	const spawnOne = (i: number) => {
		const w = spawnWorker({ address: env.address }, sim.url, queue, {
			SECSVC_TENANTS: '1',
			SECSVC_PAYLOAD_KEYS: KEYS,
			SECSVC_TOKEN_STORE: join(tmp, `host-${i}`, 'tokens.json'),
			...(i === 0 ? { SECSVC_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` } : {}),
		});
		w.stdout?.on('data', (d) => (logs[i] += d));
		w.stderr?.on('data', (d) => (logs[i] += d));
		workers[i] = w;
		return w;
	};
	try {
		for (let i = 0; i < 3; i++) spawnOne(i);
		await waitFor('3 workers polling', async () => logs.every((l) => /task queue/.test(l)), 180_000);
		// install every tenant (as the entrance does): connect, exchange, Update-with-start
		const installedAt = await installAll(app, client, queue, tenants);
		// settings read with a user token of the test's own per customer (strict tenancy refuses the app token there)
		const settings = (ids: Ids) => settingsOf(sim, ids);
		const sites = tenants.map((c) => c.sites[0]);
		const snapshots = await Promise.all(sites.map(settings));
		const attacks = sites.map((ids) =>
			sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES }),
		);
		const t0 = Date.now();
		const handles = await Promise.all(
			sites.map((ids) =>
				startAttackResponse(
					client,
					queue,
					plan(ids, { cooldownSeconds: 3, pollSeconds: 5, maxDurationSeconds: 600, activityTimeoutSeconds: 10 }),
				),
			),
		);
		// the attacks last 75 s (two and a half token lifetimes); a worker is SIGKILLed at 35 s and started again. The
		// runbooks poll every 5 s: each 30 s token is still used ~6 times per lifetime, no assertion is on the poll rate
		await sleep(35_000);
		await killChild(workers[1], 'SIGKILL');
		const killedAt = Date.now();
		spawnOne(1);
		await sleep(Math.max(0, t0 + 75_000 - Date.now()));
		for (const a of attacks) sim.sim.stopAttack(a.id);
		const results = (await Promise.all(handles.map((h) => h.result()))) as AttackResponseResult[];
		const tEnd = Date.now();
		for (const r of results)
			assert.equal(
				r.outcome,
				'reverted',
				`${r.site_id}: ${JSON.stringify(r.changes.map((c) => [c.what, c.status, c.note]))}`,
			);
		const finals = await Promise.all(sites.map(settings));
		sites.forEach((ids, i) => assert.deepEqual(finals[i], snapshots[i], `site ${ids.site_id} equals its snapshot`));

		// 0 calls refused for a foreign token, every tenant ok: a refused refresh (the kill in the refresh's window) only
		// as a lock-out re-installed automatically
		const log = sim.sim.requests();
		assert.equal(log.filter((r) => r.code === 40302).length, 0, 'no call refused for a foreign (or the app) token');
		const refreshes = log.filter((r) => r.opId === 'authorization.refreshToken');
		const refused = refreshes.filter((r) => r.code !== 0).length;
		assert.ok(refused <= 1, `${refused} refused refresh tokens for one kill`);
		const views = await listTenants(client);
		assert.equal(views.length, N);
		for (const v of views) assert.equal(v.status, 'ok', `${v.customerId}: ${v.problem}`);
		const count = (f: (v: (typeof views)[number]) => number) => views.reduce((n, v) => n + f(v), 0);
		assert.deepEqual([count((v) => v.lockouts), count((v) => v.autoReinstalls)], [refused, refused]);
		// renewals per tenant = expiries: a renewal only once the held token is due (renewAt = expiry - 6 s); the
		// expiries are counted up to the moment the renewals are read (a worker renews a token its calls used ahead
		// of need, also after the runbooks ended); at most one extra after the kill
		const windows: number[] = [];
		let extra = 0;
		for (const c of tenants) {
			const tRead = Date.now();
			const renewals = await renewalsOf(c.customerId);
			const due = Math.floor((tRead - (installedAt.get(c.customerId) as number)) / ((TTL - 6) * 1000));
			assert.ok(renewals.length >= 2, `${c.customerId}: renewed through expiries (${renewals.length})`);
			assert.ok(
				renewals.length <= due + 1,
				`${c.customerId}: ${renewals.length} renewals for at most ${due} expiries (+1 after the kill)`,
			);
			extra += Math.max(0, renewals.length - due);
			for (let i = 1; i < renewals.length; i++)
				assert.ok(
					renewals[i].sentAt - renewals[i - 1].sentAt >= (TTL - 6) * 1000 - 1500,
					`${c.customerId}: renewal ${i} came ${renewals[i].sentAt - renewals[i - 1].sentAt} ms after the previous one`,
				);
			windows.push(...renewals.map((r) => r.recordedAt - r.answeredAt));
		}
		const total = (await Promise.all(tenants.map((c) => renewalsOf(c.customerId)))).reduce((n, r) => n + r.length, 0);
		assert.ok(
			refreshes.length <= total + 1,
			`refresh POSTs ${refreshes.length} = renewals recorded ${total} (+1 lost to the kill at most)`,
		);
		windows.sort((a, b) => a - b);
		t.diagnostic(
			`renewals ${total} for ${N} tenants in ${Math.round((tEnd - t0) / 1000)} s (extra ${extra}); refresh POSTs ${refreshes.length}; kill at ${Math.round((killedAt - t0) / 1000)} s; answer→recorded window p50 ${windows[Math.floor(windows.length / 2)]} ms, max ${windows[windows.length - 1]} ms`,
		);

		// nothing in clear: temporal workflow show -o json, every history, worker logs, metrics
		const shown = execFileSync(
			temporalBin(),
			['workflow', 'show', '--address', env.address, '-w', tenantWorkflowId(tenants[0].customerId), '-o', 'json'],
			{ encoding: 'utf8' },
		);
		assert.match(shown, /YmluYXJ5L2VuY3J5cHRlZA==|binary\/encrypted/, 'sealed payloads are ciphertext');
		assert.doesNotMatch(shown, SECRET_RE);
		for (const c of tenants)
			assert.doesNotMatch(
				JSON.stringify(await client.workflow.getHandle(tenantWorkflowId(c.customerId)).fetchHistory()),
				SECRET_RE,
			);
		for (const h of handles) assert.doesNotMatch(JSON.stringify(await h.fetchHistory()), SECRET_RE);
		for (const l of logs) assert.doesNotMatch(l, SECRET_RE);
		const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
		assert.doesNotMatch(metrics, SECRET_RE);
	} finally {
		await endTenants(tenants.map((c) => c.customerId));
		for (const w of workers) if (w) await killChild(w, 'SIGKILL');
		await app.close();
		await sim.close();
	}
});

test('c. a worker SIGKILLed in the middle of a renewal, SECSVC_TENANT_REINSTALL=off: the tenant is needs-reinstall, loudly; a re-install brings it back', async () => {
	const sim = await strictSim();
	const queue = uniqueQueue('tenants-c');
	const [c1] = customers(sim, 1);
	const e = tenantEnv(sim, queue);
	const port = await freePort();
	const logs = ['', ''];
	const start = (i: number, extra: NodeJS.ProcessEnv = {}) => {
		const w = spawnWorker({ address: env.address }, sim.url, queue, {
			SECSVC_TENANTS: '1',
			SECSVC_PAYLOAD_KEYS: KEYS,
			...extra,
		});
		w.stdout?.on('data', (d) => (logs[i] += d));
		w.stderr?.on('data', (d) => (logs[i] += d));
		return w;
	};
	const victim = start(0);
	let second: ChildProcess | undefined;
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	try {
		await waitFor('the victim polling', async () => /task queue/.test(logs[0]), 180_000);
		const install = async () => {
			const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c1.customerId });
			return installTenant(
				client,
				queue,
				{ customerId: c1.customerId, kind: 'user', sites: c1.sites.map((s) => s.site_id) },
				// the connect parameters kept: only the policy stops an automatic re-install
				{ ...(await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code)), connect: { redirectUri: REDIRECT } },
			);
		};
		const installed = await install();
		const handle = client.workflow.getHandle(tenantWorkflowId(c1.customerId));
		// 20 askers at once name the held token as refused: ONE renewal, all get the new token
		const grants = await Promise.all(
			Array.from({ length: 20 }, () =>
				handle.executeUpdate(tokenUpdate, { args: [{ rejectedGeneration: installed.generation }] }),
			),
		);
		assert.deepEqual(new Set(grants.map((g) => g.generation)), new Set([installed.generation + 1]));
		assert.equal(new Set(grants.map((g) => g.accessToken)).size, 1);
		assert.deepEqual(
			sim.sim.requests({ op: 'authorization.refreshToken' }).map((r) => r.code),
			[0],
			'one renewal for 20 concurrent askers',
		);
		const first = grants[0];
		// the service holds the next refresh for 3 s; the worker running it is SIGKILLed meanwhile: the service rotates
		// the refresh token, nobody records the new one
		sim.sim.addFault({ op: 'authorization.refreshToken', kind: 'delay', delayMs: 3000 });
		const asked = handle.executeUpdate(tokenUpdate, { args: [{ rejectedGeneration: first.generation }] });
		await waitFor(
			'the refresh at the service',
			async () => sim.sim.requests({ op: 'authorization.refreshToken' }).length === 2,
			30_000,
			10,
		);
		await killChild(victim, 'SIGKILL');
		second = start(1, { SECSVC_METRICS_ADDRESS: `127.0.0.1:${port}`, SECSVC_TENANT_REINSTALL: 'off' });
		// the renewal's retry (after its 30 s heartbeat timeout) gets the service's refusal: needs-reinstall, at once
		await assert.rejects(
			asked,
			(err: Error) =>
				(err.cause as { type?: string })?.type === 'NeedsReinstall' &&
				/needs re-install/.test((err.cause as Error).message),
		);
		const refreshes = sim.sim.requests({ op: 'authorization.refreshToken' });
		assert.deepEqual(
			refreshes.map((r) => r.code),
			[0, 0, 40103],
			'the lost answer, then one refused retry: no retry loop',
		);
		const shown = await cli(['tenants', 'show', c1.customerId, '--json'], e);
		assert.equal(shown.code, 3, shown.err);
		assert.equal(JSON.parse(shown.out).status, 'needs-reinstall');
		// the killed attempt recorded that it was sending: the problem says the answer was lost, not just "refused"
		assert.match(JSON.parse(shown.out).problem, /sent this refresh token and its answer was lost/);
		assert.deepEqual(
			[JSON.parse(shown.out).lockouts, JSON.parse(shown.out).autoReinstalls, JSON.parse(shown.out).reinstallable],
			[1, 0, true],
		);
		assert.equal((await cli(['tenants', 'list'], e)).code, 3);
		await assert.rejects(
			handle.executeUpdate(tokenUpdate, { args: [{}] }),
			(err: Error) => (err.cause as { type?: string })?.type === 'NeedsReinstall',
		);
		assert.equal(
			sim.sim.requests({ op: 'authorization.refreshToken' }).length,
			3,
			'a needs-reinstall tenant sends nothing more',
		);
		assert.match(logs[1], /tenant \S+ needs re-install: the service refused its refresh token/);
		const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
		assert.match(metrics, /secsvc_tenant_lockouts_total(\{[^}]*\})? 1\b/);
		for (const l of [...logs, metrics]) assert.doesNotMatch(l, SECRET_RE);
		// the customer installs the app again: ok, and a token is handed out
		const again = await install();
		assert.equal(again.status, 'ok');
		const grant = await handle.executeUpdate(tokenUpdate, { args: [{}] });
		assert.ok(grant.expiresAt > Date.now());
		assert.equal((await cli(['tenants', 'show', c1.customerId], e)).code, 0);
	} finally {
		await endTenants([c1.customerId]);
		await killChild(victim, 'SIGKILL');
		if (second) await killChild(second, 'SIGKILL');
		await app.close();
		await sim.close();
	}
});

test('d. token Updates that reach the tenant together (one activation, no worker polling meanwhile): one renewal, every asker gets it', async () => {
	const sim = await strictSim();
	const queue = uniqueQueue('tenants-d');
	const [c1] = customers(sim, 1);
	const logs = ['', ''];
	const start = (i: number) => {
		const w = spawnWorker({ address: env.address }, sim.url, queue, { SECSVC_TENANTS: '1', SECSVC_PAYLOAD_KEYS: KEYS });
		w.stdout?.on('data', (d) => (logs[i] += d));
		w.stderr?.on('data', (d) => (logs[i] += d));
		return w;
	};
	const first = start(0);
	let second: ChildProcess | undefined;
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	try {
		await waitFor('the first worker polling', async () => /task queue/.test(logs[0]), 180_000);
		const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c1.customerId });
		const installed = await installTenant(
			client,
			queue,
			{ customerId: c1.customerId, kind: 'user', sites: c1.sites.map((s) => s.site_id) },
			await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code),
		);
		// nobody polls while the askers arrive: the server hands their Updates to the next worker in one workflow task
		await killChild(first, 'SIGKILL');
		const handle = client.workflow.getHandle(tenantWorkflowId(c1.customerId));
		const asks = Array.from({ length: 20 }, () =>
			handle.executeUpdate(tokenUpdate, { args: [{ rejectedGeneration: installed.generation }] }),
		);
		await sleep(2000);
		second = start(1);
		const grants = await Promise.all(asks);
		assert.deepEqual(new Set(grants.map((g) => g.generation)), new Set([installed.generation + 1]));
		assert.deepEqual(
			sim.sim.requests({ op: 'authorization.refreshToken' }).map((r) => r.code),
			[0],
			'one renewal for 20 askers delivered together',
		);
	} finally {
		await endTenants([c1.customerId]);
		await killChild(first, 'SIGKILL');
		if (second) await killChild(second, 'SIGKILL');
		await app.close();
		await sim.close();
	}
});

/** The renewals a tenant's history records: when sent / answered (from the decrypted result) and recorded (event time). */
async function renewalsOf(customerId: string): Promise<{ sentAt: number; answeredAt: number; recordedAt: number }[]> {
	const out: { sentAt: number; answeredAt: number; recordedAt: number }[] = [];
	// every run (continue-as-new) of the tenant workflow
	for await (const w of client.workflow.list({ query: `WorkflowId = '${tenantWorkflowId(customerId)}'` })) {
		const h = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
		for (const ev of h.events ?? []) {
			const done = ev.activityTaskCompletedEventAttributes;
			if (!done?.result?.payloads?.length) continue;
			const [p] = await codec.decode(done.result.payloads as never);
			const r = defaultPayloadConverter.fromPayload(p) as RenewResult;
			const ts = ev.eventTime as { seconds?: number | { toNumber(): number }; nanos?: number };
			const secs = typeof ts.seconds === 'number' ? ts.seconds : Number(ts.seconds?.toNumber?.() ?? ts.seconds);
			out.push({
				sentAt: r.sentAt,
				answeredAt: r.answeredAt,
				recordedAt: secs * 1000 + Math.floor((ts.nanos ?? 0) / 1e6),
			});
		}
	}
	return out.sort((a, b) => a.sentAt - b.sentAt);
}

/** An API client acting for one customer with a user token of its own (a fresh install code: no refresh). */
