/**
 * Attack response on a real Temporal dev server against the simulator: full run, operator conflict, abort,
 * cancellation, dry run, approval gate, injected faults, no secrets in histories, replay of every recorded
 * history, attack watch schedule (one runbook per site), drift audit, attack report.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { WorkflowFailedError } from '@temporalio/client';
import { workflowIdFor, type AttackResponseResult } from '../../api/runbook/contract.ts';
import { abortSignal, approveSignal, resultQuery, stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { createSchedule, deleteSchedule } from '../../worker/src/temporal/schedules.mts';
import { startDriftAudit } from '../../workflows/drift/client.mts';
import { startAttackReport } from '../../workflows/report/client.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import {
	ATTACK_SOURCES,
	env,
	historyJson,
	type Ids,
	liveSettings,
	operatorClient,
	plan,
	SECRET,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';

const recorded: { workflowId: string; runId?: string }[] = [];
const issuedTokens = new Set<string>();

useDevServer();

/** One simulator + one in-process worker on its own task queue per test. */
async function setup(seed = 7) {
	const s = await startSim(seed);
	const ids: Ids = s.sim.firstIds();
	const queue = uniqueQueue('rb');
	const worker = await startInProcessWorker(env, s.url, queue).catch(async (e) => {
		await s.close();
		throw e;
	});
	const op = operatorClient(s.url);
	return {
		s,
		ids,
		queue,
		op,
		async close() {
			for (const t of s.sim.tokens.keys()) issuedTokens.add(t);
			for (const t of s.sim.refreshTokens.keys()) issuedTokens.add(t);
			await worker.shutdown();
			await op.close();
			await s.close();
		},
	};
}

const writes = (s: Awaited<ReturnType<typeof startSim>>) =>
	s.sim
		.requests()
		.filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'))
		.map((r) => r.opId as string);

const withoutEnabledKey = (v: unknown) => JSON.parse(JSON.stringify(v));

test('full attack response: tightens, blacklists, rate-limits, waits out the attack, reverts to the snapshot', async () => {
	const t = await setup();
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		assert.equal(h.workflowId, workflowIdFor(t.ids.site_id));

		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const during = await liveSettings(t.op, t.ids);
		assert.equal(during.model, 1, 'rapid mode on');
		assert.equal((during.tcp_syn as { low_pps: string }).low_pps, '25K');
		assert.equal((during.tcp_syn as { high_pps: string }).high_pps, '100K');
		const listed = (during.blacklist as { start_ip: string; end_ip: string }[])
			.map((e) => `${e.start_ip}-${e.end_ip}`)
			.sort();
		assert.deepEqual(
			listed,
			['198.51.100.1-198.51.100.1', '198.51.100.3-198.51.100.3', '203.0.113.5-203.0.113.6'],
			'aggregated, protected 198.51.100.2 untouched',
		);
		assert.deepEqual(during.ipAuth, {
			action: 'ratelimit',
			enable: 1,
			mode: 2,
			action_ratelimit: { duration: 120, ratelimit_rps: 50, threshold_rps: 100 },
		});
		assert.equal((during.switches as Record<string, { enable: number }>).p_auth.enable, 1);

		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.equal(r.conflicts.length, 0);
		assert.ok(
			r.changes.every((c) => c.status === 'restored'),
			JSON.stringify(r.changes.map((c) => [c.id, c.status])),
		);
		assert.deepEqual(
			withoutEnabledKey(await liveSettings(t.op, t.ids)),
			withoutEnabledKey(beforeSettings),
			'every touched policy equals the snapshot',
		);

		// The request log shows the expected writes, in order: tighten → blacklist → rate limit → switch, then the reverse.
		assert.deepEqual(writes(t.s), [
			'detection.setMode',
			'detection.setPolicy',
			'detection.setPolicy',
			'applicationProtection.ipBlacklist.add',
			'applicationProtection.ipBlacklist.add',
			'applicationProtection.ipBlacklist.add',
			'applicationProtection.authIp.set',
			'applicationProtection.switch.set',
			'applicationProtection.switch.set',
			'applicationProtection.authIp.set',
			'applicationProtection.ipBlacklist.remove',
			'detection.setPolicy',
			'detection.setPolicy',
			'detection.setMode',
		]);
		assert.ok(r.timeToDetectSeconds !== undefined && r.timeToDetectSeconds >= 0);
		assert.ok(r.timeToMitigateSeconds !== undefined && r.timeToMitigateSeconds >= 0);
		assert.ok(
			r.timeToRevertSeconds !== undefined && r.timeToRevertSeconds >= 2,
			`cooldown respected (${r.timeToRevertSeconds})`,
		);
		assert.ok(r.audit.some((a) => a.step === 'blacklisting' && Array.isArray(a.after)));
		for (const a of r.audit) assert.ok(a.at && a.what && a.why, 'audit entries carry when, what and why');
	} finally {
		await t.close();
	}
});

