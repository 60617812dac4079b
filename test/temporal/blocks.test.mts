/**
 * Expiring blocks on a real Temporal dev server against the simulator (workflows/blocks/blocks.mts):
 *  - bad input refused with the field named, nothing sent (bad CIDR, too wide, negative / absurd duration, unknown
 *    domain-port, a range already listed by someone else);
 *  - expiry removes exactly the entry (one POST, one DELETE per block), extend / shorten / remove now, an operator's
 *    removal is "taken over" (nothing written), API faults at the expiry are retried without a duplicate write;
 *  - the worker SIGKILLed while blocks are active: a new worker removes them at their expiry; SIGKILLed while its
 *    removal's DELETE is in flight: the next worker's removal records it removed (the lost attempt's), not taken over;
 *  - with the runbook, both directions: a block for an entry the runbook holds queues behind it, is not removed by
 *    the block's expiry while the runbook holds it, and the runbook's revert hands it over instead of removing it;
 *    plan blacklist.expireAfterSeconds: a runbook that dies for good leaves no permanent block;
 *  - bulk adds (one Update naming many blocks; `secsvc block add --file`): one POST per entry, the entries due together
 *    removed by one DELETE, every entry named once; a bad entry is named and nothing is sent;
 *  - a run recorded before `blocks-bulk-adds` (fixtures/blocks-batched-run.json: the batched code of 2026-11-23 13:00,
 *    four adds, an extend, removals, releases), one before `blocks-local-removals` (fixtures/blocks-bulk-run.json) and
 *    its site coordinator before `coordinator-timers` (fixtures/site-coordinator-run.json) replay under the current code,
 *    and so does a run of the local-removal code recorded before workflows/blocks was split by step
 *    (fixtures/blocks-local-run.json), and a queued block and its coordinator recorded before released keys were
 *    told apart from handed-over ones (fixtures/blocks-released-run.json, site-coordinator-released-run.json).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import type { Block } from '../../workflows/blocks/shared.mts';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
	addBlock,
	addBlocks,
	BlockRefused,
	extendBlock,
	listBlocks,
	removeBlock,
} from '../../workflows/blocks/client.mts';
import { holds, release } from '../../workflows/coordinator/client.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import {
	ATTACK_SOURCES,
	env,
	operatorClient,
	plan,
	spawnWorker,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	waitFor,
	type Ids,
	useDevServer,
} from './helpers.mts';
import { runCli as cliIn } from './helpers.mts';

useDevServer();

type Sim = Awaited<ReturnType<typeof startSim>>;
const listed = async (op: ReturnType<typeof operatorClient>, ids: Ids): Promise<string[]> => {
	const r = (await op.call('applicationProtection.ipBlacklist.get', {
		site_id: ids.site_id,
		domain_port_id: ids.domain_port_id,
	})) as {
		p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string; end_ip?: string }[] } };
	};
	return r.p_info.ipv4.black_soc.map((e) =>
		e.start_ip && e.end_ip && e.start_ip !== e.end_ip ? `${e.start_ip}-${e.end_ip}` : String(e.ip ?? e.start_ip),
	);
};
/** The entries the DELETEs named (the remove takes a comma-separated list: entries due together go in one). */
const named = (rs: { query: Record<string, unknown> }[]) =>
	rs.flatMap((r) =>
		String(r.query.ip_black_list ?? '')
			.split(',')
			.filter(Boolean),
	);
const writes = (s: Sim, method: 'POST' | 'DELETE') =>
	s.sim
		.requests({
			op: method === 'POST' ? 'applicationProtection.ipBlacklist.add' : 'applicationProtection.ipBlacklist.remove',
		})
		.filter((r) => r.method === method);
const block = (entry: string, seconds: number, over: Partial<Parameters<typeof addBlock>[4]> = {}) => ({
	entry,
	seconds,
	by: 'alice@soc',
	reason: 'test',
	via: 'cli' as const,
	...over,
});

/**
 * Workflow ids are per site and domain-port (every seed's first site is 20001), task queues per test: a run still
 * RUNNING when its test's worker stops stays bound to a queue nobody polls any more, and the next test's Update-with-
 * start attaches to it and waits forever (session 11's "bulk add" hang: the coordinator left by the test before it,
 * its next task moved from the gone worker's sticky queue to its normal queue, the claim timing out at every attempt).
 */
