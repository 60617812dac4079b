/**
 * Issue 37 item 1, interleave seed 19 made deterministic (real dev server, in-process worker, simulator faults): a
 * write whose outcome the runbook cannot know is never reverted — it may be someone else's.
 *  - the seed's own path: the runbook's POST of a blacklist entry is lost (the service holds it and never answers; the
 *    write activity had recorded "not listed" before it sent), a person adds the same entry in the same notation
 *    meanwhile; the retry finds it listed. Before, the retry took it as its own write and the revert DELETEd the
 *    person's entry. Same for a setting (the switch the person set while our write hung);
 *  - a planned entry whose write never answered (the service refused it; the run fails) that someone adds before
 *    the revert: before, "an entry whose write never answered counts as ours" and the revert DELETEd it.
 * Both are now `written.unknown`, left as they are and reported ("outcome unknown, left as it is: …").
 *  - the same seam for an expiring block (issue 37 item 3): its add's POST is lost, a person (n8n) adds the same entry
 *    before the retry. Before, the retry claimed it (`byEarlierAttempt`) and the block's expiry DELETEd it; now the
 *    block ends `unknown` at once and its expiry removes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApplicationFailure } from '@temporalio/common';
import type { AttackResponseResult, Change } from '../../api/runbook/contract.ts';
import { blocksShardId } from '../../api/blockShards.ts';
import { consoleCall } from '../../simulator/console.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { addBlock, listBlocks } from '../../workflows/blocks/client.mts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import {
	env,
	liveSettings,
	operatorClient,
	plan,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	waitFor,
	type Ids,
	useDevServer,
} from './helpers.mts';

useDevServer();

const SOURCE = '203.0.113.10';
/** The notation the runbook POSTs (and the n8n node): the ambiguity of seed 19 — nothing tells the two adds apart. */
const ENTRY = `${SOURCE}-${SOURCE}`;

async function setup(seed: number) {
	const s = await startSim(seed);
	const ids: Ids = s.sim.firstIds();
	const queue = uniqueQueue('exact-unknown');
	const worker = await startInProcessWorker(env, s.url, queue);
	const op = operatorClient(s.url);
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const site = `/site/${ids.site_id}/`;
	/** The vendor's console (a person; the simulator logs it as `console`, never faulted). */
	const person = async (opId: string, params: Record<string, unknown>) => {
		const r = await consoleCall(s.sim, { op: opId, params: { ...dp, ...params } });
		assert.equal(r.code, 0, `console ${opId}: ${r.msg}`);
	};
	/** The first request of `opId` on the site that met an injected fault of `kind`. */
	const faulted = (opId: string, kind: string) =>
		waitFor(
			`${opId} ${kind}`,
			async () => s.sim.requests({ op: opId }).some((r) => r.fault === kind && r.path.includes(site)),
			60_000,
			10,
		);
	const attack = () => s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: SOURCE }] }).id;
	const start = () =>
		startAttackResponse(
			env.client,
			queue,
			plan(ids, {
				approval: { required: false, timeoutSeconds: 60, onTimeout: 'reject', approvers: [] },
				cooldownSeconds: 1,
			}),
		);
	const close = async () => (await worker.shutdown(), await op.close(), await s.close());
	return { s, ids, queue, op, dp, site, person, faulted, attack, start, close };
}

type Setup = Awaited<ReturnType<typeof setup>>;
const change = (r: AttackResponseResult, kind: Change['kind']) => r.changes.find((c) => c.kind === kind) as Change;
const listed = async (t: Setup) =>
	((await liveSettings(t.op, t.ids)).blacklist as { start_ip: string; end_ip: string }[]).map(
		(e) => `${e.start_ip}-${e.end_ip}`,
	);
/** The runbook's (the app token's) requests of `opId` on the site that the service carried out. */
const runbookDid = (t: Setup, opId: string) =>
	t.s.sim.requests({ op: opId }).filter((r) => r.caller === 'app' && r.code === 0 && r.path.includes(t.site));

