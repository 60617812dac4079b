/**
 * Runbooks as one control system, on a real Temporal dev server against the simulator:
 *  - one owner per setting: the site coordinator's holds, drift (report and enforce) leaving held settings alone,
 *    a drift lease taken just before the runbook's first claim (no two writers of one setting);
 *  - the runbook holds the line (plan holdTheLine `reapply`): a setting found back at its snapshot value is
 *    re-applied, an operator's own value is kept as a conflict;
 *  - never disarm on doubt: an API outage during the wait keeps the mitigation; the cooldown counts only after sight
 *    is regained;
 *  - HTTP-filter create/edit serialized across three worker processes (no overlap, no 40901 in the service's log).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { coordinatorIdFor, holdsQuery, settingKey } from '../../workflows/coordinator/coordination.mts';
import { workflowIdFor, type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { claim, holds, release } from '../../workflows/coordinator/client.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	ATTACK_SOURCES,
	env,
	type Ids,
	liveSettings,
	plan,
	siteWorld,
	spawnWorker,
	startFilterCreates,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';
import { startDriftAudit } from '../../workflows/drift/client.mts';

useDevServer();

const setup = () => siteWorld(7, 'coord');

const desiredFor = (ids: Ids) => ({
	site_id: ids.site_id,
	customer_id: ids.customer_id,
	detection: { model: 0, items: { tcp_syn: { low_pps: '50K', high_pps: '200K' } } },
	domain_ports: { [ids.domain_port_id]: { switches: { p_auth: 0 } } },
});

const writesOf = (s: Awaited<ReturnType<typeof startSim>>, since = 0) =>
	s.sim.requests({ since }).filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));

test("drift enforce during an attack leaves the runbook's settings alone and reports them as held; the revert is exact", async () => {
	const t = await setup();
	try {
		const beforeSettings = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids, { cooldownSeconds: 1 }));
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const during = await liveSettings(t.op, t.ids);

		// What the coordinator holds, and for whom.
		const held = await holds(env.client, t.ids.site_id);
		const keys = held.map((x) => x.key).sort();
		for (const k of [
			settingKey.detectionMode(),
			settingKey.detectionItem('tcp_syn'),
			settingKey.ipAuth(t.ids.domain_port_id),
			settingKey.switch(t.ids.domain_port_id, 'p_auth'),
		])
			assert.ok(keys.includes(k), `${k} held (${keys.join(', ')})`);
		assert.ok(
			keys.some((k) => k.startsWith(`${t.ids.domain_port_id}/blacklist/`)),
			'blacklisted entries held',
		);
		assert.ok(held.every((x) => x.owner === workflowIdFor(t.ids.site_id) && x.mode === 'hold' && x.since));

		const seq = t.s.sim.requests().at(-1)?.seq ?? 0;
		for (const enforce of [false, true]) {
			const r = await startDriftAudit(
				env.client,
				t.queue,
				{ desired: desiredFor(t.ids), enforce },
				`drift-audit-${t.ids.site_id}-${enforce}-${Date.now()}`,
			).then((h) => h.result());
			assert.deepEqual(
				r.drifts.map((d) => d.setting),
				[],
				`no drift reported while held (${JSON.stringify(r.drifts)})`,
			);
			assert.deepEqual(r.held.map((d) => d.setting).sort(), ['detection.model', 'detection.tcp_syn', 'switch.p_auth']);
			for (const d of r.held) assert.equal(d.held.by, `attack-response-${t.ids.site_id}`);
		}
		assert.deepEqual(
			writesOf(t.s, seq).map((r) => r.opId),
			[],
			'drift enforce wrote nothing',
		);
		assert.deepEqual(await liveSettings(t.op, t.ids), during, 'the mitigation stays');
		assert.equal((await h.query(stateQuery)).phase, 'waiting');

		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			JSON.parse(JSON.stringify(await liveSettings(t.op, t.ids))),
			JSON.parse(JSON.stringify(beforeSettings)),
			'exact revert',
		);
		await waitFor('holds released', async () => (await holds(env.client, t.ids.site_id)).length === 0);

		// Once the runbook is gone, the same enforce fixes the drift.
		const after = await startDriftAudit(
			env.client,
			t.queue,
			{ desired: { ...desiredFor(t.ids), detection: { model: 1 } }, enforce: true },
			`drift-audit-${t.ids.site_id}-after-${Date.now()}`,
		).then((h) => h.result());
		assert.deepEqual(after.held, []);
		assert.deepEqual(
			after.drifts.map((d) => [d.setting, d.enforced]),
			[['detection.model', 'fixed']],
		);
	} finally {
		await t.close();
	}
});

test('a drift lease taken just before the runbook: the runbook waits, snapshots after the write, and restores that value', async () => {
	const t = await setup();
	try {
		// "drift" holds a lease on the tcp_syn thresholds (as an enforce does while it writes them).
		const owner = `drift-audit-${t.ids.site_id}-race`;
		const key = settingKey.detectionItem('tcp_syn');
		const lease = await claim(
			env.client,
			{ site_id: t.ids.site_id, owner, keys: [key], mode: 'lease', reason: 'test lease' },
			t.queue,
		);
		assert.deepEqual(lease.granted, [key]);
		t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const onlyTcpSyn = plan(t.ids, {
			cooldownSeconds: 1,
			detection: { rapidMode: false, thresholds: [{ name: 'tcp_syn', factor: 0.5 }] },
			blacklist: { enabled: false },
			ipAuth: undefined,
			switches: [],
		});
		const h = await startAttackResponse(env.client, t.queue, onlyTcpSyn);
		await new Promise((r) => setTimeout(r, 1500));
		assert.equal((await h.query(stateQuery)).phase, 'snapshot', 'the runbook waits for the lease');
		assert.equal(writesOf(t.s).length, 0, 'nothing written while the lease is held');
		// The lease holder writes its desired value, then releases.
		const op = { customer_id: t.ids.customer_id, site_id: t.ids.site_id, network_id: '0', host_id: '0' };
		await t.op.call('detection.setPolicy', {
			...op,
			name: 'tcp_syn',
			type: 'tcp',
			is_enabled: 1,
			low_pps: '40K',
			high_pps: '160K',
		});
		await release(env.client, t.ids.site_id, owner);
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		await h.signal('abort', { by: 'test', reason: 'done' });
		const r = (await h.result()) as AttackResponseResult;
		const change = r.changes.find((c) => c.kind === 'detectionPolicy');
		assert.deepEqual(
			[(change?.before as Record<string, string>).low_pps, (change?.after as Record<string, string>).low_pps],
			['40K', '20K'],
			'the snapshot was taken after the other writer',
		);
		const pol = await t.op.call('detection.getPolicy', op);
		assert.deepEqual(
			[pol.tcp.tcp_syn.low_pps, pol.tcp.tcp_syn.high_pps],
			['40K', '160K'],
			'the revert restores the value the other writer set',
		);
	} finally {
		await t.close();
	}
});

test("without an approval gate the entries' hold overlaps the detection writes: an entry someone else holds is never written", async () => {
	const t = await setup();
	const other = 'owner-expiring-block';
	try {
		// Another owner holds one of the entries the runbook will plan (the attack's 203.0.113.5-6) before it starts.
		const key = settingKey.blacklistEntry(t.ids.domain_port_id, '203.0.113.5-203.0.113.6');
		const pre = await claim(
			env.client,
			{ site_id: t.ids.site_id, owner: other, keys: [key], mode: 'hold', ttlSeconds: 600, reason: 'test hold' },
			t.queue,
		);
		assert.deepEqual(pre.granted, [key]);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids, { cooldownSeconds: 1 }));
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const adds = writesOf(t.s)
			.filter((r) => r.opId === 'applicationProtection.ipBlacklist.add')
			.map((r) => String((r.body as Record<string, unknown>)?.ip_black_list ?? ''));
		assert.ok(adds.length > 0, 'the other entries are blacklisted');
		assert.ok(!adds.some((e) => e.startsWith('203.0.113.')), `the held entry is never written (${adds.join(', ')})`);
		// Every entry the runbook wrote was held by it before its POST (the hold is granted before the blacklist group).
		const held = await holds(env.client, t.ids.site_id);
		assert.equal(held.find((x) => x.key === key)?.owner, other);
		assert.ok(
			held.some((x) => x.key !== key && x.key.includes('/blacklist/') && x.owner === workflowIdFor(t.ids.site_id)),
		);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			r.heldByOthers.map((x) => [x.key, x.owner]),
			[[key, other]],
		);
		await waitFor("the runbook's holds released", async () =>
			(await holds(env.client, t.ids.site_id)).every((x) => x.owner === other),
		);
	} finally {
		await release(env.client, t.ids.site_id, other).catch(() => undefined);
		await t.close();
	}
});

test('plan holdTheLine reapply: a setting back at its snapshot value is re-applied, an operator value is kept', async () => {
	const t = await setup();
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		// The default (`yield`) leaves all of these as the person set them: test/temporal/exactRevert.test.mts.
		const h = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, { cooldownSeconds: 1, holdTheLine: 'reapply' }),
		);
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const op = { customer_id: t.ids.customer_id, site_id: t.ids.site_id, network_id: '0', host_id: '0' };
		const dp = { site_id: t.ids.site_id, domain_port_id: t.ids.domain_port_id };
		// Undo two mitigations (as a script resetting the site would), and set a third value by hand on a third.
		await t.op.call('detection.setMode', { ...op, model: '0' });
		const listed = (
			(await t.op.call('applicationProtection.ipBlacklist.get', dp)) as {
				p_info: { ipv4: { black_soc: { start_ip: string; end_ip: string }[] } };
			}
		).p_info.ipv4.black_soc;
		await t.op.call('applicationProtection.ipBlacklist.remove', {
			...dp,
			ip_black_list: [`${listed[0].start_ip}-${listed[0].end_ip}`],
		});
		await t.op.call('applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: 0 });
		const operatorAuth = {
			action: 'blacklist' as const,
			enable: 1,
			mode: 1,
			action_blacklist: { duration: 600, threshold_rps: 77 },
		};
		await t.op.call('applicationProtection.authIp.set', { ...dp, ...operatorAuth });

		await waitFor('re-applied', async () => (await h.query(stateQuery)).reapplied >= 3, 20_000);
		const pol = await t.op.call('detection.getPolicy', op);
		assert.equal(Number(pol.model), 1, 'rapid mode re-applied');
		const sw = (await t.op.call('applicationProtection.switch.list', dp)) as Record<string, { enable: number }>;
		assert.equal(sw.p_auth.enable, 1, 'switch re-applied');
		const again = (
			(await t.op.call('applicationProtection.ipBlacklist.get', dp)) as { p_info: { ipv4: { black_soc: unknown[] } } }
		).p_info.ipv4.black_soc;
		assert.equal(again.length, listed.length, 'the removed range is listed again');
		assert.deepEqual(
			await t.op.call('applicationProtection.authIp.get', dp),
			operatorAuth,
			'the operator value is not overwritten',
		);

		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			r.conflicts.map((c) => c.kind),
			['ipAuth'],
		);
		assert.deepEqual(
			await t.op.call('applicationProtection.authIp.get', dp),
			operatorAuth,
			'the operator value survives the revert',
		);
		const audit = r.audit.filter((a) => a.result === 're-applied').map((a) => a.what);
		assert.ok(
			audit.includes('detection mode') &&
				audit.includes(`switch p_auth of ${t.ids.domain_port_id}`) &&
				audit.includes(`IP blacklist of ${t.ids.domain_port_id}`),
			audit.join(' | '),
		);
		assert.equal(Number((await t.op.call('detection.getPolicy', op)).model), 0, 'reverted to the snapshot afterwards');
	} finally {
		await t.close();
	}
});

test('never disarm on doubt: a 20-poll API outage during the wait keeps the mitigation; the cooldown starts after sight returns', async () => {
	const t = await setup();
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids, { cooldownSeconds: 2 }));
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const during = await liveSettings(t.op, t.ids);
		const seq = t.s.sim.requests().at(-1)?.seq ?? 0;
		t.s.sim.addFault({ op: '*', kind: 'http5xx', count: 1_000_000_000 });
		t.s.sim.stopAttack(attack.id); // the attack ends while the runbook cannot see
		await waitFor('blind', async () => (await h.query(stateQuery)).blindSince !== undefined, 30_000);
		// 20 blind polls (pollSeconds 1): the polls of a 10-minute outage at the default pollSeconds 30.
		await new Promise((r) => setTimeout(r, 20_000));
		const st = await h.query(stateQuery);
		assert.equal(st.phase, 'waiting', 'still mitigating while blind');
		assert.equal(
			writesOf(t.s, seq).filter((r) => r.code === 0 || r.status === 200).length,
			0,
			'no write reached the service while blind',
		);
		t.s.sim.faults = [];
		const cleared = t.s.sim.nowMs();
		assert.deepEqual(await liveSettings(t.op, t.ids), during, 'the mitigation is intact');
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.ok(r.blindSeconds >= 19, `blind time recorded (${r.blindSeconds}s)`);
		const blindPolls = t.s.sim
			.requests({ op: 'dashboard.isUnderAttack', since: seq })
			.filter((x) => x.status !== 200).length;
		assert.ok(blindPolls >= 18, `the runbook kept polling while blind (${blindPolls} failed polls)`);
		const firstRevert = writesOf(t.s, seq).find((w) => w.status === 200 && w.code === 0);
		assert.ok(firstRevert, 'the revert wrote');
		assert.ok(
			firstRevert.time - cleared >= 2000 - 250,
			`the cooldown (2 s) was observed after sight returned (${firstRevert.time - cleared} ms)`,
		);
		assert.ok(
			r.audit.some((a) => a.what.startsWith('blind')) && r.audit.some((a) => a.what.startsWith('sight regained')),
		);
	} finally {
		await t.close();
	}
});

test('HTTP-filter create/edit of one domain-port never overlap across three worker processes', async () => {
	const s = await startSim(11, { httpFilterProcessingMs: 150 });
	const ids = s.sim.firstIds();
	const queue = uniqueQueue('filters');
	const workers: ChildProcess[] = [
		spawnWorker(env, s.url, queue),
		spawnWorker(env, s.url, queue),
		spawnWorker(env, s.url, queue),
	];
	try {
		const n = 9;
		const handles = await startFilterCreates(queue, ids, n, 'rule');
		await Promise.all(handles.map((h) => h.result()));
		const creates = s.sim.requests({ op: 'applicationProtection.httpFilter.create' });
		assert.equal(creates.length, n, 'one request per create (none refused and retried)');
		assert.deepEqual(
			creates.filter((r) => r.code !== 0).map((r) => r.code),
			[],
			'no 40901 (busy) from the service',
		);
		// Each create holds the domain-port for 150 ms at the service: consecutive creates start at least that far apart.
		const times = creates.map((r) => r.time).sort((a, b) => a - b);
		for (let i = 1; i < times.length; i++)
			assert.ok(
				times[i] - times[i - 1] >= 140,
				`create ${i} started ${times[i] - times[i - 1]} ms after the previous one`,
			);
		await waitFor('lease released', async () => (await holds(env.client, ids.site_id)).length === 0);
	} finally {
		for (const w of workers) w.kill('SIGTERM');
		await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(null) : w.once('exit', r)))));
		await s.close();
	}
});

test('the coordinator refuses a malformed claim with the field named, and answers "what do you hold"', async () => {
	const t = await setup();
	try {
		await assert.rejects(
			claim(
				env.client,
				{ site_id: t.ids.site_id, owner: 'x', keys: 'detection.mode' as unknown as string[], mode: 'lease' },
				t.queue,
			),
			/keys: must be a list/,
		);
		const r = await claim(
			env.client,
			{
				site_id: t.ids.site_id,
				owner: 'owner-a',
				keys: ['detection.mode'],
				mode: 'lease',
				ttlSeconds: 60,
				reason: 'a',
			},
			t.queue,
		);
		assert.deepEqual(r.granted, ['detection.mode']);
		const refused = await claim(
			env.client,
			{ site_id: t.ids.site_id, owner: 'owner-b', keys: ['detection.mode', 'x/ipAuth'], mode: 'lease', reason: 'b' },
			t.queue,
		);
		assert.deepEqual(refused.granted, ['x/ipAuth']);
		assert.deepEqual(
			refused.held.map((h) => [h.key, h.owner, h.reason]),
			[['detection.mode', 'owner-a', 'a']],
		);
		const q = await env.client.workflow.getHandle(coordinatorIdFor(t.ids.site_id)).query(holdsQuery);
		assert.deepEqual(q.map((h) => h.key).sort(), ['detection.mode', 'x/ipAuth']);
		await release(env.client, t.ids.site_id, 'owner-a');
		await release(env.client, t.ids.site_id, 'owner-b');
		await waitFor(
			'coordinator completes when idle',
			async () =>
				(await env.client.workflow.getHandle(coordinatorIdFor(t.ids.site_id)).describe()).status.name === 'COMPLETED',
		);
	} finally {
		await t.close();
	}
});
