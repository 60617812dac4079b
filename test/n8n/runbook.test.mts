// The Security Service Runbook node end to end: the packed package in the real n8n 2.40.7 (Node 24), a real
// Temporal dev server (its HTTP API), the worker process and the simulator. One n8n workflow starts a runbook,
// describes it, signals approve / extend / abort and queries its state; Temporal's record shows each step.
// A second one checks that a bad plan, a starter's ID token without the Payload Key, and a Task Queue nobody polls,
// fail naming the field and start nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { n8nCli, nodeOutput, parseRawOutput, type N8nHome } from './harness.mts';
import { runbookNodes, startRunbookStack, within, type RunbookStack } from './runbook-stack.mts';
import { chain } from './workflows.mts';
import { waitFor } from '../temporal/helpers.mts';

const APP_ID = 'runbook-e2e-app';
const SECRET = 'runbook-e2e-secret-value-9';
const TASK_QUEUE = 'secsvc-runbooks-n8n-e2e';

let stack: RunbookStack;
let sim: RunbookStack['sim'];
let home: N8nHome;
let client: Client;
let ids: RunbookStack['ids'];

const rbNode = runbookNodes('20000000');

before(async () => {
	stack = await startRunbookStack({ appId: APP_ID, secret: SECRET, taskQueue: TASK_QUEUE, label: 'runbook-e2e' });
	({ sim, home, client, ids } = stack);

	const plan = {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		approval: { required: true, timeoutSeconds: 120, onTimeout: 'reject' },
		detection: { rapidMode: true, thresholds: [{ name: 'total_traffic', factor: 0.5 }] },
		blacklist: { enabled: true, topN: 5, metric: 'bps', minPercent: 0, protectedRanges: [] },
		cooldownSeconds: 600,
		pollSeconds: 1,
		activityTimeoutSeconds: 10,
	};
	const workflows = [
		chain('wfRunbook00001', 'Runbook: start, describe', [
			rbNode('Start runbook', {
				operation: 'start',
				plan: JSON.stringify(plan),
				taskQueue: TASK_QUEUE,
				dryRun: false,
				workflowId: '',
			}),
			rbNode('Describe', { operation: 'describe', runbook: ids.site_id }),
		]),
		// Signal › Approve is the decide Update: refused before the runbook waits for a decision (no pre-approval).
		chain('wfRunbook00005', 'Runbook: approve, extend, query', [
			rbNode('Approve', {
				operation: 'signal',
				runbook: ids.site_id,
				signal: 'approve',
				by: 'oncall-n8n',
				reason: 'confirmed attack',
			}),
			rbNode('Extend', {
				operation: 'signal',
				runbook: `attack-response-${ids.site_id}`,
				signal: 'extend',
				seconds: 120,
				by: 'oncall-n8n',
			}),
			rbNode('State', { operation: 'query', runbook: ids.site_id, query: 'state' }),
			rbNode('Audit', { operation: 'query', runbook: ids.site_id, query: 'audit' }),
		]),
		chain('wfRunbook00003', 'Runbook: changes, abort', [
			rbNode('Changes', { operation: 'query', runbook: ids.site_id, query: 'changes' }),
			rbNode('Abort', {
				operation: 'signal',
				runbook: ids.site_id,
				signal: 'abort',
				by: 'oncall-n8n',
				reason: 'attack handled upstream',
			}),
		]),
		chain('wfRunbook00004', 'Runbook: attack report', [
			rbNode('Report', { operation: 'query', runbook: ids.site_id, query: 'report', binaryPropertyName: 'report' }),
		]),
		chain('wfRunbook00002', 'Runbook: bad plan, then cancel', [
			rbNode('Describe first', { operation: 'describe', runbook: ids.site_id }),
			rbNode(
				'Bad plan',
				{
					operation: 'start',
					plan: JSON.stringify({ site_id: 'a/b' }),
					taskQueue: TASK_QUEUE,
					dryRun: false,
					workflowId: '',
				},
				{ continueOnFail: true },
			),
			rbNode('Dry run', {
				operation: 'start',
				plan: JSON.stringify({ ...plan, approval: { required: false } }),
				taskQueue: TASK_QUEUE,
				dryRun: true,
				workflowId: 'runbook-e2e-dry-run',
			}),
			// a starter's ID token with no Payload Key on the credential: refused before the start, so never recorded
			// (issue 41; the token's shape is all the node reads before it refuses)
			rbNode(
				'Unsealed token',
				{
					operation: 'start',
					plan: JSON.stringify(plan),
					taskQueue: TASK_QUEUE,
					dryRun: false,
					workflowId: 'runbook-e2e-unsealed',
					idToken: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl',
				},
				{ continueOnFail: true },
			),
			// a Task Queue typo: nobody polls it, so nothing may start there (issue 29)
			rbNode(
				'Queue typo',
				{
					operation: 'start',
					plan: JSON.stringify(plan),
					taskQueue: `${TASK_QUEUE}-typo`,
					dryRun: false,
					workflowId: 'runbook-e2e-typo',
				},
				{ continueOnFail: true },
			),
			rbNode(
				'Block queue typo',
				{
					operation: 'blockAdd',
					siteId: ids.site_id,
					domainPortId: ids.domain_port_id,
					by: 'oncall-bob',
					entry: '192.0.2.0/30',
					durationSeconds: 600,
					reason: 'scanner',
					blockOptions: { taskQueue: `${TASK_QUEUE}-typo` },
				},
				{ continueOnFail: true },
			),
			rbNode(
				'Cancel unknown',
				{ operation: 'cancel', runbook: 'no-such-runbook-xyz', by: 'n8n', reason: '' },
				{ continueOnFail: true },
			),
		]),
	];
	await stack.importWorkflows(workflows);
});

