/**
 * Issue 37, exact revert at every seam, on a real dev server + in-process worker + simulator:
 *  - the repro: a runbook snapshots; a direct client write (the n8n flow) blacklists the attack's 8 sources and sets
 *    two settings before the runbook writes; the runbook sends nothing for what is already there, records "already
 *    present, not ours" (result, `secsvc timeline`, `secsvc inspect`, the HTML report), and its revert leaves the 8
 *    entries and the settings as the person set them (restoring, for the setting it did change, the value its write
 *    replaced, not the snapshot's);
 *  - after our write the person wins, per kind: a setting set back to the value we replaced, then forward again; a
 *    setting set to a third value; a blacklist entry removed and put back by hand — all kept at the revert;
 *  - an expiring block never removes an entry an operator put there by hand before the runbook's add, nor one put
 *    there before the block's own add when the block queued behind a runbook that found it present (the runbook
 *    releases that key instead of handing it over; the block checks it as a fresh add: "already present, not ours");
 *  - a runbook recorded before `exact-ownership` (fixtures/attack-response-run.json: the defect itself, recorded on
 *    e15f4f8) replays under the current code.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { AttackResponseResult, Change } from '../../api/runbook/contract.ts';
import { renderReportHtml } from '../../api/report/html.ts';
import { runbookReportModel } from '../../api/report/model.ts';
import { changesQuery, stateQuery } from '../../workflows/attackResponse/messages.mts';
import { decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { addBlock, listBlocks } from '../../workflows/blocks/client.mts';
import { holds } from '../../workflows/coordinator/client.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { runbookSinks } from '../../worker/src/process/runbookMetrics.mts';
import {
	ATTACK_SOURCES,
	env,
	liveSettings,
	plan,
	runCli,
	siteWorld,
	startSim,
	useDevServer,
	waitFor,
} from './helpers.mts';

useDevServer();

async function setup(seed: number) {
	const w = await siteWorld(seed, 'exact');
	const dp = { site_id: w.ids.site_id, domain_port_id: w.ids.domain_port_id };
	const det = { customer_id: w.ids.customer_id, site_id: w.ids.site_id, network_id: '0', host_id: '0' };
	return { ...w, dp, det };
}

/** The attack's 8 sources, apart enough that the runbook blocks each as its own entry. */
const EIGHT = [10, 20, 30, 40, 50, 60, 70, 80].map((n) => `203.0.113.${n}`);
/** A person's IP authentication: neither the snapshot's nor the plan's. */
const PERSON_AUTH = {
	action: 'ratelimit' as const,
	enable: 1,
	mode: 1,
	action_ratelimit: { duration: 60, ratelimit_rps: 500, threshold_rps: 1000 },
};
const PERSON_SYN = { is_enabled: 1 as const, low_pps: '33K', high_pps: '66K' };

const listedOf = (live: Awaited<ReturnType<typeof liveSettings>>) =>
	(live.blacklist as { start_ip: string; end_ip: string }[]).map((e) => `${e.start_ip}-${e.end_ip}`).sort();
const single = (ip: string) => `${ip}-${ip}`;
const change = (r: AttackResponseResult, kind: Change['kind']) => r.changes.find((c) => c.kind === kind) as Change;
const comparable = (v: unknown) => JSON.parse(JSON.stringify(v));
type Sim = Awaited<ReturnType<typeof startSim>>;
const writesSince = (s: Sim, seq: number) =>
	s.sim.requests({ since: seq }).filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));
const lastSeq = (s: Sim) => s.sim.requests().at(-1)?.seq ?? 0;