const runIds = (ids: Ids) => [`blocks-${ids.site_id}-${ids.domain_port_id}`, `site-${ids.site_id}`];
const statusOf = (id: string) =>
	env.client.workflow
		.getHandle(id)
		.describe()
		.then(
			(d) => d.status.name,
			(e: unknown) => {
				if (e instanceof WorkflowNotFoundError) return 'NOT_FOUND';
				throw e;
			},
		);
/** The test's blocks run and its site's coordinator have completed (they do once nothing is held). */
async function runsCompleted(ids: Ids, timeoutMs = 30_000): Promise<void> {
	for (const id of runIds(ids))
		await waitFor(`${id} completed`, async () => (await statusOf(id)) === 'COMPLETED', timeoutMs, 200);
}
/** Before a test's worker stops: its runs end by themselves, or (a failed test) are terminated, never left behind. */
async function leaveNothingRunning(ids: Ids): Promise<void> {
	const running = async () => (await Promise.all(runIds(ids).map(statusOf))).every((x) => x !== 'RUNNING');
	await waitFor('runs ended', running, 30_000, 200).catch(async () => {
		for (const id of runIds(ids))
			if ((await statusOf(id)) === 'RUNNING')
				await env.client.workflow.getHandle(id).terminate('left running by a test: its worker stops');
	});
}

async function setup(seed = 11) {
	const s = await startSim(seed);
	const ids: Ids = s.sim.firstIds();
	const queue = uniqueQueue('blocks');
	const worker = await startInProcessWorker(env, s.url, queue);
	const op = operatorClient(s.url);
	const close = async () => {
		await leaveNothingRunning(ids);
		await worker.shutdown();
		await op.close();
		await s.close();
	};
	return { s, ids, queue, op, close };
}

const step = (m: string) => process.env.DEBUG_BLOCKS && console.log('step', m, new Date().toISOString());
const refusal = async (p: Promise<unknown>, field: RegExp) => {
	const t0 = Date.now();
	if (process.env.DEBUG_BLOCKS) p.finally(() => console.log('refusal', field, Date.now() - t0)).catch(() => {});
	await assert.rejects(p, (e: Error) => {
		assert.match(e.message, field);
		return true;
	});
};

