// Issue 24 item 6 in the real n8n 2.40.7 (`n8n execute`): a Security Service credential with Token Source "From the
// cluster's token owner (Temporal)" takes the customer's token from its tenant workflow, while a worker in tenant mode
// runs a runbook on the same customer's site. The simulator is in strict tenancy with 10 s access tokens, so tokens
// expire during the run (n8n's calls are 12 s apart; the runbook polls every second). Asserted: every n8n call and
// the runbook succeed, 0 refused refreshes, 0 refused tokens, renewals = expiries (the tenant's renewals = the refresh
// POSTs, one per token lifetime at most), no token in n8n's execution data or credential, and the Token Key of another
// customer opens nothing. The customer's own network declared at tenant install (--protected) guards n8n's blocks too.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { getOperation } from '../../api/catalog/index.ts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { parseKeys, SealedPayloadCodec, tenantTokenKey } from '../../worker/src/temporal/codec.mts';
import { connectForCode, exchangeCode, installTenant, showTenant } from '../../workflows/tenant/client.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { startSimulator, type RunningSimulator } from '../../simulator/index.mts';
import { startTemporalDev, type TemporalDev } from '../../demo/stack.mts';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import {
	APP_ID,
	ATTACK_SOURCES,
	killChild,
	plan,
	SECRET,
	spawnWorker,
	uniqueQueue,
	waitFor,
	type Ids,
} from '../temporal/helpers.mts';
import { toNodeParameters } from './inprocess-driver.mts';
import {
	commandsLog,
	freePort,
	makeN8nHome,
	n8nCli,
	nodeOutput,
	packPackage,
	parseRawOutput,
	type N8nHome,
} from './harness.mts';
import { linearConnections, manualTrigger } from './workflows.mts';

const TTL = 10;
const KEYS = `k1:${randomBytes(32).toString('base64')}`;
const REDIRECT = 'https://install.app.example.com/installed';
/** Every token and code the simulator issues: ut_/rt_/at_ + 64 hex, cd_ + 48 hex. */
const SECRET_RE = /\b(?:ut|rt|at)_[0-9a-f]{64}\b|\bcd_[0-9a-f]{48}\b/;
const SS_CRED = { id: 'secsvcCluster01', name: 'Security Service (cluster token)' };
const SS_CRED_OTHER = { id: 'secsvcCluster02', name: 'Security Service (another customer’s key)' };
const TEMPORAL_CRED = { id: 'temporalCred001', name: 'Temporal (dev server)' };

let sim: RunningSimulator;
let temporal: TemporalDev;
let connection: Connection;
let client: Client;
let home: N8nHome;
let work: string;

before(async () => {
	sim = await startSimulator({
		port: 0,
		appId: APP_ID,
		secret: SECRET,
		seed: 11,
		tenancy: 'strict',
		tokenTtl: TTL,
		registeredHost: 'https://app.example.com',
	});
	temporal = await startTemporalDev();
	connection = await Connection.connect({ address: temporal.address });
	client = new Client({
		connection,
		namespace: 'default',
		dataConverter: { payloadCodecs: [new SealedPayloadCodec(parseKeys(KEYS))] },
	});
	work = mkdtempSync(join(tmpdir(), 'secsvc-tenant-token-'));
	home = makeN8nHome(packPackage(join(work, 'pack')));
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
});
after(async () => {
	await connection?.close().catch(() => {});
	await temporal?.stop();
	await sim?.close();
	home?.cleanup();
	if (work) rmSync(work, { recursive: true, force: true });
});

let nodeN = 0;
const node = (
	name: string,
	type: string,
	typeVersion: number,
	parameters: Record<string, unknown>,
	credentials?: Record<string, unknown>,
) => ({
	id: `24000000-0000-4000-8000-${String(++nodeN).padStart(12, '0')}`,
	name,
	type,
	typeVersion,
	position: [200 + nodeN * 200, 300],
	parameters,
	...(credentials ? { credentials } : {}),
});

