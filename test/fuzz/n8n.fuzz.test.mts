// Fuzz, the n8n entry point in the real n8n 2.40.7: hostile plans and runbook ids as n8n parameters (expressions
// evaluated by n8n per item) into the packed Security Service Runbook node, Continue On Fail. Every item the node
// refuses must carry an error naming the parameter, and nothing may reach the Temporal address (a recorder here):
// only the items the node accepts are sent, each to exactly its own workflow path.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import {
	freePort,
	makeN8nHome,
	n8nCli,
	nodeOutput,
	packPackage,
	parseRawOutput,
	type N8nHome,
} from '../n8n/harness.mts';
import { chain } from '../n8n/workflows.mts';
import { ensureBuilt } from '../n8n/inprocess-driver.mts';
import { SecurityServiceRunbook } from '../../nodes/SecurityServiceRunbook/SecurityServiceRunbook.node.ts';
import { PATH_TRICKS, TEN_K_BAD_IPS, Tally, hostileValue, setAt } from './hostile.mts';

const tally = new Tally('n8n');
const CRED = { id: 'temporalFuzz01', name: 'Temporal (recorder)' };
let home: N8nHome;
let work = ''; // the pack copy, the credential and the workflow document (4 MB)
let recorder: http.Server;
let recorderUrl = '';
const received: string[] = [];

const basePlan = {
	site_id: '20001',
	customer_id: '10001',
	domain_ports: ['30001'],
	blacklist: { protectedRanges: ['198.51.100.2'] },
};
const PATHS = [
	'site_id',
	'customer_id',
	'network_id',
	'host_id',
	'event_id',
	'domain_ports',
	'domain_ports.0',
	'blacklist.protectedRanges',
	'secret',
];
const small = hostileValue.filter((v) => (JSON.stringify(v) ?? '').length < 200_000); // keeps the workflow document small
const planCases = fc
	.sample(fc.tuple(fc.constantFrom(...PATHS), small), { numRuns: 45, seed: 1690 })
	.map(([p, v]) => setAt(basePlan, p, v));
planCases.push(
	setAt(basePlan, 'blacklist.protectedRanges', TEN_K_BAD_IPS),
	setAt(basePlan, 'site_id', 20001),
	setAt(basePlan, 'site_id', '..'),
	basePlan,
);
const runbookCases: unknown[] = [
	...PATH_TRICKS.filter((s) => s.length < 5000),
	42,
	'20001',
	'attack-response-20001',
	{ a: 1 },
	['x'],
];

const WITH_POLLERS = { pollers: [{ identity: 'worker-1' }] };

/** What the node itself decides for one item (the same code n8n runs): its error message, or the URL it sends to. */
async function expected(params: Record<string, unknown>): Promise<{ error?: string; url?: string }> {
	let url: string | undefined;
	const ctx = {
		getInputData: () => [{ json: {} }],
		getNodeParameter: (name: string, _i: number, d?: unknown) => (name in params ? params[name] : d),
		getCredentials: async () => ({ address: recorderUrl, namespace: 'default' }),
		getNode: () => ({ id: 'n', name: 'x', type: 'x', typeVersion: 1, position: [0, 0], parameters: {} }),
		continueOnFail: () => false,
		getExecutionId: () => 'e',
		helpers: {
			// DescribeTaskQueue (the node's check that a worker polls the queue) answered as by a server with a worker.
			httpRequestWithAuthentication: async (_c: string, o: { url: string; returnFullResponse?: boolean }) =>
				o.url.includes('/task-queues/')
					? { statusCode: 200, headers: {}, body: JSON.stringify(WITH_POLLERS) }
					: ((url = o.url), {}),
		},
	};
	try {
		await new SecurityServiceRunbook().execute.call(ctx as never);
		return { url };
	} catch (e) {
		return { error: (e as Error).message };
	}
}