test('bad input is refused naming the field, and nothing is sent', async () => {
	const t = await setup();
	try {
		const { site_id, domain_port_id: dp } = t.ids;
		await refusal(
			addBlock(env.client, t.queue, site_id, dp, block('10.0.0.300', 60)),
			/^entry: .*must be an IPv4 address/,
		);
		await refusal(
			addBlock(env.client, t.queue, site_id, dp, block('10.0.0.0/8', 60)),
			/^entry: .*wider than the widest block allowed \(\/16/,
		);
		await refusal(addBlock(env.client, t.queue, site_id, dp, block('10.0.0.0/20', 60), 24), /^entry: .*\/24/);
		await refusal(addBlock(env.client, t.queue, site_id, dp, block('10.0.0.1', -5)), /^seconds: must be at least 1/);
		await refusal(addBlock(env.client, t.queue, site_id, dp, block('10.0.0.1', 10 ** 9)), /^seconds: must be at most/);
		await refusal(
			addBlock(env.client, t.queue, site_id, dp, block('10.0.0.1', 60, { reason: '' })),
			/^reason: is required/,
		);
		// The workflow's validator says the same when the client's own check is skipped (HTTP API, n8n node).
		const { addBlockUpdate } = await import('../../workflows/blocks/shared.mts');
		await assert.rejects(
			env.client.workflow.executeUpdateWithStart(addBlockUpdate, {
				args: [block('10.0.0.0/8', 60)],
				startWorkflowOperation: new (await import('@temporalio/client')).WithStartWorkflowOperation('blocks', {
					workflowId: `blocks-${site_id}-${dp}`,
					taskQueue: t.queue,
					args: [{ site_id, domain_port_id: dp }],
					workflowIdConflictPolicy: 'USE_EXISTING',
				}),
			}),
			(e: Error & { cause?: Error }) => /^entry: .*wider/.test(String(e.cause?.message)),
		);
		// Unknown domain-port: the list cannot be read; refused naming domain_port_id; nothing written.
		await refusal(
			addBlock(env.client, t.queue, site_id, 'no-such-dp', block('10.0.0.1', 60)),
			/domain_port_id: no-such-dp/,
		);
		// A range on the list that no block wrote stays the operator's.
		await t.op.call('applicationProtection.ipBlacklist.add', {
			site_id,
			domain_port_id: dp,
			ip_black_list: '192.0.2.9',
		});
		await refusal(
			addBlock(env.client, t.queue, site_id, dp, block('192.0.2.9/32', 60)),
			/^entry: 192\.0\.2\.9 is already on the blacklist/,
		);
		assert.equal(writes(t.s, 'POST').length, 1, "only the operator's add was sent");
		assert.equal(writes(t.s, 'DELETE').length, 0);
		await waitFor('refused blocks hold nothing', async () => (await holds(env.client, site_id)).length === 0, 10_000);
	} finally {
		await t.close();
	}
});

test("expiry removes exactly the entry; extend, shorten, remove now; an operator's removal is taken over; faults retried, no duplicate", async () => {
	const t = await setup(12);
	try {
		const { site_id, domain_port_id: dp } = t.ids;
		const t0 = Date.now();
		const [a, b, c] = await Promise.all([
			addBlock(env.client, t.queue, site_id, dp, block('203.0.113.0/30', 8)),
			addBlock(env.client, t.queue, site_id, dp, block('198.51.100.7', 8)),
			addBlock(env.client, t.queue, site_id, dp, block('192.0.2.10-192.0.2.20', 30)),
			addBlock(env.client, t.queue, site_id, dp, block('192.0.2.50', 30)),
		]);
		assert.deepEqual([a.state, a.range, a.by, a.via], ['active', '203.0.113.0-203.0.113.3', 'alice@soc', 'cli']);
		assert.ok(Date.parse(a.expiresAt) >= t0 + 8000);
		if (process.env.DEBUG_BLOCKS) console.log('adds took', Date.now() - t0);
		assert.deepEqual((await listed(t.op, t.ids)).sort(), [
			'192.0.2.10-192.0.2.20',
			'192.0.2.50',
			'198.51.100.7',
			'203.0.113.0-203.0.113.3',
		]);
		await refusal(
			addBlock(env.client, t.queue, site_id, dp, block('203.0.113.0-203.0.113.3', 60)),
			/^entry: .*already blocked/,
		);
		// Held at the coordinator by the blocks workflow, until after the expiry.
		const h = await holds(env.client, site_id);
		assert.equal(h.length, 4);
		assert.ok(h.every((x) => x.owner === `blocks-${site_id}-${dp}` && x.mode === 'hold'));

		// Extend b, shorten c, remove d now; the operator removes a (taken over at its expiry).
		const b2 = await extendBlock(env.client, site_id, dp, { entry: '198.51.100.7', seconds: 10, by: 'bob' });
		assert.ok(Date.parse(b2.expiresAt) > Date.parse(b.expiresAt));
		const c2 = await extendBlock(env.client, site_id, dp, { entry: '192.0.2.10-192.0.2.20', seconds: 4, by: 'bob' });
		assert.ok(Date.parse(c2.expiresAt) < Date.parse(c.expiresAt));
		const d2 = await removeBlock(env.client, site_id, dp, { entry: '192.0.2.50', by: 'carol' });
		assert.equal(d2.state, 'removed');
		assert.ok(!(await listed(t.op, t.ids)).includes('192.0.2.50'));
		await t.op.call('applicationProtection.ipBlacklist.remove', {
			site_id,
			domain_port_id: dp,
			ip_black_list: ['203.0.113.0-203.0.113.3'],
		});
		// c's removal meets two server errors: retried until removed.
		t.s.sim.addFault({ op: 'applicationProtection.ipBlacklist.remove', kind: 'http5xx', count: 2 });

		const final = await waitFor(
			'every block ended',
			async () => {
				const l = await listBlocks(env.client, site_id, dp);
				return l.length === 4 && l.every((x) => x.state !== 'active' && x.state !== 'removing') && l;
			},
			30_000,
			250,
		);
		const by = (r: string) => final.find((x: Block) => x.range === r) as Block;
		assert.equal(by('203.0.113.0-203.0.113.3').state, 'taken-over');
		assert.equal(by('198.51.100.7').state, 'removed');
		assert.equal(by('192.0.2.10-192.0.2.20').state, 'removed');
		assert.ok(
			Date.parse(by('198.51.100.7').endedAt as string) >= Date.parse(b2.expiresAt),
			'not before its (extended) expiry',
		);
		assert.deepEqual(await listed(t.op, t.ids), []);
		// One POST per block; each removed block's entry named once in a successful DELETE (plus the operator's own); none
		// for the taken-over one.
		assert.equal(writes(t.s, 'POST').length, 4);
		const ok = writes(t.s, 'DELETE').filter((r) => r.status === 200 && r.code === 0);
		assert.deepEqual(
			named(ok).sort(),
			['192.0.2.10-192.0.2.20', '192.0.2.50-192.0.2.50', '198.51.100.7-198.51.100.7', '203.0.113.0-203.0.113.3'],
			`DELETEs: ${JSON.stringify(writes(t.s, 'DELETE').map((r) => [r.status, r.code, r.query]))}`,
		);
		await waitFor('holds released', async () => (await holds(env.client, site_id)).length === 0);
		await refusal(removeBlock(env.client, site_id, dp, { entry: '198.51.100.7', by: 'x' }), /^entry: no active block/);
	} finally {
		await t.close();
	}
});

function kill(child: ChildProcess): Promise<void> {
	return new Promise((resolve) => {
		if (child.exitCode !== null || child.signalCode !== null) return resolve();
		child.once('exit', () => resolve());
		child.kill('SIGKILL');
	});
}

test('worker SIGKILLed while blocks are active: a new worker removes them at their expiry', async () => {
	const s = await startSim(13);
	const ids = s.sim.firstIds();
	const op = operatorClient(s.url);
	const queue = uniqueQueue('blocks-kill');
	let child = spawnWorker(env, s.url, queue);
	try {
		await Promise.all(
			['203.0.113.9', '203.0.113.10'].map((e) =>
				addBlock(env.client, queue, ids.site_id, ids.domain_port_id, block(e, 4)),
			),
		);
		assert.equal((await listed(op, ids)).length, 2);
		await kill(child);
		await new Promise((r) => setTimeout(r, 5000)); // the expiry passes with no worker
		child = spawnWorker(env, s.url, queue);
		await waitFor('removed after restart', async () => (await listed(op, ids)).length === 0, 60_000, 250);
		assert.equal(writes(s, 'POST').length, 2);
		// Entries due together go in one DELETE: each entry named exactly once.
		assert.deepEqual(named(writes(s, 'DELETE').filter((r) => r.status === 200)).sort(), [
			'203.0.113.10-203.0.113.10',
			'203.0.113.9-203.0.113.9',
		]);
		await runsCompleted(ids);
	} finally {
		await leaveNothingRunning(ids);
		await kill(child);
		await op.close();
		await s.close();
	}
});

test("worker SIGKILLed while its removal's DELETE is in flight: the next worker records the block removed (a lost attempt), not taken over; one DELETE", async () => {
	const s = await startSim(15);
	const ids = s.sim.firstIds();
	const op = operatorClient(s.url);
	const queue = uniqueQueue('blocks-lost');
	let child = spawnWorker(env, s.url, queue);
	try {
		await addBlock(env.client, queue, ids.site_id, ids.domain_port_id, block('203.0.113.77', 3));
		// The service holds the DELETE 3 s, then applies it: the worker is killed meanwhile, so its answer is lost and the
		// removal (a local activity: no attempt number survives the lost workflow task) runs again on the next worker.
		s.sim.addFault({ op: 'applicationProtection.ipBlacklist.remove', kind: 'delay', delayMs: 3000 });
		await waitFor(
			'the DELETE was sent',
			async () => writes(s, 'DELETE').some((r) => (r as { fault?: string }).fault === 'delay'),
			30_000,
			50,
		);
		await kill(child);
		await waitFor('the held DELETE applied', async () => (await listed(op, ids)).length === 0, 10_000, 100);
		child = spawnWorker(env, s.url, queue);
		const id = `blocks-${ids.site_id}-${ids.domain_port_id}`;
		await waitFor(
			`${id} completed`,
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			60_000,
			250,
		);
		const [b] = await listBlocks(env.client, ids.site_id, ids.domain_port_id);
		assert.equal(b.state, 'removed', JSON.stringify(b));
		assert.match(b.note ?? '', /a DELETE naming it was sent at \S+ by an earlier attempt whose answer was lost/);
		assert.equal(writes(s, 'DELETE').length, 1, 'the second attempt found the entry gone and sent nothing');
		await runsCompleted(ids);
	} finally {
		await leaveNothingRunning(ids);
		await kill(child);
		await op.close();
		await s.close();
	}
});

test("with the runbook: a block queues behind the runbook's entry, its expiry leaves it alone, the revert hands it over", async () => {
	const t = await setup(14);
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
			}),
		);
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		step('\t\tconst entries = await listed');
		const entries = await listed(t.op, t.ids);
		assert.ok(
			entries.includes('203.0.113.5-203.0.113.6') || entries.includes('203.0.113.5'),
			`runbook blacklisted (${entries})`,
		);
		const target = entries.find((e) => e.startsWith('203.0.113.5')) as string;
		const other = entries.find((e) => e.startsWith('198.51.100')) as string;

		// A block for the runbook's entry (short) and one for another of its entries (long).
		const q = await addBlock(env.client, t.queue, site_id, dp, block(target, 2));
		const q2 = await addBlock(env.client, t.queue, site_id, dp, block(other, 120));
		step("\t\tassert.equal(q.state, 'queue");
		assert.equal(q.state, 'queued');
		assert.match(q.note ?? '', new RegExp(`held by attack-response-${site_id}`));
		assert.equal(writes(t.s, 'POST').length, entries.length, 'the queued blocks wrote nothing');
		// The short block expires while the runbook still holds its entry: nothing removed.
		await new Promise((r) => setTimeout(r, 3500));
		assert.ok((await listed(t.op, t.ids)).includes(target), 'an expiry never removes an entry the runbook holds');
		assert.equal(writes(t.s, 'DELETE').length, 0);

		step('\t\tt.s.sim.stopAttack(attack.id');
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const bl = r.changes.filter((c) => c.kind === 'blacklistAdd');
		assert.ok(
			bl.some((c) => /handed over to blocks-/.test(c.note ?? '')),
			JSON.stringify(bl.map((c) => c.note)),
		);
		// The long block keeps its entry after the revert; the expired one was removed right after the hand-over.
		step("\t\tawait waitFor('expired block");
		await waitFor(
			'expired block removed after the hand-over',
			async () => !(await listed(t.op, t.ids)).includes(target),
			15_000,
			200,
		);
		step('\t\tconst now = await listed(t.op, t.ids);');
		const now = await listed(t.op, t.ids);
		assert.ok(now.includes(other), 'the revert did not remove the entry an expiring block took over');
		const l = await listBlocks(env.client, site_id, dp);
		assert.equal(l.find((b) => b.range === q2.range)?.state, 'active');
		assert.equal(l.find((b) => b.range === q.range)?.state, 'removed');
		step('\t\tconst held = await holds(env.client, s');
		const held = await holds(env.client, site_id);
		assert.deepEqual(
			held.map((x) => [x.key, x.owner]),
			[[`${dp}/blacklist/${q2.range}`, `blocks-${site_id}-${dp}`]],
		);
		step('\t\tawait removeBlock(env.client, site_id,');
		await removeBlock(env.client, site_id, dp, { entry: other, by: 'test' });
		assert.deepEqual(await listed(t.op, t.ids), []);
		await runsCompleted(t.ids);
	} finally {
		await t.close();
	}
});