after(async () => {
	await stack?.stop();
});

const log = (m: string) => process.stderr.write(`[runbook e2e] ${m}\n`);

async function whyFailed(wid: string): Promise<string> {
	try {
		const d = await client.workflow.getHandle(wid).describe();
		if (d.status.name === 'RUNNING') return 'running';
		await within(client.workflow.getHandle(wid).result(), 5000, 'result');
		return 'completed';
	} catch (e) {
		const err = e as { message?: string; cause?: { message?: string; cause?: { message?: string } } };
		return `${err.message} ${err.cause?.message ?? ''} ${err.cause?.cause?.message ?? ''}`;
	}
}

test('n8n starts, describes, signals and queries a runbook on the real Temporal dev server', async () => {
	sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: '203.0.113.5' }, { ip: '203.0.113.6' }] });
	log('executing workflow 1 (start, describe)');
	const r = await n8nCli(home, ['execute', '--id=wfRunbook00001', '--rawOutput']);
	const wid = `attack-response-${ids.site_id}`;
	if (r.code !== 0)
		assert.fail(
			`n8n execute failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}\nrunbook: ${await whyFailed(wid)}`,
		);
	const run0 = parseRawOutput(r.stdout);
	const [started] = nodeOutput(run0, 'Start runbook');
	assert.equal(started.workflowId, wid);
	assert.match(String(started.runId), /^[0-9a-f-]{36}$/);
	const [desc] = nodeOutput(run0, 'Describe');
	assert.equal(desc.status, 'RUNNING');
	assert.equal(desc.type, 'attackResponse');
	assert.equal(desc.runId, started.runId);
	await waitFor(
		'awaiting approval',
		async () => (await client.workflow.getHandle(wid).query(stateQuery)).phase === 'awaiting-approval',
		60_000,
		300,
	);
	log('executing workflow 5 (approve, extend, query)');
	const r5 = await n8nCli(home, ['execute', '--id=wfRunbook00005', '--rawOutput']);
	if (r5.code !== 0)
		assert.fail(
			`n8n execute failed:\n${r5.stdout.slice(-3000)}\n${r5.stderr.slice(-3000)}\nrunbook: ${await whyFailed(wid)}`,
		);
	const run = parseRawOutput(r5.stdout);
	assert.deepEqual(nodeOutput(run, 'Approve')[0].sent, true);
	const [state] = nodeOutput(run, 'State');
	assert.ok(state.result, `query result: ${JSON.stringify(state)}`);
	assert.equal(state.query, 'state');
	assert.equal(typeof state.result.phase, 'string');
	assert.equal(state.result.extraCooldownSeconds, 120, 'the extend signal reached the runbook before the query');
	// issue 40: the audit trail is one item per entry, in order, each naming its runbook.
	const audit = nodeOutput(run, 'Audit') as Array<{ workflowId: string; index: number; step: string; what: string }>;
	assert.ok(audit.length > 2, JSON.stringify(audit));
	assert.deepEqual(
		audit.map((a) => a.index),
		audit.map((_, i) => i),
	);
	assert.ok(audit.every((a) => a.workflowId === wid && typeof a.step === 'string' && typeof a.what === 'string'));
	assert.ok(
		audit.some((a) => a.step === 'signal' && a.what === 'extend cooldown by 120s'),
		JSON.stringify(audit),
	);

	// Once it mitigates (phase waiting), a second n8n workflow reads the applied changes and aborts.
	const h = client.workflow.getHandle(wid);
	let phase = '';
	for (let k = 0; k < 300 && phase !== 'waiting'; k++) {
		phase = (await within(h.query(stateQuery), 10_000, 'state query')).phase;
		if (phase !== 'waiting') await new Promise((res) => setTimeout(res, 100));
	}
	log(`runbook phase ${phase}; executing workflow 3 (changes, abort)`);
	const r3 = await n8nCli(home, ['execute', '--id=wfRunbook00003', '--rawOutput']);
	assert.equal(r3.code, 0, `n8n execute failed:\n${r3.stdout.slice(-3000)}\n${r3.stderr.slice(-3000)}`);
	const run3 = parseRawOutput(r3.stdout);
	const changes = nodeOutput(run3, 'Changes')[0].result as { id: string; status: string }[];
	assert.ok(changes.length > 0 && changes.every((c) => c.status === 'applied'), JSON.stringify(changes));
	assert.equal(nodeOutput(run3, 'Abort')[0].sent, true);

	// Temporal's own record: approved by the n8n user, cooldown extended, aborted, everything reverted.
	log('waiting for the runbook result');
	const res = (await within(
		client.workflow.getHandle(wid).result(),
		120_000,
		'runbook result',
	)) as AttackResponseResult;
	assert.equal(res.outcome, 'aborted-reverted');
	const signals = res.audit.filter((a) => a.step === 'signal').map((a) => `${a.what}|${a.result}`);
	assert.deepEqual(
		signals.map((x) => x.replace(/ at \S+( \(unverified: typed, no identity provider\))?$/, '$1')),
		[
			'approve|by oncall-n8n via n8n (unverified: typed, no identity provider)',
			'extend cooldown by 120s|oncall-n8n',
			'abort|oncall-n8n',
		],
	);
	assert.deepEqual([res.approval?.by, res.approval?.via], ['oncall-n8n', 'n8n']);
	assert.ok(
		res.changes.length > 0 && res.changes.every((c) => c.status === 'restored'),
		JSON.stringify(res.changes.map((c) => [c.id, c.status])),
	);
	const hist = JSON.stringify(await client.workflow.getHandle(wid).fetchHistory());
	assert.ok(!hist.includes(SECRET), 'no secret in the history');

	// the finished runbook's attack report as binary data (an n8n workflow can mail it or post it to chat)
	log('executing workflow 4 (attack report)');
	const r4 = await n8nCli(home, ['execute', '--id=wfRunbook00004', '--rawOutput']);
	assert.equal(r4.code, 0, `n8n execute failed:\n${r4.stdout.slice(-3000)}\n${r4.stderr.slice(-3000)}`);
	const run4 = parseRawOutput(r4.stdout);
	const [rep] = nodeOutput(run4, 'Report');
	assert.equal(rep.outcome, 'aborted-reverted');
	const bin = run4.data.resultData.runData.Report.at(-1).data.main[0][0].binary?.report;
	assert.equal(bin?.mimeType, 'text/html');
	assert.equal(bin?.fileName, `attack-report-${wid}.html`);
	// n8n 2.x keeps binary data in its filesystem store (deleted when `n8n execute` ends): the metadata is checked
	// here; the HTML itself is checked by test/unit/observability.test.mts and, in chromium, by
	// test/temporal/observability.test.mts (the same renderer, api/report)
	assert.equal(bin?.fileExtension, 'html');
	assert.match(String(bin?.fileSize), /^\d+(\.\d+)? kB$/);
	assert.ok(parseFloat(String(bin?.fileSize)) > 5, `a whole report: ${bin?.fileSize}`);
});