test("seed 19: a retry after a lost write finds a person's entry (and value) there: outcome unknown, never reverted", async () => {
	const t = await setup(19);
	try {
		// The runbook's first blacklist POST and both sends of its switch write (the client repeats an idempotent
		// write once) are held by the service and never answered: nothing of them is applied.
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'hang', count: 1, pathContains: t.site });
		t.s.sim.addFault({ op: 'applicationProtection.switch.set', kind: 'hang', count: 2, pathContains: t.site });
		const attack = t.attack();
		const h = await t.start();
		await t.faulted('applicationProtection.ipBlacklist.add', 'hang');
		await t.person('applicationProtection.ipBlacklist.add', { ip_black_list: ENTRY });
		await t.faulted('applicationProtection.switch.set', 'hang');
		await t.person('applicationProtection.switch.set', { name: 'p_auth', enable: 1 });
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);
		t.s.sim.stopAttack(attack);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');

		assert.deepEqual(runbookDid(t, 'applicationProtection.ipBlacklist.add'), [], 'the runbook added nothing');
		assert.deepEqual(runbookDid(t, 'applicationProtection.ipBlacklist.remove'), [], "no DELETE of the person's entry");
		assert.ok((await listed(t)).includes(ENTRY), "the person's entry stays");
		const bl = change(r, 'blacklistAdd');
		assert.deepEqual([bl.status, bl.written], ['unchanged', { wrote: [], notOurs: [], unknown: bl.after }]);
		assert.match(bl.note ?? '', /^outcome unknown, left as it is: 203\.0\.113\.10/);

		assert.deepEqual(runbookDid(t, 'applicationProtection.switch.set'), [], 'the runbook never set the switch');
		const sw = (await liveSettings(t.op, t.ids)).switches as Record<string, { enable: number }>;
		assert.equal(sw.p_auth.enable, 1, "the person's value stays");
		const swC = change(r, 'switch');
		assert.deepEqual([swC.status, swC.written], ['unchanged', { unknown: 1 }]);
		assert.match(swC.note ?? '', /outcome unknown, left as it is: 1/);
	} finally {
		await t.close();
	}
});

test("an entry whose write never answered is not the runbook's: added by a person before the revert, it stays", async () => {
	const t = await setup(20);
	try {
		// The service refuses the runbook's blacklist POST (not retried, nothing applied): the write fails for good, so
		// does the run.
		t.s.sim.addFault({
			op: 'applicationProtection.ipBlacklist.add',
			kind: 'code',
			code: 40401,
			count: 1,
			pathContains: t.site,
		});
		t.attack();
		const h = await t.start();
		await t.faulted('applicationProtection.ipBlacklist.add', 'code');
		// The revert's read of the list waits 1.5 s: the person's add lands before it, whatever the load.
		t.s.sim.addFault({
			op: 'applicationProtection.ipBlacklist.get',
			kind: 'delay',
			delayMs: 1500,
			count: 1,
			pathContains: t.site,
		});
		await t.person('applicationProtection.ipBlacklist.add', { ip_black_list: ENTRY });
		const r = await h.result().then(
			() => assert.fail('the run fails: its blacklist write was refused'),
			(e) => (e.cause as ApplicationFailure).details?.[0] as AttackResponseResult,
		);
		assert.equal(r.outcome, 'failed-reverted');

		assert.deepEqual(runbookDid(t, 'applicationProtection.ipBlacklist.remove'), [], "no DELETE of the person's entry");
		assert.ok((await listed(t)).includes(ENTRY), "the person's entry stays");
		const bl = change(r, 'blacklistAdd');
		assert.deepEqual(bl.written?.unknown, bl.after);
		assert.match(bl.note ?? '', /outcome unknown, left as it is: 203\.0\.113\.10/);
	} finally {
		await t.close();
	}
});

test("an expiring block's retry finds a person's entry listed: outcome unknown, the block's expiry removes nothing", async () => {
	const t = await setup(21);
	try {
		// The block's POST is held by the service and never answered: the client times out, the activity is retried.
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.add', kind: 'hang', count: 1, pathContains: t.site });
		const req = { entry: SOURCE, seconds: 3, by: 'soc@example.com', reason: 'seam test', via: 'cli' as const };
		const added = addBlock(env.client, t.queue, t.ids.site_id, t.ids.domain_port_id, req);
		await t.faulted('applicationProtection.ipBlacklist.add', 'hang');
		// n8n adds the same entry, in the notation the block POSTs, before the retry (≥ the client's 4 s timeout later).
		await t.person('applicationProtection.ipBlacklist.add', { ip_black_list: ENTRY });
		const b = await added;
		// Past the expiry, and the blocks workflow has nothing left to do (with the old code: after its removal).
		const id = blocksShardId(t.ids.site_id, t.ids.domain_port_id, 0);
		await waitFor(
			'the blocks run completed',
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			60_000,
		);
		await waitFor('the expiry passed', async () => Date.now() > Date.parse(b.expiresAt) + 2000, 10_000);

		assert.deepEqual(runbookDid(t, 'applicationProtection.ipBlacklist.remove'), [], "no DELETE of the person's entry");
		assert.ok((await listed(t)).includes(ENTRY), "the person's entry stays");
		assert.equal(b.state, 'unknown', JSON.stringify(b));
		assert.match(b.note ?? '', /^outcome unknown, left as it is: 203\.0\.113\.10 /);
		const [shown] = await listBlocks(env.client, t.ids.site_id, t.ids.domain_port_id);
		assert.deepEqual([shown?.range, shown?.state], [SOURCE, 'unknown'], 'secsvc block list says outcome unknown');
	} finally {
		await t.close();
	}
});