test('plan blacklist.expireAfterSeconds: a runbook that dies for good leaves no permanent block', async () => {
	const t = await setup(15);
	try {
		const { site_id } = t.ids;
		t.s.sim.startAttack({ site_id, duration: 0, sources: ATTACK_SOURCES });
		const p = plan(t.ids, {
			cooldownSeconds: 1,
			ipAuth: undefined,
			switches: [],
			detection: { rapidMode: false, thresholds: [] },
		});
		const h = await startAttackResponse(env.client, t.queue, {
			...p,
			blacklist: { ...p.blacklist, expireAfterSeconds: 2 },
		});
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
		const entries = await listed(t.op, t.ids);
		assert.ok(entries.length > 0);
		step('\t\tconst bl = await listBlocks(env.client');
		const bl = await listBlocks(env.client, site_id, t.ids.domain_port_id);
		assert.deepEqual(
			bl.map((b) => [b.state, b.via]).sort(),
			entries.map(() => ['queued', 'runbook']),
		);
		await new Promise((r) => setTimeout(r, 2500));
		assert.deepEqual((await listed(t.op, t.ids)).sort(), entries.sort(), 'kept while the runbook holds them');
		// The runbook dies for good (terminated: no revert). Its holds end (here forced; by themselves at their expiry).
		step("\t\tawait h.terminate('crashed for good');");
		await h.terminate('crashed for good');
		await release(env.client, site_id, `attack-response-${site_id}`);
		step("\t\tawait waitFor('entries removed by thei");
		await waitFor('entries removed by their blocks', async () => (await listed(t.op, t.ids)).length === 0, 15_000, 200);
		const removedNames = named(writes(t.s, 'DELETE').filter((r) => r.status === 200));
		assert.equal(removedNames.length, entries.length, 'one removal per entry');
		assert.equal(new Set(removedNames).size, entries.length, 'no entry named twice');
		await runsCompleted(t.ids);
	} finally {
		await t.close();
	}
});