before(async () => {
	recorder = http.createServer((req, res) => {
		req.resume();
		if ((req.url ?? '').includes('/task-queues/'))
			return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(WITH_POLLERS));
		received.push(req.url ?? '');
		res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
	});
	await new Promise<void>((r) => recorder.listen(0, '127.0.0.1', r));
	recorderUrl = `http://127.0.0.1:${(recorder.address() as { port: number }).port}`;
	// the node as it is now; rebuilt only when stale: an unconditional build rewrites dist/ under files run beside it
	ensureBuilt();
	work = mkdtempSync(join(tmpdir(), 'secsvc-n8n-fuzz-'));
	home = makeN8nHome(packPackage(join(work, 'pack')));
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
	writeFileSync(
		join(work, 'creds.json'),
		JSON.stringify([
			{ ...CRED, type: 'temporalApi', data: { address: recorderUrl, namespace: 'default', apiKey: '' } },
		]),
	);
	const ic = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
	assert.equal(ic.code, 0, `import:credentials failed:\n${ic.stdout.slice(-1500)}\n${ic.stderr.slice(-1500)}`);
	const cases = [
		...planCases.map((plan) => ({ plan, runbook: '20001' })),
		...runbookCases.map((runbook) => ({ plan: basePlan, runbook })),
	];
	const rb = (name: string, parameters: Record<string, unknown>, k: number) => ({
		id: `30000000-0000-4000-8000-00000000000${k}`,
		name,
		type: 'CUSTOM.securityServiceRunbook',
		typeVersion: 1,
		position: [600 + k * 200, 300],
		parameters,
		credentials: { temporalApi: CRED },
		onError: 'continueRegularOutput',
	});
	const wf = chain('wfFuzz000001', 'fuzz runbook node', [
		{
			id: '30000000-0000-4000-8000-000000000001',
			name: 'Cases',
			type: 'n8n-nodes-base.set',
			typeVersion: 3.4,
			position: [200, 300],
			parameters: { mode: 'raw', jsonOutput: JSON.stringify({ cases }), options: {} },
		},
		{
			id: '30000000-0000-4000-8000-000000000002',
			name: 'Each',
			type: 'n8n-nodes-base.splitOut',
			typeVersion: 1,
			position: [400, 300],
			parameters: { fieldToSplitOut: 'cases', options: {} },
		},
		rb(
			'Start runbook',
			{ operation: 'start', plan: '={{ $json.plan }}', taskQueue: 'q', dryRun: false, workflowId: '' },
			3,
		),
		rb('Describe', { operation: 'describe', runbook: "={{ $('Each').item.json.runbook }}" }, 4),
	]);
	const dir = join(work, 'wf');
	mkdirSync(dir);
	writeFileSync(join(dir, 'wf.json'), JSON.stringify(wf));
	const imp = await n8nCli(home, ['import:workflow', '--separate', `--input=${dir}`]);
	assert.equal(imp.code, 0, `import:workflow failed:\n${imp.stdout.slice(-1500)}\n${imp.stderr.slice(-1500)}`);
});

after(async () => {
	tally.report();
	home?.cleanup();
	if (work) rmSync(work, { recursive: true, force: true });
	await new Promise<void>((r) => (recorder ? recorder.close(() => r()) : r()));
});

test(
	'n8n Runbook node: hostile parameters → an error naming the parameter per item, nothing sent; accepted items reach exactly their path',
	tally.wrap(async () => {
		const r = await n8nCli(home, ['execute', '--id=wfFuzz000001', '--rawOutput'], 240_000);
		assert.equal(r.code, 0, `n8n execute failed:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
		const run = parseRawOutput(r.stdout);
		const items = nodeOutput(run, 'Each');
		const starts = nodeOutput(run, 'Start runbook');
		const describes = nodeOutput(run, 'Describe');
		assert.equal(starts.length, items.length);
		let sends = 0;
		for (const [i, item] of items.entries()) {
			tally.hit('n8n Start (plan)');
			const want = await expected({
				operation: 'start',
				plan: item.plan,
				taskQueue: 'q',
				dryRun: false,
				workflowId: '',
			});
			if (want.error) {
				assert.equal(starts[i].error, want.error, `item ${i}`);
				assert.match(String(starts[i].error), /^Plan(\.[\w.]+)?: /);
			} else {
				sends++;
				assert.equal(starts[i].error, undefined, `item ${i}: ${starts[i].error}`);
			}
			tally.hit('n8n Describe (runbook id)');
			const wantD = await expected({ operation: 'describe', runbook: item.runbook });
			if (wantD.error) {
				assert.equal(describes[i].error, wantD.error, `describe item ${i}`);
				assert.match(String(describes[i].error), /^Runbook: /);
			} else {
				sends++;
				const id = String(item.runbook).trim(); // the node trims the parameter
				assert.equal(
					new URL(wantD.url as string).pathname,
					`/api/v1/namespaces/default/workflows/${/^\d+$/.test(id) ? `attack-response-${id}` : id}`,
				);
			}
		}
		// the node's own decisions above sent nothing to the recorder; n8n's run sent exactly the accepted items
		assert.equal(received.length, sends, `requests received ${received.length}, accepted items ${sends}`);
		for (const u of received)
			assert.match(u, /^\/api\/v1\/namespaces\/default\/workflows\/[A-Za-z0-9][A-Za-z0-9._~-]*$/);
		assert.ok(sends < items.length * 2, 'most cases are refused');
	}),
);