test('a bad plan fails naming the field and starts nothing; dry run via n8n; cancel of an unknown runbook is a clear error', async () => {
	const r = await n8nCli(home, ['execute', '--id=wfRunbook00002', '--rawOutput']);
	assert.equal(r.code, 0, `n8n execute failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	const run = parseRawOutput(r.stdout);
	const [bad] = nodeOutput(run, 'Bad plan');
	assert.match(String(bad.error), /Plan\.site_id: must be 1–128 characters from A–Z a–z 0–9 \. _ ~ - .*without '\/'/);
	const [dry] = nodeOutput(run, 'Dry run');
	assert.equal(dry.workflowId, 'runbook-e2e-dry-run');
	const dr = (await within(
		client.workflow.getHandle('runbook-e2e-dry-run').result(),
		60_000,
		'dry-run result',
	)) as AttackResponseResult;
	assert.equal(dr.outcome, 'dry-run');
	for (const node of ['Queue typo', 'Block queue typo']) {
		const [typo] = nodeOutput(run, node);
		assert.match(
			String(typo.error),
			new RegExp(`^Task Queue: no worker polls task queue "${TASK_QUEUE}-typo"`),
			`${node}: ${JSON.stringify(typo)}`,
		);
		assert.notEqual(typo.started, true);
	}
	const [unsealed] = nodeOutput(run, 'Unsealed token');
	assert.match(
		String(unsealed.error),
		/^ID Token: needs the Temporal API credential's Payload Key \(the token must not be in the runbook's history in plain text\)/,
		JSON.stringify(unsealed),
	);
	assert.notEqual(unsealed.started, true);
	const [cancel] = nodeOutput(run, 'Cancel unknown');
	assert.match(String(cancel.error), /could not be found/i);
	// nothing was started from the bad plan, the unsealed token or on the typo queue: only the runbook of test 1 and the dry run exist
	const ids2: string[] = [];
	for await (const w of client.workflow.list({ query: "WorkflowType = 'attackResponse'" })) ids2.push(w.workflowId);
	assert.deepEqual(ids2.sort(), [`attack-response-${ids.site_id}`, 'runbook-e2e-dry-run'].sort());
	const onTypo: string[] = [];
	for await (const w of client.workflow.list({ query: `TaskQueue = '${TASK_QUEUE}-typo'` })) onTypo.push(w.workflowId);
	assert.deepEqual(onTypo, [], 'nothing started on the typo queue');
});