const runCli = (args: string[], queue: string) => cliIn(env, args, queue);

test('bulk add: one Update for many blocks, one POST per entry, one DELETE per due batch, every entry named once; a bad entry is named and nothing is sent', async () => {
	const t = await setup(16);
	const dir = mkdtempSync(join(tmpdir(), 'blocks-bulk-'));
	try {
		const { site_id, domain_port_id: dp } = t.ids;
		// A bad entry anywhere in a bulk add: named with its place, nothing sent (client check, CLI, and the workflow's
		// validator when the client's check is skipped).
		const bad = ['198.51.100.1', '198.51.100.2', '10.0.0.0/8'].map((e) => block(e, 60));
		await refusal(
			addBlocks(env.client, t.queue, site_id, dp, { blocks: bad }),
			/^blocks\[2\]\.entry: .*wider than the widest block allowed/,
		);
		await refusal(
			addBlocks(env.client, t.queue, site_id, dp, {
				blocks: [block('198.51.100.1', 60), block('198.51.100.1/32', 60)],
			}),
			/^blocks\[1\]\.entry: .*same range as blocks\[0\]/,
		);
		await refusal(
			addBlocks(env.client, t.queue, site_id, dp, { blocks: [block('198.51.100.1', 60), block('198.51.100.2', 0)] }),
			/^blocks\[1\]\.seconds: must be at least 1/,
		);
		const { addBlocksUpdate } = await import('../../workflows/blocks/shared.mts');
		await assert.rejects(
			env.client.workflow.executeUpdateWithStart(addBlocksUpdate, {
				args: [{ blocks: bad }],
				startWorkflowOperation: new (await import('@temporalio/client')).WithStartWorkflowOperation('blocks', {
					workflowId: `blocks-${site_id}-${dp}`,
					taskQueue: t.queue,
					args: [{ site_id, domain_port_id: dp }],
					workflowIdConflictPolicy: 'USE_EXISTING',
				}),
			}),
			(e: Error & { cause?: Error }) => /^blocks\[2\]\.entry: .*wider/.test(String(e.cause?.message)),
		);
		const feed = join(dir, 'feed.txt');
		writeFileSync(feed, '# threat feed\n198.51.100.1\n\n198.51.100.0/29   # scanners\n10.0.0.300\n');
		const c = await runCli(
			['block', 'add', site_id, dp, '--file', feed, '--seconds', '60', '--by', 'alice@soc', '--reason', 'feed'],
			t.queue,
		);
		assert.equal(c.code, 2);
		assert.match(c.err, /^secsvc: --file line 5: "10\.0\.0\.300" must be an IPv4 address/);
		const c2 = await runCli(
			[
				'block',
				'add',
				site_id,
				dp,
				'198.51.100.1',
				'10.0.0.300',
				'--seconds',
				'60',
				'--by',
				'alice@soc',
				'--reason',
				'r',
			],
			t.queue,
		);
		assert.equal(c2.code, 2);
		assert.match(c2.err, /ENTRY 2: .*must be an IPv4 address/);
		assert.equal(writes(t.s, 'POST').length + writes(t.s, 'DELETE').length, 0, 'nothing was sent');

		// Six blocks in one Update, three due after 3 s and three after 6 s; one of them is the operator's entry
		// (refused, named; the others go on).
		await t.op.call('applicationProtection.ipBlacklist.add', {
			site_id,
			domain_port_id: dp,
			ip_black_list: '192.0.2.99',
		});
		const entries = [
			'203.0.113.1',
			'203.0.113.2',
			'203.0.113.8-203.0.113.9',
			'198.51.100.16/30',
			'198.51.100.40',
			'198.51.100.41',
		];
		const r = await addBlocks(env.client, t.queue, site_id, dp, {
			blocks: [...entries.map((e, i) => block(e, i < 3 ? 3 : 6)), block('192.0.2.99', 3)],
		});
		assert.equal(r.blocks.length, 6);
		assert.ok(r.blocks.every((b) => b.state === 'active' && b.site_id === site_id && b.by === 'alice@soc'));
		assert.deepEqual(
			r.refused.map((x) => [x.entry, x.field]),
			[['192.0.2.99', 'entry']],
		);
		assert.match(r.refused[0].rule, /already on the blacklist/);
		const posts = writes(t.s, 'POST').filter((x) => x.status === 200);
		// The operator's own add, then one POST per entry of ours.
		assert.equal(posts.length, 1 + entries.length);
		assert.equal(
			new Set(posts.map((x) => JSON.stringify((x.body as { ip_black_list?: string }).ip_black_list))).size,
			posts.length,
			'no entry posted twice',
		);
		const h = await holds(env.client, site_id);
		assert.equal(h.length, entries.length, 'the refused entry holds nothing');

		// The CLI: several entries in one bulk add.
		const c3 = await runCli(
			[
				'block',
				'add',
				site_id,
				dp,
				'192.0.2.200',
				'192.0.2.201',
				'--seconds',
				'4',
				'--by',
				'bob@soc',
				'--reason',
				'cli bulk',
			],
			t.queue,
		);
		assert.equal(c3.code, 0, c3.err);
		assert.deepEqual(
			(JSON.parse(c3.out) as { blocks: Block[] }).blocks.map((b) => [b.range, b.state, b.via]),
			[
				['192.0.2.200', 'active', 'cli'],
				['192.0.2.201', 'active', 'cli'],
			],
		);

		await waitFor(
			'every block removed',
			async () => {
				const l = await listed(t.op, t.ids);
				return l.length === 1 && l[0] === '192.0.2.99';
			},
			30_000,
			250,
		);
		const dels = writes(t.s, 'DELETE').filter((x) => x.status === 200 && x.code === 0);
		const names = named(dels);
		assert.equal(
			names.length,
			entries.length + 2,
			`each entry named once: ${JSON.stringify(dels.map((d) => d.query))}`,
		);
		assert.equal(new Set(names).size, names.length);
		// Entries due together go together: at most one DELETE per due time (3 s, 4 s, 6 s), not one per entry.
		assert.ok(
			dels.length <= 3,
			`${dels.length} DELETEs for three due times: ${JSON.stringify(dels.map((d) => d.query))}`,
		);
		await waitFor('holds released', async () => (await holds(env.client, site_id)).length === 0, 15_000);
		const l = await listBlocks(env.client, site_id, dp);
		assert.equal(l.filter((b) => b.state === 'removed').length, entries.length + 2);
		await runsCompleted(t.ids);
	} finally {
		rmSync(dir, { recursive: true, force: true });
		await t.close();
	}
});