test('operator edit during the attack survives the revert and is reported as a conflict', async () => {
	const t = await setup();
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const dp = { site_id: t.ids.site_id, domain_port_id: t.ids.domain_port_id };
		const operatorValue = {
			action: 'blacklist' as const,
			enable: 1,
			mode: 1,
			action_blacklist: { duration: 600, threshold_rps: 77 },
		};
		await t.op.call('applicationProtection.authIp.set', { ...dp, ...operatorValue });
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			r.conflicts.map((c) => c.id),
			[`ipAuth.${t.ids.domain_port_id}`],
		);
		assert.deepEqual(r.conflicts[0].live, operatorValue);
		const now = await liveSettings(t.op, t.ids);
		assert.deepEqual(now.ipAuth, operatorValue, "operator's value kept");
		assert.deepEqual({ ...now, ipAuth: null }, { ...beforeSettings, ipAuth: null }, 'everything else restored');
	} finally {
		await t.close();
	}
});

test('abort signal and cancellation both revert; dry run changes nothing', async () => {
	const t = await setup();
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });

		// dry run
		t.s.sim.clearRequests();
		const dry = await startAttackResponse(env.client, t.queue, plan(t.ids), { dryRun: true });
		recorded.push({ workflowId: dry.workflowId, runId: dry.firstExecutionRunId });
		const dr = (await dry.result()) as AttackResponseResult;
		assert.equal(dr.outcome, 'dry-run');
		assert.deepEqual(
			dr.diff?.map((d) => d.what),
			[
				'detection mode',
				'detection thresholds of tcp_syn',
				'detection thresholds of total_traffic',
				`IP blacklist of ${t.ids.domain_port_id}`,
				`IP authentication of ${t.ids.domain_port_id}`,
				`switch p_auth of ${t.ids.domain_port_id}`,
			],
		);
		assert.deepEqual(writes(t.s), [], 'dry run sends no write');
		assert.deepEqual(await liveSettings(t.op, t.ids), beforeSettings);

		// abort (attack still ongoing)
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		await h.signal(abortSignal, { by: 'test', reason: 'false positive' });
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'aborted-reverted');
		assert.deepEqual(await liveSettings(t.op, t.ids), beforeSettings);

		// cancellation
		const c = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: c.workflowId, runId: c.firstExecutionRunId });
		await waitFor('phase waiting', async () => (await c.query(stateQuery)).phase === 'waiting');
		await c.cancel();
		await assert.rejects(c.result(), (e: unknown) => e instanceof WorkflowFailedError);
		assert.equal((await c.describe()).status.name, 'CANCELLED');
		const cr = await c.query(resultQuery);
		assert.equal(cr?.outcome, 'cancelled-reverted');
		assert.deepEqual(await liveSettings(t.op, t.ids), beforeSettings);
	} finally {
		await t.close();
	}
});

