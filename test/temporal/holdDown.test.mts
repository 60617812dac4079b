/**
 * Issue 39 item 2, hold-down re-arm and stop conditions, on a real dev server + in-process worker + simulator: a
 * runbook started within the hold-down after the site's last revert pre-blocks the last run's sources with its own,
 * lengthens its cooldown (×2 per return, cap ×4), skips the approval gate only when plan.holdDown.approval says
 * `skip` (the default keeps it); outside the hold-down it starts from nothing; `stopWhen: manual` holds the mitigation
 * after the attack ended until a person aborts. A re-arm's entries are held by its write activity beside their reads:
 * one someone else holds is never written; under another owner's lease none is sent until the lease ends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { abort, decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { claim, holds, release } from '../../workflows/coordinator/client.mts';
import { entryKey } from '../../workflows/attackResponse/ownership.mts';
import { env, listedRanges, liveSettings, plan, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const listed = listedRanges;
const one = (ip: string) => `${ip}-${ip}`;
const ip = (n: number) => `203.0.113.${n}`;

type World = Awaited<ReturnType<typeof siteWorld>>;
type Plan = Parameters<typeof startAttackResponse>[2];

/** The first wave (.10 and .20) and its runbook, waited out and reverted; its handle. */
async function firstRunReverted({ s, ids, queue }: World, base: Plan) {
	const a1 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(20) }] });
	const h1 = await startAttackResponse(env.client, queue, base);
	await waitFor('run 1 waiting', async () => (await h1.query(stateQuery)).phase === 'waiting', 20_000);
	s.sim.stopAttack(a1.id);
	const r1 = (await h1.result()) as AttackResponseResult;
	assert.equal(r1.outcome, 'reverted');
	return { h1, r1 };
}

test('a return within the hold-down re-arms from the last run; the gate by policy; stopWhen manual holds until a person ends it', async () => {
	const world = await siteWorld(44, 'holddown');
	const { s, ids, queue, op, close } = world;
	const base = { ...plan(ids, { cooldownSeconds: 2, ipAuth: undefined, switches: [] }) };
	try {
		const before = listed(await liveSettings(op, ids));
		// First wave: .10 and .20, a first runbook, reverted.
		const { r1 } = await firstRunReverted(world, base);
		assert.deepEqual(listed(await liveSettings(op, ids)), before);

		// They come back, now from .30 only, with approval required and a policy that skips it inside the hold-down.
		const a2 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(30) }] });
		const h2 = await startAttackResponse(env.client, queue, {
			...base,
			approval: { required: true, timeoutSeconds: 600 },
			holdDown: { seconds: 600, approval: 'skip' },
		});
		await waitFor('run 2 waiting, no gate', async () => (await h2.query(stateQuery)).phase === 'waiting', 20_000);
		const st2 = await h2.query(stateQuery);
		assert.equal(st2.decision, 'not-required');
		assert.deepEqual([st2.rearm?.returns, st2.rearm?.preBlocked, st2.rearm?.extraCooldownSeconds], [1, 2, 2]);
		assert.equal(st2.extraCooldownSeconds, 2, 'cooldown 2 s × 2');
		assert.deepEqual(listed(await liveSettings(op, ids)), [...before, one(ip(10)), one(ip(20)), one(ip(30))].sort());
		s.sim.stopAttack(a2.id);
		const r2 = (await h2.result()) as AttackResponseResult;
		assert.equal(r2.outcome, 'reverted');
		assert.deepEqual(listed(await liveSettings(op, ids)), before, 'the pre-blocked entries are owned and reverted too');
		console.log(`time to mitigate: first ${r1.timeToMitigateSeconds}s, return ${r2.timeToMitigateSeconds}s`);

		// A second return, default policy: the gate stays; cooldown ×4 (cap); stopWhen manual holds after the attack.
		const a3 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(40) }] });
		const h3 = await startAttackResponse(env.client, queue, {
			...base,
			approval: { required: true, timeoutSeconds: 600 },
			stopWhen: 'manual',
		});
		await waitFor('run 3 at the gate', async () => (await h3.query(stateQuery)).phase === 'awaiting-approval', 20_000);
		assert.deepEqual(
			[(await h3.query(stateQuery)).rearm?.returns, (await h3.query(stateQuery)).extraCooldownSeconds],
			[2, 6],
		);
		await decide(env.client, h3.workflowId, { approved: true, by: 'alice', via: 'api' });
		await waitFor('run 3 waiting', async () => (await h3.query(stateQuery)).phase === 'waiting', 20_000);
		s.sim.stopAttack(a3.id);
		await waitFor('the attack seen over', async () => (await h3.query(stateQuery)).attackEndedAt !== undefined, 20_000);
		await new Promise((res) => setTimeout(res, 9000)); // past the cooldown (2 s + 6 s extra)
		assert.equal((await h3.query(stateQuery)).phase, 'waiting', 'manual: held past the cooldown');
		await abort(env.client, h3.workflowId, 'alice', 'done');
		const r3 = (await h3.result()) as AttackResponseResult;
		assert.equal(r3.outcome, 'aborted-reverted');
		assert.deepEqual(listed(await liveSettings(op, ids)), before);
		assert.ok(
			r3.audit.some((e) => /^re-armed: return 2 within the hold-down/.test(e.what)),
			'in the timeline',
		);

		// Outside the hold-down (a 1 s window, 2.5 s after the revert): from nothing.
		await new Promise((res) => setTimeout(res, 2500));
		const a4 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(50) }] });
		const h4 = await startAttackResponse(env.client, queue, { ...base, holdDown: { seconds: 1 } });
		await waitFor('run 4 waiting', async () => (await h4.query(stateQuery)).phase === 'waiting', 20_000);
		assert.equal((await h4.query(stateQuery)).rearm, undefined);
		s.sim.stopAttack(a4.id);
		await h4.result();
	} finally {
		await close();
	}
});

