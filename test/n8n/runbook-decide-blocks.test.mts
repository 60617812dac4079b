// The Runbook node's Decide and expiring-block operations end to end: the packed package in the real n8n 2.40.7
// (`n8n execute`), the real Temporal dev server (its HTTP API only), the worker process and the simulator.
//  - Decide through the runbook's `decide` Update: a person not in approval.approvers is refused (the error names
//    By; nothing changes: the next, valid approval is accepted), a reject without a reason is refused before sending,
//    oncall-alice's approval comes back synchronously (accepted, by, at, via n8n), a second decision is refused.
//  - Expiring blocks: add (Update-with-start), bad input refused naming the field, a duplicate refused by the
//    workflow's validator, extend, list (one domain-port, whole site); the simulator's blacklist has the entry; remove
//    now; the entry is gone from the simulator's blacklist; removing an unknown block is a clear error.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { APP_ID, ATTACK_SOURCES, operatorClient, SECRET } from '../temporal/helpers.mts';
import { n8nCli, nodeOutput, parseRawOutput, type N8nHome } from './harness.mts';
import { runbookNodes, startRunbookStack, within, type RunbookStack } from './runbook-stack.mts';
import { chain } from './workflows.mts';

const TASK_QUEUE = 'secsvc-runbooks-n8n-decide';

let stack: RunbookStack;
let sim: RunbookStack['sim'];
let home: N8nHome;
let client: Client;
let ids: RunbookStack['ids'];

const rbNode = runbookNodes('21000000');

const log = (m: string) => process.stderr.write(`[decide/blocks e2e] ${m}\n`);

