/**
 * Admission control on a real dev server (worker/src/process/admission.mts): a worker admitting at most 4 cached workflows
 * runs 12 runbooks on 12 sites. Each runbook claims its settings from its site's coordinator, a NEW workflow on the
 * coordinators' own task queue, so the runbooks the limit holds back on the server cannot block the admitted ones:
 * all 12 complete and revert exactly, the worker never caches more than the limit, and the coordinators ran on
 * `<queue>-coordinators`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coordinatorIdFor } from '../../workflows/coordinator/coordination.mts';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	env,
	liveSettings,
	operatorClient,
	plan,
	siteIds,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	useDevServer,
} from './helpers.mts';

useDevServer();

test('a worker at its admission limit leaves new runbooks on the server; all complete, none blocked by its coordinator', async () => {
	const s = await startSim();
	const op = operatorClient(s.url);
	const queue = uniqueQueue('admit');
	const prev = process.env.SECSVC_ADMIT_WORKFLOWS;
	process.env.SECSVC_ADMIT_WORKFLOWS = '4';
	const w = await startInProcessWorker(env, s.url, queue);
	if (prev === undefined) delete process.env.SECSVC_ADMIT_WORKFLOWS;
	else process.env.SECSVC_ADMIT_WORKFLOWS = prev;
	let maxCached = 0;
	let maxCoordinators = 0;
	const sample = setInterval(() => {
		maxCached = Math.max(maxCached, w.worker.getStatus().numCachedWorkflows);
		maxCoordinators = Math.max(maxCoordinators, w.coordinators.getStatus().numCachedWorkflows);
	}, 10);
	try {
		const sites = siteIds(s.sim, 12);
		const before = await Promise.all(sites.map((ids) => liveSettings(op, ids)));
		const hs = await Promise.all(
			sites.map((ids) =>
				startAttackResponse(
					env.client,
					queue,
					plan(ids, {
						cooldownSeconds: 1,
						blacklist: { enabled: false, topN: 1, metric: 'bps', minPercent: 0, protectedRanges: [] },
					}),
				),
			),
		);
		const results = (await Promise.all(hs.map((h) => h.result()))) as AttackResponseResult[];
		clearInterval(sample);
		assert.deepEqual(
			results.map((r) => r.outcome),
			sites.map(() => 'reverted'),
		);
		assert.ok(
			results.every((r) => r.changes.some((c) => c.status === 'restored')),
			'every runbook changed and restored something',
		);
		for (const [i, ids] of sites.entries())
			assert.deepEqual(await liveSettings(op, ids), before[i], `site ${ids.site_id} back at its snapshot`);
		assert.ok(maxCached <= 4, `the worker cached at most 4 workflows (saw ${maxCached})`);
		assert.ok(maxCached >= 3, `the limit was reached (saw ${maxCached})`);
		assert.ok(w.admission!.stats.held > 0, 'normal-queue polls were held back');
		assert.equal(w.admission!.stats.stallsBroken, 0, 'no stall');
		assert.ok(maxCoordinators >= 1, 'the coordinators ran in the second worker');
		const d = await env.client.workflow.getHandle(coordinatorIdFor(sites[0].site_id)).describe();
		assert.equal(d.taskQueue, `${queue}-coordinators`);
	} finally {
		clearInterval(sample);
		await w.shutdown();
		await op.close();
		await s.close();
	}
});