test('the repro: writes between the snapshot and the runbook\'s are not its own; its revert leaves them and says "already present, not ours"', async () => {
	const t = await setup(37);
	try {
		const snap = await liveSettings(t.op, t.ids);
		assert.equal((snap.switches as Record<string, { enable: number }>).p_auth.enable, 0);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: EIGHT.map((ip) => ({ ip })) });
		const h = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, { cooldownSeconds: 1, approval: { required: true, timeoutSeconds: 600 } }),
		);
		await waitFor('the gate', async () => (await h.query(stateQuery)).phase === 'awaiting-approval');

		// The n8n flow (direct client writes, never through Temporal), after the runbook's snapshot.
		for (const ip of EIGHT) await t.op.call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: ip });
		await t.op.call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 1 });
		await t.op.call('applicationProtection.authIp.set', { ...t.dp, ...PERSON_AUTH });
		const seq = lastSeq(t.s);
		await decide(env.client, h.workflowId, { approved: true, by: 'alice', via: 'api' });
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting');
		const ours = writesSince(t.s, seq).map((r) => r.opId);
		assert.ok(!ours.includes('applicationProtection.ipBlacklist.add'), `no blacklist POST: ${ours}`);
		assert.ok(!ours.includes('applicationProtection.switch.set'), `no switch write: ${ours}`);
		assert.ok(ours.includes('applicationProtection.authIp.set'), 'IP authentication written (it was not the target)');

		// After our write, a person sets tcp_syn their way: theirs (a conflict with both values).
		await t.op.call('detection.setPolicy', { ...t.det, name: 'tcp_syn', type: 'tcp', ...PERSON_SYN });
		await waitFor('the conflict seen', async () => (await h.query(stateQuery)).conflicts >= 1, 20_000);
		const revertFrom = lastSeq(t.s);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');

		const live = await liveSettings(t.op, t.ids);
		assert.deepEqual(listedOf(live), EIGHT.map(single).sort(), 'all 8 entries stay');
		assert.ok(
			!writesSince(t.s, revertFrom).some((w) => w.opId === 'applicationProtection.ipBlacklist.remove'),
			'no DELETE',
		);
		assert.equal((live.switches as Record<string, { enable: number }>).p_auth.enable, 1, 'switch as the person set it');
		assert.deepEqual(comparable(live.ipAuth), PERSON_AUTH, 'restored what our write replaced, not the snapshot');
		const syn = live.tcp_syn as Record<string, unknown>;
		assert.deepEqual([syn.low_pps, syn.high_pps], [PERSON_SYN.low_pps, PERSON_SYN.high_pps], 'theirs kept');
		assert.equal(Number(live.model), Number(snap.model), 'rapid mode (ours) restored');
		assert.deepEqual(comparable(live.total_traffic), comparable(snap.total_traffic), 'total_traffic (ours) restored');

		const bl = change(r, 'blacklistAdd');
		assert.equal(bl.status, 'unchanged');
		assert.deepEqual(bl.written, { wrote: [], notOurs: bl.after });
		assert.equal((bl.after as string[]).length, 8);
		assert.match(bl.note ?? '', /^already present, not ours: 203\.0\.113\.10/);
		const sw = change(r, 'switch');
		assert.deepEqual([sw.status, sw.written], ['unchanged', { notOurs: 1 }]);
		const auth = change(r, 'ipAuth');
		assert.equal(auth.status, 'restored');
		assert.deepEqual(comparable(auth.written?.replaced), PERSON_AUTH);
		const synC = r.changes.find((c) => c.id === 'detection.policy.tcp_syn') as Change;
		assert.equal(synC.status, 'conflict');
		assert.match(synC.note ?? '', /ours \{.*"low_pps".*\}, theirs \{.*"low_pps":"33K".*\} \(kept\)/);

		// What operators see: the timeline, `secsvc inspect` and the HTML report.
		const tl = await runCli(env, ['timeline', h.workflowId], t.queue);
		assert.match(tl.out, /IP blacklist of \d+ \(not ours: nothing sent\) — already present, not ours: 203\.0\.113\.10/);
		assert.match(tl.out, /switch p_auth of \d+ \(not ours: nothing sent\) — already present, not ours: 1/);
		const ins = await runCli(env, ['inspect', h.workflowId], t.queue);
		assert.match(ins.out, /already present, not ours: 203\.0\.113\.10/);
		const html = renderReportHtml(runbookReportModel(r, new Date().toISOString()));
		assert.match(html, /already present, not ours: 203\.0\.113\.10/);
		assert.doesNotMatch(html, /<li class="mono">203\.0\.113\.10/, 'not listed as blacklisted by the runbook');
	} finally {
		await t.close();
	}
});