test('approval gate: no answer → default decision (reject) changes nothing; approve → runs', async () => {
	const t = await setup();
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		t.s.sim.clearRequests();
		const h = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, { approval: { required: true, timeoutSeconds: 1, onTimeout: 'reject' } }),
		);
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'rejected');
		assert.deepEqual(writes(t.s), []);

		const h2 = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, { approval: { required: true, timeoutSeconds: 60, onTimeout: 'reject' } }),
		);
		recorded.push({ workflowId: h2.workflowId, runId: h2.firstExecutionRunId });
		await waitFor('awaiting approval', async () => (await h2.query(stateQuery)).phase === 'awaiting-approval');
		await h2.signal(approveSignal, { approved: true, by: 'oncall' });
		await waitFor('phase waiting', async () => (await h2.query(stateQuery)).phase === 'waiting');
		t.s.sim.stopAttack(attack.id);
		const r2 = (await h2.result()) as AttackResponseResult;
		assert.equal(r2.outcome, 'reverted');
		assert.ok(r2.audit.some((a) => a.what === 'decision: approved'));
	} finally {
		await t.close();
	}
});

test('injected faults (5xx, code≠0, delay, token expiry): completes, reverts, no duplicate list entries', async () => {
	const t = await setup(11);
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'http5xx', count: 2 });
		t.s.sim.addFault({ op: 'applicationProtection.authIp.set', kind: 'code', code: 50001, count: 1 });
		t.s.sim.addFault({ op: 'detection.setPolicy', kind: 'delay', delayMs: 1500, count: 1 });
		t.s.sim.addFault({ op: 'applicationProtection.switch.set', kind: 'expireToken', count: 1 });
		t.s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'ratelimit', count: 1 });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);
		const during = await liveSettings(t.op, t.ids);
		const keys = (during.blacklist as { start_ip: string; end_ip: string }[]).map((e) => `${e.start_ip}-${e.end_ip}`);
		assert.equal(new Set(keys).size, keys.length, `no duplicate entries: ${keys.join(', ')}`);
		assert.equal(keys.length, 3);
		// Revert under faults too.
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.remove', kind: 'http5xx', count: 1 });
		t.s.sim.addFault({ op: 'detection.setMode', kind: 'code', code: 50001, count: 1 });
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(await liveSettings(t.op, t.ids), beforeSettings);
		assert.ok(t.s.sim.requests().some((q) => q.fault === 'expireToken'));
	} finally {
		await t.close();
	}
});

test('a write refused for good fails the runbook closed: earlier changes reverted, failure names the cause', async () => {
	const t = await setup(13);
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		t.s.sim.addFault({ op: 'applicationProtection.switch.set', kind: 'code', code: 40401, count: 5 });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids));
		recorded.push({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
		await assert.rejects(h.result(), (e: unknown) => {
			assert.ok(e instanceof WorkflowFailedError);
			const cause = e.cause as { type?: string; message?: string };
			assert.equal(cause.type, 'RunbookFailed');
			assert.match(String(cause.message), /40401/);
			return true;
		});
		assert.deepEqual(await liveSettings(t.op, t.ids), beforeSettings);
	} finally {
		await t.close();
	}
});

test('attack watch schedule starts at most one runbook per site during an attack', async () => {
	const t = await setup(17);
	try {
		t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const p = plan(t.ids, { cooldownSeconds: 60 });
		// A real interval schedule firing every second while the attack lasts.
		const sched = await createSchedule(env.client, t.queue, 'watch', t.ids.site_id, '1s', { plan: p });
		try {
			await waitFor('3 watch runs', async () => (await sched.describe()).info.recentActions.length >= 3, 30_000, 500);
			await sched.pause('test done');
			const runs = (await sched.describe()).info.recentActions;
			for (const a of runs) {
				const wf = env.client.workflow.getHandle(a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId);
				await wf.result();
				recorded.push({ workflowId: wf.workflowId, runId: a.action.workflow.firstExecutionRunId });
			}
			const results = await Promise.all(
				runs.map((a) =>
					env.client.workflow.getHandle(a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId).result(),
				),
			);
			assert.equal(results.filter((r) => r.started).length, 1, JSON.stringify(results));
			assert.ok(results.every((r) => r.underAttack));
			const rb = env.client.workflow.getHandle(workflowIdFor(t.ids.site_id));
			assert.equal((await rb.describe()).status.name, 'RUNNING');
			await rb.signal(abortSignal, { by: 'test' });
			const rr = (await rb.result()) as AttackResponseResult;
			recorded.push({ workflowId: rb.workflowId });
			assert.equal(rr.outcome, 'aborted-reverted');
		} finally {
			await deleteSchedule(env.client, sched.scheduleId);
		}
	} finally {
		await t.close();
	}
});

