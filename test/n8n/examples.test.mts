// The example workflows of examples/n8n, executed in the real n8n 2.40.7 (Node 24) by CLI against the simulator,
// and for the attack example against a real Temporal dev server + the worker. The files are imported as they are,
// except: node types `n8n-nodes-security-service.*` → `CUSTOM.*` (the package is loaded from ~/.n8n/custom here),
// a workflow id is added, and the notify URL points at a local stand-in server.
//
// `n8n execute` runs a workflow from its Manual Trigger (n8n's CLI only starts at manualTrigger nodes, and runs
// polling/schedule triggers in "cli" mode, where they only pass data through). Each example therefore has a
// "Run now" Manual Trigger next to its production trigger; the attack example's manual path makes the same
// ddos_events call (status ongoing, newest entry) that the trigger's manual test makes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { startSimulator } from '../../simulator/index.mts';
import { startTemporalDev, startWorkerProcess, type TemporalDev, type WorkerProcess } from '../../demo/stack.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import {
	freePort,
	makeN8nHome,
	n8nCli,
	nodeOutput,
	packPackage,
	parseRawOutput,
	ROOT,
	type N8nHome,
} from './harness.mts';

// This file's runbooks are approved by a typed name: its workers opt in to unverified approvals (issue 41).
process.env.SECSVC_UNVERIFIED_APPROVALS ??= '1';

const APP_ID = 'examples-e2e-app';
const SECRET = 'examples-e2e-secret-value-4';
const EXAMPLES = join(ROOT, 'examples/n8n');

let sim: Awaited<ReturnType<typeof startSimulator>>;
let temporal: TemporalDev | undefined;
let worker: WorkerProcess | undefined;
let connection: Connection | undefined;
let home: N8nHome;
let work: string;
let notify: Server;
let notifyUrl = '';
const notified: any[] = [];

const simGet = async (path: string): Promise<any> => (await fetch(`${sim.url}/__sim${path}`)).json();
const clearLog = () => fetch(`${sim.url}/__sim/requests`, { method: 'DELETE' });

function loadExample(file: string, id: string) {
	const text = readFileSync(join(EXAMPLES, file), 'utf8').replaceAll('"n8n-nodes-security-service.', '"CUSTOM.');
	const wf = JSON.parse(text);
	for (const n of wf.nodes)
		if (n.type === 'n8n-nodes-base.httpRequest' && String(n.parameters.url).includes('/webhook/'))
			n.parameters.url = notifyUrl;
	return { ...wf, id, active: false };
}