test('a blocks run continues as new while its blocks are active (runs of 250 events): carried over, each entry removed once', async () => {
	const t = await setup(16);
	try {
		const { site_id, domain_port_id: dp } = t.ids;
		// 30 single adds (~11 events each) take the run past 250 events while every block is still active.
		const entries = Array.from({ length: 30 }, (_, i) => `198.18.0.${i + 1}`);
		for (const [i, e] of entries.entries()) await addBlock(env.client, t.queue, site_id, dp, block(e, 8 + (i % 3)));
		const id = `blocks-${site_id}-${dp}`;
		await waitFor('every entry removed', async () => (await listed(t.op, t.ids)).length === 0, 60_000, 250);
		await waitFor(
			`${id} completed`,
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			30_000,
			250,
		);
		const runs = await waitFor(
			'its runs listed',
			async () => {
				const ids: string[] = [];
				for await (const w of env.client.workflow.list({ query: `WorkflowId = '${id}'` })) ids.push(w.runId);
				return ids.length >= 2 && ids;
			},
			15_000,
			500,
		);
		assert.ok(runs.length >= 2, `runs: ${runs.length}`);
		assert.equal(writes(t.s, 'POST').length, entries.length);
		assert.deepEqual(
			named(writes(t.s, 'DELETE').filter((r) => r.status === 200))
				.map((e) => e.split('-')[0])
				.sort(),
			[...entries].sort(),
		);
		const ended = await listBlocks(env.client, site_id, dp);
		assert.equal(
			ended.filter((b) => b.state === 'removed').length,
			entries.length,
			JSON.stringify(ended.map((b) => [b.range, b.state])),
		);
		await waitFor('holds released', async () => (await holds(env.client, site_id)).length === 0, 30_000);
	} finally {
		await t.close();
	}
});

