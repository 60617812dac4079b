// Runbook › Decide with an ID Token in the real n8n 2.40.7 (`n8n execute`, the packed package), the real Temporal dev
// server (its HTTP API only), the worker process configured with a real OpenID Connect provider on loopback
// (test/helpers/oidcProvider.mts) and the simulator (docs/approvals.md):
//  - Start with alice's ID Token: the runbook's verified starter;
//  - the decision is sent sealed with the Temporal credential's Payload Key and accepted with bob's verified
//    identity (by, identity.verified oidc, subject, issuer) in the node's output and the runbook's result;
//  - refused, nothing changed: a person outside the operator's approver group (mallory's real token), a typed By
//    without a token (the worker refuses unverified decisions);
//  - no ID token in the runbook's history in plain text.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { dataConverterFor, parseKeys } from '../../worker/src/temporal/codec.mts';
import { APP_ID, ATTACK_SOURCES, SECRET } from '../temporal/helpers.mts';
import { startProvider, type TestProvider } from '../helpers/oidcProvider.mts';
import { n8nCli, nodeOutput, parseRawOutput } from './harness.mts';
import { runbookNodes, startRunbookStack, within, type RunbookStack } from './runbook-stack.mts';
import { chain } from './workflows.mts';

const TASK_QUEUE = 'secsvc-runbooks-n8n-identity';
const KEYS = `n8n:${randomBytes(32).toString('base64')}`;
const PEOPLE = {
	alice: { email: 'alice@soc.example', groups: ['soc-oncall'] },
	bob: { email: 'bob@soc.example', groups: ['soc-oncall'] },
	mallory: { email: 'mallory@soc.example', groups: ['interns'] },
};

let idp: TestProvider;
let stack: RunbookStack;
let sealing: Client;
const rbNode = runbookNodes('26000000');
const log = (m: string) => process.stderr.write(`[n8n identity] ${m}\n`);

before(async () => {
	idp = await startProvider(PEOPLE);
	stack = await startRunbookStack({
		appId: APP_ID,
		secret: SECRET,
		taskQueue: TASK_QUEUE,
		label: 'identity',
		workerEnv: {
			SECSVC_OIDC_ISSUER: idp.issuer,
			SECSVC_OIDC_AUDIENCE: 'secsvc',
			SECSVC_APPROVER_GROUPS: 'soc-oncall',
			SECSVC_PAYLOAD_KEYS: KEYS,
		},
		credential: { payloadSecretKey: KEYS },
	});
	sealing = new Client({
		connection: stack.connection,
		namespace: 'default',
		dataConverter: dataConverterFor(parseKeys(KEYS)),
	});
});
after(async () => {
	await stack?.stop();
	await idp?.close();
});

test('Decide with an ID Token: sealed, verified by the worker, recorded with the verified identity; refusals name the rule', async () => {
	const { ids, sim } = stack;
	const tokens: string[] = [];
	const login = async (who: string, nonce?: string) => {
		const t = await idp.login(who, { nonce });
		tokens.push(t);
		return t;
	};
	sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const plan = {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		cooldownSeconds: 1,
		blacklist: { enabled: false },
		detection: { rapidMode: true, thresholds: [] },
		approval: { required: true, timeoutSeconds: 600, approvers: ['group:soc-oncall'] },
	};
	// Start in n8n with alice's ID token (sealed second argument): the verified starter.
	await stack.importWorkflows([
		chain('wfIdentity000', 'Runbook: start with an ID token', [
			rbNode('Start runbook', {
				operation: 'start',
				plan: JSON.stringify(plan),
				taskQueue: TASK_QUEUE,
				dryRun: false,
				workflowId: '',
				idToken: await login('alice'),
			}),
		]),
	]);
	const r0 = await n8nCli(stack.home, ['execute', '--id=wfIdentity000', '--rawOutput']);
	assert.equal(r0.code, 0, `n8n execute failed:\n${r0.stdout.slice(-3000)}\n${r0.stderr.slice(-3000)}`);
	const [started] = nodeOutput(parseRawOutput(r0.stdout), 'Start runbook');
	assert.equal(started.status, 'started', JSON.stringify(started));
	const h = sealing.workflow.getHandle(String(started.workflowId));
	const st = await within(
		(async () => {
			for (;;) {
				const s = await h.query(stateQuery);
				if (s.phase === 'awaiting-approval') return s;
				await new Promise((r) => setTimeout(r, 200));
			}
		})(),
		90_000,
		'the gate',
	);
	assert.deepEqual([st.startedBy?.name, st.startedBy?.verified], ['alice@soc.example', 'oidc']);
	const nonce = String(st.gate?.nonce);
	const decideNode = (name: string, p: Record<string, unknown>) =>
		rbNode(
			name,
			{ operation: 'decide', runbook: ids.site_id, decision: 'approve', by: '', reason: '', gateWaitSeconds: 0, ...p },
			{ continueOnFail: true },
		);
	await stack.importWorkflows([
		chain('wfIdentity001', 'Runbook: decide with an ID token', [
			decideNode('Mallory', { idToken: await login('mallory', nonce) }),
			decideNode('Typed only', { by: 'bob@soc.example' }),
			decideNode('Bob', { idToken: await login('bob', nonce), reason: 'confirmed' }),
		]),
	]);
	log('n8n execute');
	const r = await n8nCli(stack.home, ['execute', '--id=wfIdentity001', '--rawOutput']);
	assert.equal(r.code, 0, `n8n execute failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	const run = parseRawOutput(r.stdout);
	assert.match(
		String(nodeOutput(run, 'Mallory')[0].error),
		/^Decision refused — Approver: mallory@soc\.example is in none of the operator's approver groups \(soc-oncall; worker policy\)/,
	);
	assert.match(
		String(nodeOutput(run, 'Typed only')[0].error),
		/^Decision refused — ID Token: an ID token from the identity provider is required \(this worker refuses unverified decisions\)/,
	);
	const [ok] = nodeOutput(run, 'Bob');
	assert.equal(ok.accepted, true, JSON.stringify(ok));
	assert.deepEqual(
		[ok.by, ok.via, ok.identity?.verified, ok.identity?.subject, ok.identity?.issuer],
		['bob@soc.example', 'n8n', 'oidc', 'bob', idp.issuer],
	);

	await within(
		(async () => {
			for (;;) {
				if ((await h.query(stateQuery)).phase === 'waiting') return;
				await new Promise((res) => setTimeout(res, 200));
			}
		})(),
		60_000,
		'mitigating',
	);
	await h.signal('abort', { by: 'test', reason: 'done' });
	const res = (await within(h.result(), 120_000, 'runbook result')) as AttackResponseResult;
	assert.deepEqual(
		[res.approval?.by, res.approval?.via, res.approval?.identity?.verified],
		['bob@soc.example', 'n8n', 'oidc'],
	);
	// What anyone with read access to the namespace sees: the decision's payload is ciphertext.
	const history = JSON.stringify(bytesAsText(await stack.client.workflow.getHandle(h.workflowId).fetchHistory()));
	assert.ok(history.includes('binary/encrypted'));
	for (const t of tokens) assert.ok(!history.includes(t.split('.')[2]), 'an ID token in the history in plain text');
});

const bytesAsText = (v: unknown): unknown =>
	v instanceof Uint8Array
		? Buffer.from(v).toString('latin1')
		: Array.isArray(v)
			? v.map(bytesAsText)
			: v && typeof v === 'object'
				? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, bytesAsText(x)]))
				: v;
