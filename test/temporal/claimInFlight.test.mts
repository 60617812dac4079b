/**
 * Issue 37: a claim whose caller is gone leaves nothing in flight at the site coordinator (real dev server,
 * in-process worker). A hold waits while another owner's lease covers its key; when the activity that asked for it
 * dies (a killed worker, an add batch whose lease was lost), its claim Update used to wait on at the coordinator
 * until granted, and its retry sent another. Ten such Updates and the server refused every further Update of the
 * coordinator — releases and hand-overs included ("limit on number of concurrent in-flight updates": interleave
 * seed 36) — and a late grant took the key for a caller that was gone. Now a waiting claim is asked
 * CLAIM_WAIT_SECONDS at a time, again only while its caller is alive.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claim, CLAIM_WAIT_SECONDS, holds, release } from '../../workflows/coordinator/client.mts';
import { env, startInProcessWorker, startSim, uniqueQueue, useDevServer } from './helpers.mts';

useDevServer();

test("twelve claims whose callers died while they waited leave the coordinator free: the lease's release, a new claim and no hold for the gone", async () => {
	const s = await startSim(37);
	const site = s.sim.firstIds().site_id;
	const queue = uniqueQueue('claim-in-flight');
	const worker = await startInProcessWorker(env, s.url, queue);
	const key = 'dp-1/ipBlacklist/203.0.113.9-203.0.113.9';
	try {
		const lease = await claim(
			env.client,
			{ site_id: site, owner: 'drift-x', keys: [key], mode: 'lease', ttlSeconds: 120 },
			queue,
		);
		assert.deepEqual(lease.granted, [key]);
		// Twelve holds of one key, in two rounds of six (ten Updates in flight is the server's limit per workflow), each
		// from a caller that dies while it waits (its `alive` says so at the first chance).
		const gone = async () => {
			throw new Error('the caller is gone');
		};
		const t0 = Date.now();
		for (const round of [0, 1]) {
			const dead = await Promise.allSettled(
				Array.from({ length: 6 }, (_, i) =>
					claim(env.client, { site_id: site, owner: `runbook-${round}-${i}`, keys: [key], mode: 'hold' }, queue, gone),
				),
			);
			assert.deepEqual(
				dead.map((d) => (d.status === 'rejected' ? String((d.reason as Error).message) : 'granted')),
				dead.map(() => 'the caller is gone'),
			);
		}
		const waited = (Date.now() - t0) / 1000;
		assert.ok(waited >= 2 * CLAIM_WAIT_SECONDS - 0.5, `each round waited its ${CLAIM_WAIT_SECONDS} s (${waited} s)`);
		// Nothing of theirs is in flight: the lease's owner releases it and a live claimant gets the key at once.
		assert.deepEqual(await release(env.client, site, 'drift-x', [key]), { released: 1, dequeued: 0 });
		const live = await claim(env.client, { site_id: site, owner: 'runbook-live', keys: [key], mode: 'hold' }, queue);
		assert.deepEqual(live.granted, [key]);
		assert.deepEqual(
			(await holds(env.client, site)).map((h) => `${h.owner} ${h.key}`),
			[`runbook-live ${key}`],
			'no hold for a caller that was gone',
		);
		await release(env.client, site, 'runbook-live');
	} finally {
		await worker.shutdown();
		await s.close();
	}
});