test('a blocks run recorded before bulk adds replays under the current code (patched)', async () => {
	const json = JSON.parse(readFileSync(new URL('./fixtures/blocks-batched-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	assert.ok((history.events?.length ?? 0) > 100);
	// Throws DeterminismViolationError if the current code would issue other commands (e.g. without the patch gate:
	// "coordination.claim does not match blocks.addMany").
	await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'blocks-batched-run');
});

test('a blocks run recorded before local removals replays under the current code (patched)', async () => {
	// fixtures/blocks-bulk-run.json: the bulk code of 2026-11-23 17:24 (one bulk add of four blocks, a single add, an
	// extend, removals by the `blocks.removeMany` activity, releases by signal); its coordinator polled every second.
	const json = JSON.parse(readFileSync(new URL('./fixtures/blocks-bulk-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	assert.ok(
		(history.events ?? []).some(
			(e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'blocks.removeMany',
		),
	);
	await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'blocks-bulk-run');
});

test("a site coordinator's run recorded before its timer fix replays under the current code (patched)", async () => {
	// fixtures/site-coordinator-run.json: the coordinator of the run above (claims by blocks.addMany, release signals,
	// and the 100 ms timer it started at every iteration while anything was held).
	const json = JSON.parse(readFileSync(new URL('./fixtures/site-coordinator-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	assert.ok((history.events ?? []).filter((e) => e.timerStartedEventAttributes).length >= 5);
	await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'site-coordinator-run');
});

test('a blocks run recorded before workflows/blocks was split by step replays under the current code', async () => {
	// fixtures/blocks-local-run.json: the local-removal code of 2026-11-24 10:05 before the split (one bulk add of four
	// blocks, a single add, an extend, an add removed at once, removals by the `blocks.removeDue` local activity, the
	// coalesced release signal). The split moved code into workflows/blocks/*.mts; the commands must not change.
	const json = JSON.parse(readFileSync(new URL('./fixtures/blocks-local-run.json', import.meta.url), 'utf8'));
	const history = proto.temporal.api.history.v1.History.fromObject(json);
	const events = history.events ?? [];
	assert.ok(events.filter((e) => e.markerRecordedEventAttributes).length >= 4, 'local removals (markers)');
	assert.ok(
		events.some((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes),
		'a release signal',
	);
	await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'blocks-local-run');
});

test('a queued block and a coordinator recorded before released keys were told apart replay under the current code (patched)', async () => {
	// Recorded on 4ef0ece. fixtures/site-coordinator-released-run.json: a person's entry a runbook found present (not
	// ours), a block for it queued behind the runbook, the runbook's revert released the key and the coordinator told
	// the block with `handedOver` (keys only; the block then DELETEd the person's entry — the defect). The current
	// coordinator adds `released` to that signal's payload: the same command, no patch. fixtures/blocks-released-run.json:
	// a queued block got `handedOver` with `released` (as the current coordinator sends it) and, on the code of then,
	// took the key as handed over. The current code checks such a block as a fresh add (an activity): without the gate
	// `blocks-released-keys` its replay fails with a nondeterminism error.
	for (const [file, signal] of [
		['blocks-released-run', 'handedOver'],
		['site-coordinator-released-run', 'handedOver'],
	]) {
		const json = JSON.parse(readFileSync(new URL(`./fixtures/${file}.json`, import.meta.url), 'utf8'));
		const history = proto.temporal.api.history.v1.History.fromObject(json);
		const told = (history.events ?? []).filter(
			(e) =>
				(e.workflowExecutionSignaledEventAttributes?.signalName ??
					e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName) === signal,
		);
		assert.ok(told.length, `${file}: ${signal}`);
		await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
	}
});

void BlockRefused;