async function execute(id: string) {
	const r = await n8nCli(home, ['execute', `--id=${id}`, '--rawOutput']);
	if (r.code !== 0)
		assert.fail(`n8n execute ${id} failed (${r.code}):\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	const run = parseRawOutput(r.stdout);
	if (process.env.EXAMPLES_DUMP)
		writeFileSync(join(process.env.EXAMPLES_DUMP, `${id}.json`), JSON.stringify(run.data.resultData.runData, null, 1));
	return run;
}

before(async () => {
	sim = await startSimulator({ port: 0, appId: APP_ID, secret: SECRET, seed: 7 });
	// The examples name the simulator's seeded ids.
	assert.deepEqual(
		{ ...sim.sim.firstIds() },
		{ customer_id: '10001', site_id: '20001', domain_port_id: '30001', network_id: '40001', host_id: '50001' },
	);
	notify = createServer((req, res) => {
		let body = '';
		req.on('data', (d) => (body += d));
		req.on('end', () => {
			notified.push({ method: req.method, url: req.url, body: JSON.parse(body || 'null') });
			res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
		});
	});
	await new Promise<void>((r) => notify.listen(0, '127.0.0.1', r));
	notifyUrl = `http://127.0.0.1:${(notify.address() as { port: number }).port}/webhook/secsvc-attack-notify`;

	work = mkdtempSync(join(tmpdir(), 'secsvc-examples-'));
	home = makeN8nHome(packPackage(join(work, 'pack')));
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
	temporal = await startTemporalDev();
	worker = await startWorkerProcess({
		temporalAddress: temporal.address,
		taskQueue: 'secsvc-runbooks',
		simUrl: sim.url,
		appId: APP_ID,
		secret: SECRET,
	});
	connection = await Connection.connect({ address: temporal.address });

	const creds = [
		{
			id: 'secsvcCred001',
			name: 'Security Service',
			type: 'securityServiceApi',
			data: {
				baseUrl: sim.url,
				appId: APP_ID,
				secret: SECRET,
				grantType: 'app',
				authFailureCodes: '40101',
				accessToken: '',
				expiresAt: 0,
			},
		},
		{
			id: 'temporalCred001',
			name: 'Temporal',
			type: 'temporalApi',
			data: { address: temporal.httpUrl, namespace: 'default', apiKey: '' },
		},
	];
	writeFileSync(join(work, 'creds.json'), JSON.stringify(creds));
	const r1 = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
	assert.equal(r1.code, 0, `import:credentials failed:\n${r1.stdout}\n${r1.stderr}`);
	const wfDir = join(work, 'wf');
	mkdirSync(wfDir);
	const wfs = [
		loadExample('spe-customer-inventory.json', 'exCustomerInv1'),
		loadExample('daily-blacklist-review.json', 'exBlacklistRv1'),
		loadExample('attack-trigger-runbook-notify.json', 'exAttackRunbk1'),
	];
	for (const wf of wfs) writeFileSync(join(wfDir, `${wf.id}.json`), JSON.stringify(wf));
	const r2 = await n8nCli(home, ['import:workflow', '--separate', `--input=${wfDir}`]);
	assert.equal(r2.code, 0, `import:workflow failed:\n${r2.stdout}\n${r2.stderr}`);
});

after(async () => {
	if (connection) {
		const client = new Client({ connection, namespace: 'default' });
		await client.workflow
			.getHandle('attack-response-20001')
			.terminate('examples test done')
			.catch(() => {});
		await connection.close().catch(() => {});
	}
	await worker?.stop();
	await temporal?.stop();
	await sim?.close();
	await new Promise((r) => notify?.close(r));
	home?.cleanup();
	if (work) rmSync(work, { recursive: true, force: true });
});

test('SPE customer inventory: Return All pages, one customer get per customer, summary matches the portal', async () => {
	await clearLog();
	const run = await execute('exCustomerInv1');
	const state = await simGet('/state');
	const customers = state.customers as Array<{
		customer_id: string;
		customer_name: string;
		protect_services: Record<string, number>;
	}>;
	assert.ok(customers.length > 10, 'the seeded portal has several pages of customers');
	const listed = nodeOutput(run, 'All customers');
	assert.equal(listed.length, customers.length);
	const details = nodeOutput(run, 'Customer detail');
	assert.equal(details.length, customers.length);
	assert.deepEqual(details.map((c) => c.customer_name).sort(), customers.map((c) => c.customer_name).sort());
	const [inv] = nodeOutput(run, 'Inventory');
	assert.equal(inv.customers, customers.length);
	assert.equal(
		inv.with_service.application_protection,
		customers.filter((c) => Number(c.protect_services.application_protection) === 1).length,
	);
	assert.equal(
		inv.with_service.dns_protection,
		customers.filter((c) => Number(c.protect_services.dns_protection) === 1).length,
	);
	assert.deepEqual(inv.names.slice().sort(), customers.map((c) => c.customer_name).sort());
	assert.deepEqual(inv.customer_ids.slice().sort(), customers.map((c) => c.customer_id).sort());
	const none = customers
		.filter((c) => Object.values(c.protect_services).every((v) => Number(v) !== 1))
		.map((c) => c.customer_id);
	assert.deepEqual(inv.without_any_service.slice().sort(), none.sort());
	assert.deepEqual(
		new Set((await simGet('/requests?op=customer.get')).map((q: any) => q.path)).size,
		customers.length,
		'each customer fetched by its own id',
	);
	const gets = await simGet('/requests?op=customer.get');
	assert.equal(gets.length, customers.length, 'one GET customer per customer');
	assert.ok(gets.every((q: any) => q.code === 0));
	const pages = await simGet('/requests?op=customer.list');
	assert.equal(pages.length, Math.ceil(customers.length / 10), 'every page once (10 per page)');
	assert.equal((await simGet('/requests?op=authorization.appToken')).length, 1, 'one token for the whole execution');
});