test('drift audit reports differences and enforces; attack report gives JSON and Markdown', async () => {
	const t = await setup(19);
	try {
		const dp = { site_id: t.ids.site_id, domain_port_id: t.ids.domain_port_id };
		const desired = {
			site_id: t.ids.site_id,
			customer_id: t.ids.customer_id,
			detection: { model: 1, items: { tcp_syn: { low_pps: '10K' } } },
			domain_ports: {
				[t.ids.domain_port_id]: { switches: { p_auth: 1, p_filt: 1 }, blacklistIncludes: ['192.0.2.0/30'] },
			},
		};
		const audit = await (await startDriftAudit(env.client, t.queue, { desired }, `drift-${t.queue}`)).result();
		recorded.push({ workflowId: `drift-${t.queue}` });
		assert.deepEqual(audit.drifts.map((d: { setting: string }) => d.setting).sort(), [
			'blacklistIncludes',
			'detection.model',
			'detection.tcp_syn',
			'switch.p_auth',
		]);
		t.s.sim.clearRequests();
		assert.deepEqual(writes(t.s), []);
		const enforced = await (
			await startDriftAudit(env.client, t.queue, { desired, enforce: true }, `drift-enf-${t.queue}`)
		).result();
		recorded.push({ workflowId: `drift-enf-${t.queue}` });
		assert.ok(
			enforced.drifts.every((d) => d.enforced === 'fixed'),
			JSON.stringify(enforced.drifts),
		);
		const again = await (await startDriftAudit(env.client, t.queue, { desired }, `drift-again-${t.queue}`)).result();
		assert.deepEqual(again.drifts, []);
		const bl = (await t.op.call('applicationProtection.ipBlacklist.get', dp)) as {
			p_info: { ipv4: { black_soc: unknown[] } };
		};
		assert.equal(bl.p_info.ipv4.black_soc.length, 1);

		const a = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const rep = await (
			await startAttackReport(env.client, t.queue, { site_id: t.ids.site_id, periodHours: 24 }, `report-${t.queue}`)
		).result();
		recorded.push({ workflowId: `report-${t.queue}` });
		assert.ok(rep.report.events.some((e: { alert_id: string }) => e.alert_id === a.id));
		assert.ok(rep.report.totals.ongoing >= 1);
		assert.match(rep.markdown, new RegExp(`\\| ${a.id} \\|`));
		assert.match(rep.markdown, /## Network summary/);
	} finally {
		await t.close();
	}
});

test('the secret and tokens appear nowhere in the recorded histories; every history replays', async () => {
	assert.ok(recorded.length >= 10, `histories recorded: ${recorded.length}`);
	assert.ok(issuedTokens.size > 0);
	const histories: { workflowId: string; history: temporal.api.history.v1.IHistory }[] = [];
	for (const r of recorded) {
		const text = await historyJson(env.client, r.workflowId, r.runId);
		assert.ok(!text.includes(SECRET), `secret in history of ${r.workflowId}`);
		for (const tok of issuedTokens) assert.ok(!text.includes(tok), `token in history of ${r.workflowId}`);
		histories.push({
			workflowId: r.workflowId,
			history: await env.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory(),
		});
	}
	const replay = await Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories);
	let n = 0;
	for await (const res of replay) {
		n++;
		assert.equal(res.error, undefined, `replay of ${res.workflowId}: ${res.error?.message}`);
	}
	assert.equal(n, histories.length);
});