test('n8n takes the customer token from the tenant workflow across expiries while a tenant worker renews: no lock-out, one renewal per expiry, no token in n8n', async (t) => {
	const queue = uniqueQueue('n8n-tenant');
	const [c1, c2] = (() => {
		const by = new Map<string, Ids[]>();
		for (const s of sim.sim.snapshot().sites)
			by.set(s.customer_id, [
				...(by.get(s.customer_id) ?? []),
				{ customer_id: s.customer_id, site_id: s.site_id, domain_port_id: s.domain_port_ids[0] },
			]);
		return [...by].slice(0, 2).map(([customerId, sites]) => ({ customerId, sites }));
	})();
	const ids = c1.sites[0];
	let wlog = '';
	const worker = spawnWorker({ address: temporal.address }, sim.url, queue, {
		SECSVC_TENANTS: '1',
		SECSVC_PAYLOAD_KEYS: KEYS,
		SECSVC_TOKEN_STORE: join(work, 'host-1', 'tokens.json'),
	});
	worker.stdout?.on('data', (d) => (wlog += d));
	worker.stderr?.on('data', (d) => (wlog += d));
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	try {
		await waitFor('the tenant worker polling', async () => /task queue/.test(wlog), 180_000);
		const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId: c1.customerId });
		const token = await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code);
		// the customer's own network, declared once at install (the spec shows no operation that tells it)
		const own = sim.sim.world.sites.get(ids.site_id)?.networks[0] as { cidr: string; hosts: { ip: string }[] };
		await installTenant(
			client,
			queue,
			{
				customerId: c1.customerId,
				kind: 'user',
				sites: c1.sites.map((s) => s.site_id),
				protectedRanges: [own.cidr],
			},
			token,
		);

		// the credentials as an operator makes them: the Token Key printed by `secsvc tenants token-key` (same derivation)
		const [k1] = parseKeys(KEYS);
		const keyFor = (customerId: string) => `k1:${tenantTokenKey(k1.key, customerId).toString('base64')}`;
		const cluster = (customerId: string, tokenKey: string) => ({
			baseUrl: sim.url,
			source: 'cluster',
			customerId,
			tokenKey,
			authFailureCodes: '40101',
		});
		writeFileSync(
			join(work, 'creds.json'),
			JSON.stringify([
				{ ...SS_CRED, type: 'securityServiceApi', data: cluster(c1.customerId, keyFor(c1.customerId)) },
				{ ...SS_CRED_OTHER, type: 'securityServiceApi', data: cluster(c1.customerId, keyFor(c2.customerId)) },
				{
					...TEMPORAL_CRED,
					type: 'temporalApi',
					data: { address: temporal.httpUrl, namespace: 'default', apiKey: '' },
				},
			]),
		);
		const r1 = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
		assert.equal(r1.code, 0, `import:credentials failed:\n${r1.stdout}\n${r1.stderr}`);

		const read = {
			tokenSource: 'cluster',
			...toNodeParameters(getOperation('dashboard.isUnderAttack'), { site_id: ids.site_id }),
		};
		const creds = (ss: typeof SS_CRED) => ({ securityServiceApi: ss, temporalApi: TEMPORAL_CRED });
		const wait = (name: string) =>
			node(name, 'n8n-nodes-base.wait', 1.1, { resume: 'timeInterval', amount: 12, unit: 'seconds' });
		const nodes = [
			manualTrigger('24000000-0000-4000-8000-100000000000'),
			node('Read 1', 'CUSTOM.securityService', 1, read, creds(SS_CRED)),
			wait('Wait 1'),
			node('Read 2', 'CUSTOM.securityService', 1, read, creds(SS_CRED)),
			wait('Wait 2'),
			node('Read 3', 'CUSTOM.securityService', 1, read, creds(SS_CRED)),
		];
		const other = [
			manualTrigger('24000000-0000-4000-8000-200000000000'),
			{
				...node('Other key', 'CUSTOM.securityService', 1, read, creds(SS_CRED_OTHER)),
				onError: 'continueRegularOutput',
			},
		];
		mkdirSync(join(work, 'wf'), { recursive: true });
		writeFileSync(
			join(work, 'wf', 'tenantToken.json'),
			JSON.stringify({
				id: 'tenantToken001',
				name: 'cluster token across expiries',
				nodes,
				connections: linearConnections(nodes),
				active: false,
				settings: {},
			}),
		);
		writeFileSync(
			join(work, 'wf', 'tenantOther.json'),
			JSON.stringify({
				id: 'tenantOther001',
				name: 'another customer’s key',
				nodes: other,
				connections: linearConnections(other),
				active: false,
				settings: {},
			}),
		);
		const block = {
			tokenSource: 'cluster', // the node's Token Source shows its Temporal credential slot (issue 40)
			...toNodeParameters(getOperation('applicationProtection.ipBlacklist.add'), {
				site_id: ids.site_id,
				domain_port_id: ids.domain_port_id,
				ip_black_list: own.hosts[1].ip,
			}),
		};
		const ownWf = [
			manualTrigger('24000000-0000-4000-8000-300000000000'),
			{
				...node('Block own host', 'CUSTOM.securityService', 1, block, creds(SS_CRED)),
				onError: 'continueRegularOutput',
			},
		];
		writeFileSync(
			join(work, 'wf', 'tenantOwn.json'),
			JSON.stringify({
				id: 'tenantOwn001',
				name: 'the tenant’s declared own network',
				nodes: ownWf,
				connections: linearConnections(ownWf),
				active: false,
				settings: {},
			}),
		);
		const r2 = await n8nCli(home, ['import:workflow', '--separate', `--input=${join(work, 'wf')}`]);
		assert.equal(r2.code, 0, `import:workflow failed:\n${r2.stdout}\n${r2.stderr}`);

		// the worker's own calls for the same customer: an attack-response runbook polling the site every second
		const attack = sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const t0 = Date.now();
		const handle = await startAttackResponse(
			client,
			queue,
			plan(ids, { cooldownSeconds: 3, pollSeconds: 1, maxDurationSeconds: 600, activityTimeoutSeconds: 10 }),
		);

		const run = await n8nCli(home, ['execute', '--id=tenantToken001', '--rawOutput'], 300_000);
		assert.equal(run.code, 0, `n8n execute failed:\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`);
		const doc = parseRawOutput(run.stdout);
		for (const name of ['Read 1', 'Read 2', 'Read 3']) {
			const out = nodeOutput(doc, name);
			assert.equal(out.length, 1, name);
			assert.equal(out[0].error, undefined, `${name}: ${JSON.stringify(out[0])}`);
			assert.ok(Object.keys(out[0]).length > 0, `${name}: an answer`);
		}
		sim.sim.stopAttack(attack.id);
		const result = (await handle.result()) as AttackResponseResult;
		const tEnd = Date.now();
		assert.equal(result.outcome, 'reverted', JSON.stringify(result.changes.map((c) => [c.what, c.status, c.note])));

		// the other customer's Token Key opens nothing: a clear error naming the field, no call made with a token
		const callsBefore = sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length;
		const bad = await n8nCli(home, ['execute', '--id=tenantOther001', '--rawOutput'], 300_000);
		const badOut = nodeOutput(parseRawOutput(bad.stdout), 'Other key')[0];
		assert.match(String(badOut?.error ?? ''), /Token Key: does not open customer/, JSON.stringify(badOut));
		assert.equal(
			sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length,
			callsBefore,
			'nothing sent without a token that opens',
		);

		// the tenant's declared own network guards the n8n credential too (it comes with the token grant): nothing sent
		const ownRun = await n8nCli(home, ['execute', '--id=tenantOwn001', '--rawOutput'], 300_000);
		const ownOut = nodeOutput(parseRawOutput(ownRun.stdout), 'Block own host')[0];
		assert.match(
			String(ownOut?.error ?? ''),
			new RegExp(
				`${own.hosts[1].ip.replace(/\./g, '\\.')} overlaps the protected range ${own.cidr.replace(/[./]/g, '\\$&')} \\(tenant ${c1.customerId} --protected\\): never blocked`,
			),
			JSON.stringify(ownOut),
		);
		assert.equal(
			sim.sim
				.requests({ op: 'applicationProtection.ipBlacklist.add' })
				.filter((r) => JSON.stringify(r.body).includes(own.hosts[1].ip)).length,
			0,
			'the own host was never sent',
		);

		// 0 refused refreshes, 0 refused tokens (expired or foreign), renewals = expiries
		const log = sim.sim.requests();
		const refreshes = log.filter((r) => r.opId === 'authorization.refreshToken');
		assert.equal(refreshes.filter((r) => r.code !== 0).length, 0, 'no refused refresh token (lock-out)');
		const refused = log.filter((r) => r.code === 40101 || r.code === 40302);
		// each named by when, what and from where (its path and query say whose site: n8n's reads or the runbook's polls)
		const named = refused.slice(0, 10).map((r) => {
			const query = Object.fromEntries(Object.entries(r.query).filter(([k]) => !/token/i.test(k))); // no token printed
			return {
				seq: r.seq,
				recvAt: r.recvAt,
				op: r.opId,
				code: r.code,
				path: r.path,
				query,
				tokenLeftMs: r.tokenLeftMs,
			};
		});
		assert.equal(refused.length, 0, `no call refused for an expired or foreign token: ${JSON.stringify(named)}`);
		const view = await showTenant(client, c1.customerId);
		// The worker's runbook keeps the token in use (and renewed) until the view is read, after the other-key run:
		// the expiries are counted up to that moment.
		const tView = Date.now();
		assert.equal(view.status, 'ok');
		const lifetime = (TTL - 2) * 1000; // renewed 2 s before expiry (a fifth of 10 s)
		const due = Math.floor((tView - token.issuedAt) / lifetime);
		assert.ok(view.renewals >= 2, `the token was renewed through expiries (${view.renewals})`);
		assert.ok(view.renewals <= due, `${view.renewals} renewals for ${due} expiries`);
		assert.equal(
			refreshes.length,
			view.renewals,
			'every refresh POST is a renewal of the tenant workflow (n8n renewed nothing)',
		);
		// how close to its token's expiry a call came (the worker takes a held token until 0.5 s before it)
		const left = log.flatMap((r) => (r.code === 0 && r.tokenLeftMs !== undefined ? [r.tokenLeftMs] : []));
		t.diagnostic(
			`${Math.round((tEnd - t0) / 1000)} s, ${view.renewals} renewals (${due} token lifetimes), ${log.filter((r) => r.opId === 'dashboard.isUnderAttack').length} site reads; token life left at a call: min ${Math.min(...left)} ms, ${left.filter((l) => l < 1000).length} calls in a token's last second`,
		);

		// no token in n8n's execution data, output or credential
		// n8n's logs: the runs' output and what its process printed outside them (one process runs the folder's commands)
		assert.doesNotMatch(run.stdout + run.stderr + bad.stdout + bad.stderr + (await commandsLog(home)), SECRET_RE);
		const exported = await n8nCli(home, [
			'export:credentials',
			'--all',
			'--decrypted',
			`--output=${join(work, 'out.json')}`,
		]);
		assert.equal(exported.code, 0, exported.stderr);
		const saved = readFileSync(join(work, 'out.json'), 'utf8');
		assert.doesNotMatch(saved, SECRET_RE, 'the credential holds no token');
		assert.doesNotMatch(wlog, SECRET_RE);
	} finally {
		await client.workflow
			.getHandle(`tenant-${c1.customerId}`)
			.terminate('test over')
			.catch(() => {});
		await killChild(worker, 'SIGKILL');
		await app.close();
	}
});