test('daily blacklist review: one item per entry, broad ranges filtered, summary of the list', async () => {
	const api = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	const dp = { site_id: '20001', domain_port_id: '30001' };
	for (const entry of ['198.51.100.0-198.51.100.255', '100.64.0.0-100.64.1.255', '192.0.2.7'])
		await api.call('applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: entry });
	await clearLog();
	const run = await execute('exBlacklistRv1');
	const entries = nodeOutput(run, 'Blacklist');
	assert.equal(entries.length, 3, JSON.stringify(entries));
	const broad = nodeOutput(run, 'Broader than /24');
	assert.deepEqual(
		broad.map((e) => `${e.start_ip}-${e.end_ip}`),
		['100.64.0.0-100.64.1.255'],
	);
	const [sum] = nodeOutput(run, 'Summary');
	assert.equal(sum.site_id, '20001');
	assert.equal(sum.entries, 3);
	assert.equal(sum.addresses_covered, 256 + 512 + 1);
	assert.equal(sum.single_addresses, 1);
	assert.equal(sum.ranges, 2);
	assert.deepEqual(sum.broad_ranges, ['100.64.0.0-100.64.1.255']);
	const reads = await simGet('/requests?op=applicationProtection.ipBlacklist.get');
	assert.equal(reads.length, 1);
	assert.equal(
		(await simGet('/requests?op=applicationProtection.ipBlacklist.add')).length,
		0,
		'a review changes nothing',
	);
});

test('attack → runbook → notify: the runbook is running on Temporal for the site of the attack, the notice names it', async () => {
	const attack = sim.sim.startAttack({
		site_id: '20001',
		duration: 0,
		sources: [{ ip: '203.0.113.5' }, { ip: '203.0.113.6' }],
	}) as { id: string };
	await clearLog();
	const run = await execute('exAttackRunbk1');
	const [sample] = nodeOutput(run, 'Newest ongoing attack');
	assert.equal(sample.status, 1, 'an ongoing attack');
	assert.equal(sample.alert_id, attack.id, 'the attack just started is the newest ongoing one');
	const [started] = nodeOutput(run, 'Start runbook');
	assert.equal(started.workflowId, 'attack-response-20001');

	const client = new Client({ connection: connection!, namespace: 'default' });
	const handle = client.workflow.getHandle('attack-response-20001');
	const desc = await handle.describe();
	assert.equal(desc.status.name, 'RUNNING', 'the runbook waits for approval');
	assert.equal(desc.type, 'attackResponse');
	assert.equal(desc.runId, started.runId);
	const history = await handle.fetchHistory();
	const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
	assert.ok(input, 'start event carries the plan');
	const { plan, dryRun } = defaultPayloadConverter.fromPayload(input as never) as {
		plan: { site_id: string; event_id: string; approval: { required: boolean } };
		dryRun: boolean;
	};
	assert.equal(dryRun, false);
	assert.equal(plan.site_id, '20001', 'the site of the sample');
	assert.equal(plan.event_id, sample.alert_id, 'the attack of the sample');
	assert.equal(plan.approval.required, true);
	assert.ok(!JSON.stringify(history).includes(SECRET), 'no secret in the history');

	assert.equal(notified.length, 1, 'one notice');
	assert.equal(notified[0].method, 'POST');
	assert.equal(notified[0].body.site_id, '20001');
	assert.equal(notified[0].body.alert_id, sample.alert_id);
	assert.equal(notified[0].body.workflowId, 'attack-response-20001');
	assert.match(notified[0].body.text, /waiting for approval/);
	// Nothing was changed on the service yet (approval pending).
	const writes = (await simGet('/requests')).filter(
		(q: any) => q.method !== 'GET' && !String(q.opId).startsWith('authorization.'),
	);
	assert.deepEqual(
		writes.map((q: any) => q.opId),
		[],
	);
});