test('after our write the person wins, per kind: set back then forward, a third value, an entry removed and put back', async () => {
	const t = await setup(38);
	try {
		const snap = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids, { cooldownSeconds: 1 }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting');
		const during = await liveSettings(t.op, t.ids);
		const entries = listedOf(during);
		assert.equal(entries.length, 3);
		const [e1] = entries;
		const conflicts = async (n: number) =>
			waitFor(`${n} conflicts seen`, async () => (await h.query(stateQuery)).conflicts >= n, 20_000);

		// Set back to the value our write replaced (the runbook yields: it does not write again), then forward again.
		await t.op.call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 0 });
		await t.op.call('detection.setMode', { ...t.det, model: '0' });
		await conflicts(2);
		await t.op.call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 1 });
		// A third value.
		await t.op.call('applicationProtection.authIp.set', { ...t.dp, ...PERSON_AUTH });
		await t.op.call('detection.setPolicy', { ...t.det, name: 'tcp_syn', type: 'tcp', ...PERSON_SYN });
		await conflicts(4);
		// An entry of ours removed (seen at a poll), then put back by hand: theirs.
		await t.op.call('applicationProtection.ipBlacklist.remove', { ...t.dp, ip_black_list: [e1] });
		await waitFor('the removal seen', async () =>
			(await h.query(changesQuery)).some((c) => /removed by someone else after our write/.test(c.note ?? '')),
		);
		await t.op.call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: e1 });
		const seq = lastSeq(t.s);
		await new Promise((r) => setTimeout(r, 2500)); // polls see it back: still theirs, nothing written
		assert.deepEqual(
			writesSince(t.s, seq).map((w) => w.opId),
			[],
			'the runbook writes nothing over the person',
		);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		const live = await liveSettings(t.op, t.ids);
		assert.equal((live.switches as Record<string, { enable: number }>).p_auth.enable, 1, 'switch: their last write');
		assert.equal(Number(live.model), 0, 'mode: theirs');
		assert.deepEqual(comparable(live.ipAuth), PERSON_AUTH, 'IP authentication: theirs');
		const syn = live.tcp_syn as Record<string, unknown>;
		assert.deepEqual([syn.low_pps, syn.high_pps], [PERSON_SYN.low_pps, PERSON_SYN.high_pps], 'tcp_syn: theirs');
		assert.deepEqual(listedOf(live), [e1], 'the entry they put back stays; ours are removed');
		assert.deepEqual(comparable(live.total_traffic), comparable(snap.total_traffic), 'ours restored');
		const dels = writesSince(t.s, seq).filter((w) => w.opId === 'applicationProtection.ipBlacklist.remove');
		assert.equal(dels.length, 1);
		assert.ok(
			!JSON.stringify(dels[0].query).includes(e1.split('-')[0]),
			`the DELETE names ${e1}: ${JSON.stringify(dels[0].query)}`,
		);
		for (const k of ['switch', 'detectionMode', 'ipAuth'] as const) {
			const c = change(r, k);
			assert.equal(c.status, 'conflict', k);
			assert.match(c.note ?? '', /changed after our write: ours .*, theirs .* \(kept\)/, k);
		}
		const ip1 = e1.split('-')[0];
		assert.match(change(r, 'blacklistAdd').note ?? '', new RegExp(`removed by someone else after our write: ${ip1}`));
	} finally {
		await t.close();
	}
});

test('a blacklist change repeated after the API failed part-way still owns what its first try wrote: the revert removes it', async () => {
	const t = await setup(41);
	try {
		const snap = await liveSettings(t.op, t.ids);
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		// The first add is answered; every later one fails (503) for 45 s: the group's activity gives up after its
		// attempts (~35 s) and the runbook repeats the change (patience.mts) until the API answers again.
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'delay', delayMs: 1, count: 1 });
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'http5xx', forMs: 45_000 });
		const h = await startAttackResponse(env.client, t.queue, plan(t.ids, { cooldownSeconds: 1 }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 120_000, 500);
		const during = listedOf(await liveSettings(t.op, t.ids));
		assert.equal(during.length, 3);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const c = change(r, 'blacklistAdd');
		assert.ok(/API is not answering/.test(JSON.stringify(r.audit)), 'the change was repeated after the outage');
		assert.deepEqual(
			c.written?.notOurs,
			[],
			`none of its own entries taken for someone else's: ${JSON.stringify(c.written)}`,
		);
		assert.deepEqual(listedOf(await liveSettings(t.op, t.ids)), listedOf(snap), 'every entry it wrote is removed');
	} finally {
		await t.close();
	}
});

test("an expiring block never removes an entry an operator put there by hand before the runbook's add", async () => {
	const t = await setup(39);
	try {
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const p = plan(t.ids, {
			cooldownSeconds: 1,
			ipAuth: undefined,
			switches: [],
			detection: { rapidMode: false, thresholds: [] },
			approval: { required: true, timeoutSeconds: 600 },
		});
		const h = await startAttackResponse(env.client, t.queue, {
			...p,
			blacklist: { ...p.blacklist, expireAfterSeconds: 2 },
		});
		await waitFor('the gate', async () => (await h.query(stateQuery)).phase === 'awaiting-approval');
		const hand = '203.0.113.5-203.0.113.6';
		await t.op.call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: hand });
		await decide(env.client, h.workflowId, { approved: true, by: 'alice', via: 'api' });
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting');
		const blocks = await listBlocks(env.client, t.ids.site_id, t.ids.domain_port_id);
		assert.ok(blocks.length >= 1, 'our entries are registered as blocks');
		assert.ok(!blocks.some((b) => b.range === hand), `no block for the operator's entry: ${JSON.stringify(blocks)}`);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.match(change(r, 'blacklistAdd').note ?? '', /already present, not ours: 203\.0\.113\.5-203\.0\.113\.6/);
		await waitFor(
			'our entries removed by their blocks',
			async () => listedOf(await liveSettings(t.op, t.ids)).length === 1,
			20_000,
		);
		await new Promise((r) => setTimeout(r, 2500));
		assert.deepEqual(listedOf(await liveSettings(t.op, t.ids)), [hand], "the operator's entry stays");
		const dels = t.s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' });
		assert.ok(!dels.some((d) => JSON.stringify(d.query).includes('203.0.113.5')), 'never named by a DELETE');
	} finally {
		await t.close();
	}
});

