/**
 * A runbook cancelled while something acting in its name is still in flight (session 21's open seam: "a runbook that
 * fails still reverts what it wrote, and only what it wrote"; nothing may be left stuck), on a real dev server +
 * in-process worker + simulator:
 *  - its settings' hold waits at the coordinator for another owner's lease: cancelled meanwhile, the runbook releases
 *    and ends, and the lease's end must not grant its ask still waiting there (the hold would stay in a dead
 *    runbook's name for hours: its ttl);
 *  - a re-arm's held write (`runbook.writeStepsHeld`) has its POSTs in flight: what they add after the cancel must be
 *    reverted too, nothing held in its name afterwards, and the entries free for the next owner;
 *  - the same for a first plan's blacklist write (`runbook.writeSteps`, its entries held before it) and a wave's
 *    (`applicationProtection.ipBlacklist.add`, one activity per entry).
 * Before attackResponse/ownership.mts IN_FLIGHT_ENDS_FIRST_PATCH the runbook went on at once (TRY_CANCEL): the first
 * left 3 holds in its name, the others their entries on the site.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { claim, holds, release } from '../../workflows/coordinator/client.mts';
import { settingKey } from '../../workflows/coordinator/coordination.mts';
import { entryKey } from '../../workflows/attackResponse/ownership.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { runbookSinks } from '../../worker/src/process/runbookMetrics.mts';
import { env, listedRanges, liveSettings, plan, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const ip = (n: number) => `203.0.113.${n}`;
type Handle = Awaited<ReturnType<typeof startAttackResponse>>;

/** Cancels the runbook and waits for its end (a cancelled run: its failure); the holds left in its name after. */
async function cancelled(h: Handle, site: string) {
	const t0 = Date.now();
	await h.cancel();
	await assert.rejects(h.result(), (e) => e instanceof WorkflowFailedError);
	console.log(`${h.workflowId}: cancel → closed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	return (await holds(env.client, site)).filter((x) => x.owner === h.workflowId);
}

const pendingActivity = async (h: Handle, name: string) =>
	((await h.describe()).raw.pendingActivities ?? []).some((a) => a.activityType?.name === name);

type World = Awaited<ReturnType<typeof siteWorld>>;
/** The next two blacklist POSTs held 3 s at the service. */
const delayPosts = (w: World) =>
	w.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'delay', delayMs: 3000, count: 2 });

/**
 * Waits until a blacklist POST held by `delayPosts` is in flight (after `seq`), cancels the runbook and asserts nothing
 * held in its name and, once the delayed POSTs are past, the site exactly as `before`.
 */
async function cancelMidPost(w: World, h: Handle, before: unknown, seq: number, what: string, timeoutMs: number) {
	const posts = () =>
		w.s.sim.requests({ op: 'applicationProtection.ipBlacklist.add', since: seq }).filter((q) => q.method === 'POST');
	await waitFor(what, async () => posts().length > 0, timeoutMs, 20);
	assert.deepEqual(await cancelled(h, w.ids.site_id), [], 'nothing held in its name once it ended');
	await new Promise((r) => setTimeout(r, 3500)); // past the delayed POSTs
	assert.deepEqual(await liveSettings(w.op, w.ids), before, 'the site exactly as before');
}

test("cancelled while its settings' hold waits for another owner's lease: the lease's end grants nothing to the dead runbook", async () => {
	const { s, ids, queue, close } = await siteWorld(48, 'cancel-hold-wait');
	const drift = 'drift-test-lease';
	const leased = settingKey.detectionItem('tcp_syn');
	try {
		const lease = { site_id: ids.site_id, owner: drift, keys: [leased], mode: 'lease' as const, ttlSeconds: 120 };
		assert.deepEqual((await claim(env.client, { ...lease, reason: 'drift enforce' }, queue)).granted, [leased]);
		const a = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }] });
		const h = await startAttackResponse(env.client, queue, plan(ids, { ipAuth: undefined, switches: [] }));
		// The hold beside the snapshot answered `waiting`: it is asked again as a regular activity that waits.
		await waitFor('the hold waits', () => pendingActivity(h, 'coordination.claim'), 20_000, 50);
		const left = await cancelled(h, ids.site_id);
		assert.deepEqual(left, [], 'nothing held in its name once it ended');
		// The lease's owner lets go (its write done): no ask of the dead runbook may still be waiting to take the keys.
		await release(env.client, ids.site_id, drift);
		await new Promise((r) => setTimeout(r, 1000));
		const after = (await holds(env.client, ids.site_id)).map((x) => `${x.owner} ${x.key}`);
		assert.deepEqual(after, [], 'nothing held after the lease ended');
		s.sim.stopAttack(a.id);
	} finally {
		await release(env.client, ids.site_id, drift).catch(() => undefined);
		await close();
	}
});

test("a re-arm cancelled with its held write's POSTs in flight: what they add is reverted, nothing held, the entries free", async () => {
	const world = await siteWorld(49, 'cancel-held-write');
	const { s, ids, queue, op, close } = world;
	const base = { ...plan(ids, { cooldownSeconds: 1, ipAuth: undefined, switches: [] }), holdDown: { seconds: 600 } };
	const keys = [10, 20, 30].map((n) => entryKey(ids.domain_port_id, ip(n)));
	try {
		const before = listedRanges(await liveSettings(op, ids));
		const a1 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(20) }] });
		const h1 = await startAttackResponse(env.client, queue, base);
		await waitFor('run 1 waiting', async () => (await h1.query(stateQuery)).phase === 'waiting', 20_000);
		s.sim.stopAttack(a1.id);
		assert.equal(((await h1.result()) as AttackResponseResult).outcome, 'reverted');

		// The return: its write (pre-blocked .10, .20 and the new .30) holds the entries, then POSTs them, slowly.
		const seq = s.sim.requests().at(-1)?.seq ?? 0;
		s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'delay', delayMs: 3000, count: 3 });
		s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(30) }] });
		const h2 = await startAttackResponse(env.client, queue, base);
		const posts = () =>
			s.sim.requests({ op: 'applicationProtection.ipBlacklist.add', since: seq }).filter((q) => q.method === 'POST');
		await waitFor('a POST in flight', async () => posts().length > 0, 20_000, 20);
		assert.ok(await pendingActivity(h2, 'runbook.writeStepsHeld'), 'the held write is in flight');
		const left = await cancelled(h2, ids.site_id);
		assert.deepEqual(left, [], 'nothing held in its name once it ended');
		await new Promise((r) => setTimeout(r, 3500)); // past the delayed POSTs
		assert.deepEqual(
			listedRanges(await liveSettings(op, ids)),
			before,
			'the site exactly as before: nothing of the cancelled runbook left, nothing of anyone else removed',
		);
		const next = { site_id: ids.site_id, owner: 'runbook-next', keys, mode: 'hold' as const, reason: 'next' };
		assert.deepEqual((await claim(env.client, next, queue)).granted, keys, 'the next owner takes the entries');
		await release(env.client, ids.site_id, 'runbook-next');
	} finally {
		await close();
	}
});

test('a first plan cancelled with its blacklist POSTs in flight: the site exactly as before, nothing held', async () => {
	const w = await siteWorld(50, 'cancel-first-write');
	const { s, ids, queue, op, close } = w;
	try {
		const before = await liveSettings(op, ids);
		const seq = s.sim.requests().at(-1)?.seq ?? 0;
		delayPosts(w);
		s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(10) }, { ip: ip(20) }] });
		const h = await startAttackResponse(env.client, queue, plan(ids, { ipAuth: undefined, switches: [] }));
		await cancelMidPost(w, h, before, seq, 'a POST in flight', 20_000);
	} finally {
		await close();
	}
});

test("a wave's write cancelled with its POSTs in flight: the site exactly as before, nothing held", async () => {
	const w = await siteWorld(51, 'cancel-wave-write');
	const { s, ids, queue, op, close } = w;
	try {
		const before = await liveSettings(op, ids);
		s.sim.startAttack({
			site_id: ids.site_id,
			duration: 0,
			sources: [{ ip: ip(10) }],
			waves: [{ at: 6, sources: [{ ip: ip(30) }, { ip: ip(40) }] }],
		});
		const h = await startAttackResponse(env.client, queue, plan(ids, { ipAuth: undefined, switches: [] }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 20_000);
		const seq = s.sim.requests().at(-1)?.seq ?? 0;
		delayPosts(w);
		await cancelMidPost(w, h, before, seq, 'a wave POST in flight', 30_000);
	} finally {
		await close();
	}
});

test('a re-arm cancelled with its held write in flight, recorded before the patch, replays under the current code', async () => {
	// fixtures/attack-response-cancelled-run.json: the second test's run 2 recorded on 3201a7c (TRY_CANCEL): the write
	// scheduled, the cancel, the revert's reads and the release, the run closed — the write never answered in history.
	const json = JSON.parse(
		readFileSync(new URL('./fixtures/attack-response-cancelled-run.json', import.meta.url), 'utf8'),
	);
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	const shape = (history.events ?? []).flatMap((e) => {
		const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
		if (name === 'runbook.writeStepsHeld' || name === 'coordination.release') return [name];
		return e.activityTaskCancelRequestedEventAttributes ? ['cancel requested'] : [];
	});
	assert.deepEqual(shape, ['runbook.writeStepsHeld', 'cancel requested', 'coordination.release']);
	await Worker.runReplayHistory(
		{ workflowBundle: await workflowBundle(), sinks: runbookSinks(undefined) },
		history,
		'attack-response-cancelled-run',
	);
});
