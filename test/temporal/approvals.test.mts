/**
 * Approvals as a Temporal Update (`decide`, workflows/attackResponse/approval.mts) on a real dev server: a refused
 * approver, a rejection without a reason, a second decision and a decision after the timeout are refused and change
 * nothing; the caller gets the decision back; the result and the audit record who, when and through which
 * interface; the old `approve` signal still works; a bad approvers list is refused before anything starts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WORKFLOW_TYPE, type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { parsePlan } from '../../api/runbook/plan.ts';
import { decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { ATTACK_SOURCES, env, type Ids, plan, siteWorld, startSim, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const small = (ids: Ids, approval: Record<string, unknown>) =>
	plan(ids, {
		cooldownSeconds: 1,
		ipAuth: undefined,
		switches: [],
		blacklist: { enabled: false },
		detection: { rapidMode: true, thresholds: [] },
		approval,
	});

const setup = (seed: number) => siteWorld(seed, 'approvals');
const refused = (p: Promise<unknown>, re: RegExp) =>
	assert.rejects(p, (e: Error) => (assert.match(e.message, re), true));
let n = 0;
const wid = (site: string) => `attack-response-${site}-approvals-${process.pid}-${++n}`;
const writes = (s: Awaited<ReturnType<typeof startSim>>) =>
	s.sim.requests().filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));

test('decide: refusals change nothing; the approver gets the decision back; result and audit say who, when, via', async () => {
	const t = await setup(31);
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(
			env.client,
			t.queue,
			small(t.ids, { required: true, timeoutSeconds: 600, approvers: ['alice@soc', 'bob@soc'] }),
			{ workflowId: wid(t.ids.site_id) },
		);
		await waitFor('awaiting approval', async () => (await h.query(stateQuery)).phase === 'awaiting-approval');
		await refused(
			decide(env.client, h.workflowId, { approved: true, by: 'mallory', via: 'cli' }),
			/^by: mallory is not in approval\.approvers/,
		);
		await refused(
			decide(env.client, h.workflowId, { approved: false, by: 'bob@soc', via: 'cli' }),
			/^reason: is required to reject/,
		);
		await refused(decide(env.client, h.workflowId, { approved: true, by: '', via: 'cli' }), /^by: is required/);
		const st = await h.query(stateQuery);
		assert.equal(st.phase, 'awaiting-approval', 'still waiting');
		assert.equal(st.decision, undefined);
		assert.deepEqual(writes(t.s), [], 'nothing written');

		const d = await decide(env.client, h.workflowId, { approved: true, by: 'alice@soc', via: 'cli' });
		assert.deepEqual([d.accepted, d.decision, d.by, d.via], [true, 'approved', 'alice@soc', 'cli']);
		assert.ok(Math.abs(Date.parse(d.at) - Date.now()) < 60_000);
		await refused(
			decide(env.client, h.workflowId, { approved: false, by: 'bob@soc', reason: 'too late', via: 'cli' }),
			/^approval: already decided/,
		);

		await waitFor('mitigating', async () => (await h.query(stateQuery)).phase === 'waiting');
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			[r.approval?.decision, r.approval?.by, r.approval?.via, r.approval?.at],
			['approved', 'alice@soc', 'cli', d.at],
		);
		// Compatibility mode (no identity provider): the typed name, marked unverified in the audit and the result.
		assert.ok(
			r.audit.some(
				(e) =>
					e.what === 'approve' &&
					e.result === `by alice@soc via cli at ${d.at} (unverified: typed, no identity provider)`,
			),
			JSON.stringify(r.audit.filter((e) => e.step === 'signal')),
		);
		assert.deepEqual(r.approval?.identity, { verified: 'unverified', name: 'alice@soc' });
		// issue 40: a person refused is in the audit (who, the rule); input mistakes (no reason, no name) are refused
		// before the Update is accepted and leave no trace (the validator's refusal is not in history).
		assert.deepEqual(
			r.audit.filter((e) => /refused/.test(e.what)).map((e) => [e.step, e.what, e.result]),
			[
				[
					'signal',
					'decide refused (approve by mallory)',
					'refused: by: mallory is not in approval.approvers; nothing changed',
				],
			],
		);
	} finally {
		await t.close();
	}
});

test('after the timeout a decision is refused (default decision kept); the old approve signal still works', async () => {
	const t = await setup(32);
	try {
		t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(
			env.client,
			t.queue,
			small(t.ids, { required: true, timeoutSeconds: 1, onTimeout: 'reject' }),
			{ workflowId: wid(t.ids.site_id) },
		);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'rejected');
		assert.deepEqual([r.approval?.decision, r.approval?.via], ['timeout-rejected', 'timeout']);
		await refused(
			decide(env.client, h.workflowId, { approved: true, by: 'alice', via: 'cli' }),
			/completed|not waiting|already decided/,
		);

		const h2 = await startAttackResponse(env.client, t.queue, small(t.ids, { required: true, timeoutSeconds: 600 }), {
			workflowId: wid(t.ids.site_id),
		});
		await waitFor('awaiting approval', async () => (await h2.query(stateQuery)).phase === 'awaiting-approval');
		await h2.signal('approve', { approved: true, by: 'old-script' });
		await waitFor('mitigating', async () => (await h2.query(stateQuery)).phase === 'waiting');
		const st = await h2.query(stateQuery);
		assert.deepEqual([st.approval?.decision, st.approval?.by, st.approval?.via], ['approved', 'old-script', 'signal']);
		await refused(
			decide(env.client, h2.workflowId, { approved: true, by: 'alice', via: 'cli' }),
			/^approval: already decided/,
		);
		await h2.signal('abort', { by: 'test', reason: 'done' });
		await h2.result();
	} finally {
		await t.close();
	}
});

test('the approve signal obeys the decide rules: early, unlisted, anonymous and late signals are refused and change nothing (issue 29)', async () => {
	const t = await setup(33);
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		// Sent with the start, so it is in the runbook's first task, before its gate: no pre-approval. (Sent after the
		// start, it may arrive while the first task runs the local reads through to the gate, and then it decides.)
		const h = await env.client.workflow.signalWithStart(WORKFLOW_TYPE.attackResponse, {
			taskQueue: t.queue,
			workflowId: wid(t.ids.site_id),
			args: [{ plan: small(t.ids, { required: true, timeoutSeconds: 600, approvers: ['oncall-alice'] }) }],
			signal: 'approve',
			signalArgs: [{ approved: true, by: 'oncall-alice' }],
		});
		await waitFor('awaiting approval', async () => (await h.query(stateQuery)).phase === 'awaiting-approval');
		await h.signal('approve', { approved: true, by: 'mallory' });
		await h.signal('approve', { approved: true });
		await h.signal('approve', { approved: 'yes', by: 'oncall-alice' });
		await h.signal('approve', { approved: false, by: 'oncall-alice' });
		await h.signal('extendCooldown', { seconds: '1e308' });
		await h.signal('extendCooldown', { seconds: 1e308 });
		await h.signal('abort', { reason: { nested: true } });
		let st = await waitFor('refusals recorded', async () => {
			const s = await h.query(stateQuery);
			return (s.refusedSignals ?? 0) >= 8 ? s : undefined;
		});
		assert.equal(st.phase, 'awaiting-approval', 'still waiting: no signal decided');
		assert.equal(st.decision, undefined);
		assert.equal(st.approval, undefined);
		assert.equal(st.aborted, false);
		assert.equal(st.extraCooldownSeconds, 0);
		assert.deepEqual(writes(t.s), [], 'nothing written');
		const audit = (await h.query('audit')) as { what: string; result?: string }[];
		const refusals = audit.filter((e) => /signal refused/.test(e.what)).map((e) => e.result);
		assert.deepEqual(
			refusals,
			[
				'refused: approval: the runbook is not waiting for a decision (phase validating); nothing changed',
				'refused: by: mallory is not in approval.approvers; nothing changed',
				'refused: by: is required (the identity of the person deciding, at most 200 characters)',
				'refused: approved: must be true or false',
				'refused: reason: is required to reject',
				'refused: seconds: must be an integer from 1 to 604800 (7 days)',
				'refused: seconds: must be an integer from 1 to 604800 (7 days)',
				'refused: reason: must be text of at most 1000 characters',
			].map((r, i) => (i === 0 ? refusals[0] : r)),
		);
		assert.match(
			String(refusals[0]),
			/^refused: approval: the runbook is not waiting for a decision \(phase (validating|snapshot|planning)\)/,
		);
		assert.ok(!audit.some((e) => e.what === 'approve' || e.what === 'reject'), 'no decision in the audit');

		await h.signal('approve', { approved: true, by: ' oncall-alice ', reason: 'confirmed' });
		await waitFor('mitigating', async () => (await h.query(stateQuery)).phase === 'waiting');
		st = await h.query(stateQuery);
		assert.deepEqual(
			[st.approval?.decision, st.approval?.by, st.approval?.via],
			['approved', 'oncall-alice', 'signal'],
		);
		// A reject after the decision changes nothing and does not pose as one in the timeline.
		await h.signal('approve', { approved: false, by: 'mallory', reason: 'late' });
		await waitFor('late refusal', async () => ((await h.query(stateQuery)).refusedSignals ?? 0) === 9);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual([r.approval?.decision, r.approval?.by, r.approval?.via], ['approved', 'oncall-alice', 'signal']);
		assert.ok(!r.audit.some((e) => e.what === 'reject'), JSON.stringify(r.audit.filter((e) => e.step === 'signal')));
		assert.match(
			String(r.audit.filter((e) => /signal refused/.test(e.what)).at(-1)?.result),
			/^refused: approval: already decided \(approved by oncall-alice/,
		);
	} finally {
		await t.close();
	}
});

test('a bad approvers list is refused naming the field', () => {
	const ids = { customer_id: 'c', site_id: 's', domain_port_id: 'd' };
	assert.throws(
		() => parsePlan(small(ids, { required: true, approvers: 'alice' })),
		/approval\.approvers: must be a list of identities/,
	);
	assert.throws(
		() => parsePlan(small(ids, { required: true, approvers: ['alice', ''] })),
		/approval\.approvers\.1: must not be empty/,
	);
});