test("an expiring block queued behind a runbook that found the entry there never removes the operator's entry", async () => {
	// A person blocks E by hand; the runbook holds E's key and its write finds E present (not ours); a block for E
	// queues behind the runbook meanwhile. The runbook's revert RELEASES the key (it hands over only what it wrote):
	// the block checks E as a fresh add does, finds it listed and written by no block, and leaves it.
	const t = await setup(40);
	try {
		const { site_id, domain_port_id: dp } = t.ids;
		const attack = t.s.sim.startAttack({ site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, {
				cooldownSeconds: 1,
				ipAuth: undefined,
				switches: [],
				detection: { rapidMode: false, thresholds: [] },
				approval: { required: true, timeoutSeconds: 600 },
			}),
		);
		await waitFor('the gate', async () => (await h.query(stateQuery)).phase === 'awaiting-approval');
		const hand = '203.0.113.5-203.0.113.6';
		await t.op.call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: hand });
		const q = await addBlock(env.client, t.queue, site_id, dp, {
			entry: hand,
			seconds: 2,
			by: 'bob@soc',
			reason: 'test',
			via: 'cli',
		});
		assert.equal(q.state, 'queued', 'the runbook holds the entry: the block queues');
		assert.match(q.note ?? '', new RegExp(`held by attack-response-${site_id}`));
		await decide(env.client, h.workflowId, { approved: true, by: 'alice', via: 'api' });
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting');
		const during = listedOf(await liveSettings(t.op, t.ids));
		assert.ok(during.includes(hand) && during.length > 1, `the runbook wrote its other entries: ${during}`);
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const bl = change(r, 'blacklistAdd');
		assert.match(bl.note ?? '', /already present, not ours: 203\.0\.113\.5-203\.0\.113\.6/);
		assert.doesNotMatch(bl.note ?? '', /handed over/, 'the runbook hands over only what it wrote');

		const ended = async () => (await listBlocks(env.client, site_id, dp)).find((b) => b.range === q.range);
		await waitFor('the block ended', async () => (await ended())?.state === 'taken-over', 20_000, 200);
		await new Promise((res) => setTimeout(res, 2500)); // well past the block's expiry
		assert.deepEqual(listedOf(await liveSettings(t.op, t.ids)), [hand], "ours removed, the operator's entry stays");
		const dels = t.s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' });
		assert.ok(dels.length >= 1, "the runbook's revert removed its own entries");
		assert.ok(!dels.some((d) => JSON.stringify([d.query, d.body]).includes('203.0.113.5')), 'E never named');
		const posts = t.s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((x) => x.method === 'POST');
		assert.equal(
			posts.filter((x) => JSON.stringify([x.query, x.body]).includes('203.0.113.5')).length,
			1,
			'only the hand',
		);
		assert.match((await ended())?.note ?? '', /^already present, not ours: 203\.0\.113\.5-203\.0\.113\.6 was on/);
		const list = await runCli(env, ['block', 'list', site_id, '--dp', dp], t.queue);
		assert.match(list.out, /203\.0\.113\.5-203\.0\.113\.6 .* taken-over .*\[already present, not ours: /);
		await waitFor('no holds left', async () => (await holds(env.client, site_id)).length === 0, 20_000, 200);
	} finally {
		await t.close();
	}
});

test('a runbook recorded before exact-ownership (the defect itself) replays under the current code (patched)', async () => {
	// fixtures/attack-response-run.json: recorded on e15f4f8 — snapshot, approval, 8 sources blacklisted by hand and
	// p_auth set by hand before the runbook's writes (it recorded them as its own and DELETEd them at its revert), rapid
	// mode set back by hand during the wait (re-applied). Without the patch gate the current code yields instead of
	// re-applying: "Nondeterminism error: Timer machine does not handle this event: ActivityTaskScheduled".
	const json = JSON.parse(readFileSync(new URL('./fixtures/attack-response-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	const scheduled = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
	assert.ok(scheduled.includes('applicationProtection.ipBlacklist.remove'), 'the recorded revert DELETEs');
	await Worker.runReplayHistory(
		{ workflowBundle: await workflowBundle(), sinks: runbookSinks(undefined) },
		history,
		'attack-response-run',
	);
});
