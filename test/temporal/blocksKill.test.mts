/**
 * Interleave seed 36 made deterministic: an expiring blocks' bulk add whose worker is SIGKILLed in the middle of its
 * POSTs (real dev server, worker processes, simulator faults). Before, the add batch (`blocks.addMany`) had a 30 s
 * start-to-close and no heartbeat timeout: its retry waited out the 30 s (under a kill every 30 s it started just
 * before the next one, and the add was never sent in 120 s), and it took every entry the killed attempt had POSTed
 * for `unknown` (never removed at its expiry). Now: the retry starts on the heartbeat timeout (15 s; the history's
 * retry says HEARTBEAT, not START_TO_CLOSE), owns what the killed attempt recorded it POSTed (activitiesLease.mts:
 * progress records), sends only what was not sent — one POST per entry — and at most the one POST in flight at the
 * kill is `unknown`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import proto from '@temporalio/proto';
import { addBlocks } from '../../workflows/blocks/client.mts';
import { blocksShardId } from '../../api/blockShards.ts';
import { env, killChild, spawnWorker, startSim, uniqueQueue, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const ENTRIES = [11, 22, 33, 44, 55, 66, 77, 88].map((n) => `198.51.100.${n}`);
const { EventType, TimeoutType } = proto.temporal.api.enums.v1;

test('a bulk add SIGKILLed mid-POSTs: retried on the heartbeat timeout, one POST per entry, the POSTed ones owned', async () => {
	const s = await startSim(36);
	const ids = s.sim.firstIds();
	const queue = uniqueQueue('blocks-add-kill');
	let child = spawnWorker(env, s.url, queue);
	const site = `/site/${ids.site_id}/`;
	const posts = () =>
		s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((r) => r.path.includes(site));
	try {
		// Every POST waits 1.5 s in the service, then is applied (also when its worker is gone by then).
		s.sim.addFault({
			op: 'applicationProtection.ipBlacklist.add',
			kind: 'delay',
			delayMs: 1500,
			count: ENTRIES.length,
			pathContains: site,
		});
		const req = (entry: string) => ({
			entry,
			seconds: 600,
			by: 'soc@example.com',
			reason: 'feed',
			via: 'cli' as const,
		});
		const added = addBlocks(env.client, queue, ids.site_id, ids.domain_port_id, { blocks: ENTRIES.map(req) });
		await waitFor('three POSTs answered, the fourth sent', async () => posts().length >= 4, 60_000, 20);
		await killChild(child);
		const killedAt = Date.now();
		child = spawnWorker(env, s.url, queue);
		const r = await added;

		const sent = posts().map((p) => (p.body as { ip_black_list: string }).ip_black_list);
		assert.deepEqual(
			[...sent].sort(),
			ENTRIES.map((e) => `${e}-${e}`).sort(),
			'one POST per entry: the retry sent only what the killed attempt had not',
		);
		const states = r.blocks.map((b) => b.state);
		assert.equal(r.refused.length, 0, JSON.stringify(r.refused));
		assert.ok(states.filter((x) => x === 'unknown').length <= 1, `at most the POST in flight is unknown: ${states}`);
		assert.ok(
			states.filter((x) => x === 'active').length >= ENTRIES.length - 1,
			`the entries the killed attempt POSTed are the block's: ${states}`,
		);

		// The retry came from the heartbeat timeout, not from the start-to-close.
		const h = env.client.workflow.getHandle(blocksShardId(ids.site_id, ids.domain_port_id, 0));
		const events = (await h.fetchHistory()).events ?? [];
		const started = events
			.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
			.map((e) => e.activityTaskStartedEventAttributes);
		const retry = started.find((x) => (x?.attempt ?? 1) > 1);
		assert.ok(retry, 'the add batch was retried');
		assert.equal(
			retry.lastFailure?.timeoutFailureInfo?.timeoutType,
			TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
			JSON.stringify(retry.lastFailure),
		);
		console.log(`blocksKill: the add completed ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
		await h.terminate('test over');
	} finally {
		await killChild(child);
		await s.close();
	}
});
