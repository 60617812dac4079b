/**
 * The worker runs as a child process and is SIGKILLed at several different steps of an attack response
 * (while tightening, while rate-limiting, while waiting, while reverting); a new worker process is started
 * each time. The runbook completes and every touched setting ends equal to the snapshot — but those whose write a
 * kill caught in flight: the retry finds the value at the target and cannot tell its own lost write from someone
 * else's (the service keeps no author per value; interleave seed 19), so they are outcome unknown, left as they are
 * and reported (docs/spec-decisions-runbooks.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	ATTACK_SOURCES,
	env,
	killChild,
	liveSettings,
	operatorClient,
	plan,
	spawnWorker,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';

useDevServer({ bundle: false });

test('worker SIGKILLed at four steps and restarted: the runbook completes and reverts', async () => {
	const s = await startSim(23);
	const ids = s.sim.firstIds();
	const op = operatorClient(s.url);
	const queue = uniqueQueue('kill');
	let child = spawnWorker(env, s.url, queue);
	const kills: string[] = [];
	try {
		const beforeSettings = await liveSettings(op, ids);
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		// Slow writes down so the kills land inside a step, not between runs of the test.
		s.sim.addFault({ op: 'detection.setPolicy', kind: 'delay', delayMs: 1500, count: 1 });
		s.sim.addFault({ op: 'applicationProtection.authIp.set', kind: 'delay', delayMs: 1500, count: 1 });
		const h = await startAttackResponse(env.client, queue, plan(ids, { cooldownSeconds: 3 }));
		const seen = (opId: string, n = 1) => s.sim.requests({ op: opId }).filter((r) => r.method !== 'GET').length >= n;
		const killAt = async (label: string, cond: () => boolean | Promise<boolean>) => {
			await waitFor(label, async () => cond(), 60_000, 50);
			await killChild(child);
			kills.push(label);
			child = spawnWorker(env, s.url, queue);
		};

		await killAt('tightening (detection.setPolicy in flight)', () => seen('detection.setPolicy'));
		await killAt('rate-limiting (authIp.set in flight)', () => seen('applicationProtection.authIp.set'));
		await killAt('waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		// IP authentication's write was caught in flight (outcome unknown: never restored): the mode's restore is.
		s.sim.addFault({ op: 'detection.setMode', kind: 'delay', delayMs: 1500, count: 1 });
		s.sim.stopAttack(attack.id);
		await killAt('reverting (setMode restore in flight)', () => seen('detection.setMode', 2));

		const r = (await h.result()) as AttackResponseResult;
		assert.equal(kills.length, 4);
		assert.equal(r.outcome, 'reverted');
		const unknown = r.changes.filter((c) => c.written?.unknown !== undefined);
		const kinds = new Set(unknown.map((c) => c.kind));
		assert.ok(kinds.has('detectionPolicy') && kinds.has('ipAuth'), `the writes caught in flight: ${[...kinds]}`);
		for (const c of unknown) assert.match(c.note ?? '', /outcome unknown, left as it is/, c.id);
		const live = await liveSettings(op, ids);
		const left: Record<string, keyof typeof live> = { detectionMode: 'model', ipAuth: 'ipAuth', switch: 'switches' };
		const keys = unknown.map((c) => left[c.kind] ?? (c.target.name as keyof typeof live));
		assert.ok(
			keys.every((k) => JSON.stringify(live[k]) !== JSON.stringify(beforeSettings[k])),
			'left at ours',
		);
		const expected = { ...beforeSettings, ...Object.fromEntries(keys.map((k) => [k, live[k]])) };
		assert.deepEqual(live, expected, 'every other touched setting equals the snapshot');
		const bl = s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((q) => q.method === 'POST');
		assert.equal(new Set(bl.map((q) => JSON.stringify(q.body))).size, bl.length, 'no entry added twice');
	} finally {
		await killChild(child);
		await op.close();
		await s.close();
	}
});