async function execute(id: string) {
	const t0 = Date.now();
	const r = await n8nCli(home, ['execute', `--id=${id}`, '--rawOutput']);
	assert.equal(r.code, 0, `n8n execute ${id} failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	log(`n8n execute ${id}: ${Date.now() - t0} ms`);
	return parseRawOutput(r.stdout);
}

async function blacklist(): Promise<string[]> {
	const op = operatorClient(sim.url);
	try {
		const r = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
		})) as {
			p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string; end_ip?: string }[] } };
		};
		return r.p_info.ipv4.black_soc.map((e) =>
			e.start_ip && e.end_ip && e.start_ip !== e.end_ip ? `${e.start_ip}-${e.end_ip}` : String(e.ip ?? e.start_ip),
		);
	} finally {
		await op.close();
	}
}

async function phaseOf(wid: string, want: string, ms = 60_000): Promise<string> {
	const h = client.workflow.getHandle(wid);
	const deadline = Date.now() + ms;
	let phase = '';
	while (Date.now() < deadline) {
		phase = (await within(h.query(stateQuery), 10_000, 'state query')).phase;
		if (phase === want) return phase;
		await new Promise((res) => setTimeout(res, 200));
	}
	return phase;
}

before(async () => {
	stack = await startRunbookStack({ appId: APP_ID, secret: SECRET, taskQueue: TASK_QUEUE, label: 'decide-e2e' });
	({ sim, home, client, ids } = stack);

	const plan = {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		approval: { required: true, timeoutSeconds: 300, onTimeout: 'reject', approvers: ['oncall-alice'] },
		blacklist: { enabled: true, topN: 5, metric: 'bps', minPercent: 0, protectedRanges: [] },
		cooldownSeconds: 600,
		pollSeconds: 1,
		activityTimeoutSeconds: 10,
	};
	const site = ids.site_id;
	const dp = ids.domain_port_id;
	const blockBase = { siteId: site, domainPortId: dp, by: 'oncall-bob' };
	const workflows = [
		chain('wfDecide00001', 'Runbook: start with approval', [
			rbNode('Start runbook', {
				operation: 'start',
				plan: JSON.stringify(plan),
				taskQueue: TASK_QUEUE,
				dryRun: false,
				workflowId: '',
			}),
		]),
		chain('wfDecide00002', 'Runbook: decide', [
			rbNode(
				'Not an approver',
				{ operation: 'decide', runbook: site, decision: 'approve', by: 'mallory', reason: '' },
				{ continueOnFail: true },
			),
			rbNode(
				'Reject without reason',
				{ operation: 'decide', runbook: site, decision: 'reject', by: 'oncall-alice', reason: ' ' },
				{ continueOnFail: true },
			),
			rbNode('Alice approves', {
				operation: 'decide',
				runbook: site,
				decision: 'approve',
				by: 'oncall-alice',
				reason: 'confirmed attack',
			}),
			rbNode(
				'Second decision',
				{ operation: 'decide', runbook: site, decision: 'reject', by: 'oncall-alice', reason: 'changed my mind' },
				{ continueOnFail: true },
			),
			rbNode(
				'Unknown runbook',
				{ operation: 'decide', runbook: 'no-such-runbook', decision: 'approve', by: 'oncall-alice' },
				{ continueOnFail: true },
			),
		]),
		chain('wfDecide00003', 'Runbook: start from the node fields over three items, decide right after', [
			{
				id: '21000000-0000-4000-8000-0000000000c1',
				name: 'Three alerts',
				type: 'n8n-nodes-base.code',
				typeVersion: 2,
				position: [300, 500],
				parameters: { jsCode: 'return [1, 2, 3].map((n) => ({ json: { n } }));' },
			},
			rbNode('Start with the gate', {
				operation: 'start',
				plan: JSON.stringify({ ...plan, approval: undefined }),
				taskQueue: TASK_QUEUE,
				dryRun: false,
				workflowId: '',
				approvalRequired: true,
				approvers: 'oncall-alice, oncall-bob',
				approvalTimeoutSeconds: 300,
				approvalOnTimeout: 'reject',
			}),
			rbNode(
				'Decide at once',
				{
					operation: 'decide',
					runbook: site,
					decision: 'approve',
					by: 'oncall-bob',
					reason: 'seen the attack',
					gateWaitSeconds: 60,
				},
				{ executeOnce: true },
			),
		]),
		chain('wfDecide00004', 'Runbook: approvers without required', [
			rbNode(
				'Approvers alone',
				{
					operation: 'start',
					plan: JSON.stringify({ ...plan, approval: { approvers: ['oncall-alice'] } }),
					taskQueue: TASK_QUEUE,
					dryRun: false,
					workflowId: '',
				},
				{ continueOnFail: true },
			),
			rbNode(
				'Gate twice',
				{
					operation: 'start',
					plan: JSON.stringify(plan),
					taskQueue: TASK_QUEUE,
					dryRun: false,
					workflowId: '',
					approvalRequired: true,
					approvers: '',
				},
				{ continueOnFail: true },
			),
		]),
		chain('wfBlocks00001', 'Runbook: add, extend and list expiring blocks', [
			rbNode('Add', {
				operation: 'blockAdd',
				...blockBase,
				entry: '192.0.2.0/30',
				durationSeconds: '10m',
				reason: 'scanner',
				blockOptions: { taskQueue: TASK_QUEUE },
			}),
			rbNode(
				'Too wide',
				{
					operation: 'blockAdd',
					...blockBase,
					entry: '10.0.0.0/8',
					durationSeconds: 600,
					reason: 'x',
					blockOptions: { taskQueue: TASK_QUEUE },
				},
				{ continueOnFail: true },
			),
			rbNode(
				'Too long',
				{
					operation: 'blockAdd',
					...blockBase,
					entry: '192.0.2.9',
					durationSeconds: 9_999_999,
					reason: 'x',
					blockOptions: { taskQueue: TASK_QUEUE },
				},
				{ continueOnFail: true },
			),
			rbNode(
				'No reason',
				{
					operation: 'blockAdd',
					...blockBase,
					entry: '192.0.2.9',
					durationSeconds: 60,
					reason: '  ',
					blockOptions: { taskQueue: TASK_QUEUE },
				},
				{ continueOnFail: true },
			),
			rbNode(
				'Duplicate',
				{
					operation: 'blockAdd',
					...blockBase,
					entry: '192.0.2.0-192.0.2.3',
					durationSeconds: 60,
					reason: 'again',
					blockOptions: { taskQueue: TASK_QUEUE },
				},
				{ continueOnFail: true },
			),
			rbNode('Extend', { operation: 'blockExtend', ...blockBase, entry: '192.0.2.0/30', durationSeconds: '2h' }),
			rbNode(
				'Bad duration',
				{ operation: 'blockExtend', ...blockBase, entry: '192.0.2.0/30', durationSeconds: 'two hours' },
				{ continueOnFail: true },
			),
			rbNode('List domain-port', { operation: 'blockList', siteId: site, domainPortId: dp }, { executeOnce: true }),
			rbNode('List site', { operation: 'blockList', siteId: site, domainPortId: '' }, { executeOnce: true }),
		]),
		chain('wfBlocks00002', 'Runbook: remove an expiring block now', [
			rbNode('Remove', { operation: 'blockRemove', ...blockBase, entry: '192.0.2.0/30' }),
			rbNode(
				'Remove again',
				{ operation: 'blockRemove', ...blockBase, entry: '192.0.2.0/30' },
				{ continueOnFail: true },
			),
			rbNode(
				'Remove on unknown domain-port',
				{ operation: 'blockRemove', ...blockBase, domainPortId: '39999', entry: '192.0.2.0/30' },
				{ continueOnFail: true },
			),
			rbNode('List after', { operation: 'blockList', siteId: site, domainPortId: dp }, { executeOnce: true }),
		]),
	];
	await stack.importWorkflows(workflows);
});

after(async () => {
	await stack?.stop();
});

test('Decide: refusals name the field and change nothing; the approver gets the decision back; the runbook mitigates', async () => {
	sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const wid = `attack-response-${ids.site_id}`;
	log('starting the runbook');
	const started = nodeOutput(await execute('wfDecide00001'), 'Start runbook')[0];
	assert.equal(started.workflowId, wid);
	assert.equal(await phaseOf(wid, 'awaiting-approval'), 'awaiting-approval');

	log('deciding');
	const run = await execute('wfDecide00002');
	assert.match(
		String(nodeOutput(run, 'Not an approver')[0].error),
		/^Decision refused — By: mallory is not in approval\.approvers; nothing changed$/,
	);
	assert.match(String(nodeOutput(run, 'Reject without reason')[0].error), /^Reason: is required to reject$/);
	const [ok] = nodeOutput(run, 'Alice approves');
	assert.equal(ok.workflowId, wid);
	assert.equal(ok.accepted, true);
	assert.equal(ok.decision, 'approved');
	assert.equal(ok.by, 'oncall-alice');
	assert.equal(ok.via, 'n8n');
	assert.equal(ok.reason, 'confirmed attack');
	assert.ok(Math.abs(Date.parse(String(ok.at)) - Date.now()) < 120_000, `at is a recent time: ${ok.at}`);
	assert.match(
		String(nodeOutput(run, 'Second decision')[0].error),
		/^Decision refused — Runbook: already decided \(approved by oncall-alice/,
	);
	assert.match(
		String(nodeOutput(run, 'Unknown runbook')[0].error),
		/^Decision refused — Runbook: no-such-runbook is not running/,
	);

	assert.equal(await phaseOf(wid, 'waiting'), 'waiting', 'the approved runbook mitigates');
	await client.workflow.getHandle(wid).signal('abort', { by: 'test', reason: 'done' });
	const res = (await within(
		client.workflow.getHandle(wid).result(),
		120_000,
		'runbook result',
	)) as AttackResponseResult;
	assert.equal(res.outcome, 'aborted-reverted');
	assert.equal(res.approval?.decision, 'approved');
	assert.equal(res.approval?.by, 'oncall-alice');
	assert.equal(res.approval?.via, 'n8n');
	const hist = JSON.stringify(await client.workflow.getHandle(wid).fetchHistory());
	assert.ok(!hist.includes(SECRET), 'no secret in the history');
	// Issue 40: a person refused is in the runbook's audit trail (it decided nothing: the approval is alice's above).
	assert.ok(
		res.audit.some((a) => /^decide refused \((approve|reject) by mallory\)$/.test(a.what)),
		"mallory's refused decision is in the audit",
	);
});

test("Start from the node's approval fields over three items (started, already running ×2); Decide right after Start waits for the gate", async () => {
	const wid = `attack-response-${ids.site_id}`;
	const run = await execute('wfDecide00003');
	const starts = nodeOutput(run, 'Start with the gate');
	assert.deepEqual(
		starts.map((s) => s.status),
		['started', 'already running', 'already running'],
	);
	for (const s of starts) assert.equal(s.workflowId, wid);
	assert.equal(starts[0].approvalRequired, true);
	assert.ok(
		starts[1].runId && starts[1].runId === starts[0].runId,
		`already running names the run: ${JSON.stringify(starts)}`,
	);
	const [d] = nodeOutput(run, 'Decide at once');
	assert.equal(d.accepted, true, JSON.stringify(d));
	assert.equal(d.by, 'oncall-bob');
	const h = client.workflow.getHandle(wid);
	const st = await within(h.query(stateQuery), 10_000, 'state query');
	assert.notEqual(st.phase, 'awaiting-approval');
	await h.signal('abort', { by: 'test', reason: 'done' });
	const res = (await within(h.result(), 120_000, 'runbook result')) as AttackResponseResult;
	assert.equal(res.approval?.decision, 'approved');
	assert.equal(res.approval?.by, 'oncall-bob');

	const bad = await execute('wfDecide00004');
	assert.match(
		String(nodeOutput(bad, 'Approvers alone')[0].error),
		/^Plan\.approval\.required: must be true when approvers are listed/,
	);
	assert.match(
		String(nodeOutput(bad, 'Gate twice')[0].error),
		/^Plan\.approval: is set both in the plan and by Require Approval/,
	);
});

test('expiring blocks: add, refusals, extend, list, remove now — and the simulator blacklist follows', async () => {
	const before = await blacklist();
	assert.ok(!before.includes('192.0.2.0-192.0.2.3'));
	const lastSeq = () => sim.sim.requests().at(-1)?.seq ?? 0;
	const seq0 = lastSeq();
	const run = await execute('wfBlocks00001');
	const [added] = nodeOutput(run, 'Add');
	const bid = `blocks-${ids.site_id}-${ids.domain_port_id}`;
	assert.equal(added.workflowId, bid);
	assert.equal(added.range, '192.0.2.0-192.0.2.3');
	assert.equal(added.state, 'active');
	assert.equal(added.via, 'n8n');
	assert.equal(added.by, 'oncall-bob');
	assert.match(
		String(nodeOutput(run, 'Too wide')[0].error),
		/^IP Address, Range or CIDR: 10\.0\.0\.0\/8 covers 16777216 addresses: wider than the widest block allowed/,
	);
	assert.match(String(nodeOutput(run, 'Too long')[0].error), /^Duration: must be at most 7776000 \(90 days\)$/);
	assert.match(
		String(nodeOutput(run, 'Bad duration')[0].error),
		/^Duration: must be seconds or a number with a unit: 90s, 30m, 2h, 1d, 1h30m$/,
	);
	assert.match(String(nodeOutput(run, 'No reason')[0].error), /^Reason: is required$/);
	assert.match(
		String(nodeOutput(run, 'Duplicate')[0].error),
		/^Block refused — IP Address, Range or CIDR: 192\.0\.2\.0-192\.0\.2\.3 is already blocked/,
	);
	const [ext] = nodeOutput(run, 'Extend');
	const left = Date.parse(String(ext.expiresAt)) - Date.now();
	assert.ok(left > 7000_000 && left <= 7200_000, `extended to ~2 h: ${ext.expiresAt}`);
	const listDp = nodeOutput(run, 'List domain-port');
	assert.deepEqual(
		listDp.map((b) => [b.range, b.state, b.by, b.reason, b.expiresAt]),
		[['192.0.2.0-192.0.2.3', 'active', 'oncall-bob', 'scanner', ext.expiresAt]],
	);
	assert.deepEqual(
		nodeOutput(run, 'List site').map((b) => [b.workflowId, b.domain_port_id, b.range]),
		[[bid, ids.domain_port_id, '192.0.2.0-192.0.2.3']],
	);
	assert.ok((await blacklist()).includes('192.0.2.0-192.0.2.3'), 'the simulator has the entry');
	const posts = sim.sim
		.requests({ op: 'applicationProtection.ipBlacklist.add', since: seq0 })
		.filter((r) => r.method === 'POST');
	assert.equal(posts.length, 1, 'one write for the one block (refusals wrote nothing)');

	const seq1 = lastSeq();
	const run2 = await execute('wfBlocks00002');
	const [removed] = nodeOutput(run2, 'Remove');
	assert.equal(removed.state, 'removed');
	assert.match(String(nodeOutput(run2, 'Remove again')[0].error), /^Block refused — IP Address, Range or CIDR: /);
	assert.match(
		String(nodeOutput(run2, 'Remove on unknown domain-port')[0].error),
		/^Block refused — IP Address, Range or CIDR: no active block for 192\.0\.2\.0\/30 on 39999/,
	);
	const after2 = nodeOutput(run2, 'List after');
	assert.deepEqual(
		after2.map((b) => [b.range, b.state]),
		[['192.0.2.0-192.0.2.3', 'removed']],
	);
	assert.ok(!(await blacklist()).includes('192.0.2.0-192.0.2.3'), 'the entry is gone from the simulator');
	const deletes = sim.sim
		.requests({ op: 'applicationProtection.ipBlacklist.remove', since: seq1 })
		.filter((r) => r.method === 'DELETE');
	assert.equal(deletes.length, 1, 'one removal (the refused removes wrote nothing)');
});