test("a re-arm's entries are held by its write: one someone else holds is never written; under a lease they wait, then are written", async () => {
	const world = await siteWorld(47, 'holddown-held');
	const { s, ids, queue, op, close } = world;
	const base = { ...plan(ids, { cooldownSeconds: 1, ipAuth: undefined, switches: [] }), holdDown: { seconds: 600 } };
	const other = 'owner-test-hold';
	const key = (n: number) => entryKey(ids.domain_port_id, ip(n));
	try {
		const before = listed(await liveSettings(op, ids));
		const { h1 } = await firstRunReverted(world, base);
		const run1 = (await h1.describe()).runId; // the site's workflow id: its latest run is run 2 once started

		// Before the return: someone else holds .20 (the return pre-blocks it) and leases .30 (its new source) for 4 s.
		const hold = { site_id: ids.site_id, owner: other, keys: [key(20)], mode: 'hold' as const, reason: 'test hold' };
		assert.deepEqual((await claim(env.client, { ...hold, ttlSeconds: 600 }, queue)).granted, [key(20)]);
		const lease = { ...hold, owner: `${other}-lease`, keys: [key(30)], mode: 'lease' as const, ttlSeconds: 4 };
		assert.deepEqual((await claim(env.client, lease, queue)).granted, [key(30)]);
		const a2 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(30) }] });
		const h2 = await startAttackResponse(env.client, queue, base);
		await waitFor('run 2 waiting', async () => (await h2.query(stateQuery)).phase === 'waiting', 20_000);
		// (The file's first test ran on the same site: its last run may be re-armed from too; only ours are asserted.)
		assert.equal((await h2.query(stateQuery)).rearm?.from, run1, 'a re-arm of run 1');
		const live = listed(await liveSettings(op, ids));
		assert.deepEqual(
			[10, 20, 30].map((n) => live.includes(one(ip(n)))),
			[true, false, true],
			live.join(', '),
		);
		const owners = new Map((await holds(env.client, ids.site_id)).map((x) => [x.key, x.owner]));
		assert.deepEqual(
			[10, 20, 30].map((n) => owners.get(key(n))),
			[h2.workflowId, other, h2.workflowId],
		);
		// The write that held its entries sent none (the lease: `waiting`); they were held, then written in a second.
		const writes = ((await h2.fetchHistory()).events ?? [])
			.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? '')
			.filter((n) => n.startsWith('runbook.writeSteps') || n === 'coordination.claim');
		assert.deepEqual(writes, ['runbook.writeStepsHeld', 'coordination.claim', 'runbook.writeSteps']);
		s.sim.stopAttack(a2.id);
		const r2 = (await h2.result()) as AttackResponseResult;
		assert.equal(r2.outcome, 'reverted');
		assert.deepEqual(
			r2.heldByOthers.map((x) => [x.key, x.owner]),
			[[key(20), other]],
		);
		assert.deepEqual(listed(await liveSettings(op, ids)), before, 'reverted exactly; .20 never written');
	} finally {
		await release(env.client, ids.site_id, other).catch(() => undefined);
		await close();
	}
});
