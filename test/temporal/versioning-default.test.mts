// Why the worker's default versioning behaviour is PINNED (worker/src/process/deploy.mts, workflows/index.mts): on the real dev
// server, the workflow tasks the SDK completes by itself — heartbeats while a local activity outlasts the task timeout —
// carry the worker's DEFAULT behaviour, not the workflow's declared one. With the project's deployment options every
// one of them says PINNED, so a waiting runbook can never be marked AUTO_UPGRADE (and moved by a rollout); and every
// workflow type declares its behaviour, so none depends on that default.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Worker } from '@temporalio/worker';
import type { WorkerConfig } from '../../worker/src/process/config.mts';
type TemporalCfg = WorkerConfig['temporal'];
import { workerDeploymentOptions } from '../../worker/src/process/deploy.mts';
import * as workflows from '../../workflows/index.mts';
import { env, useDevServer, waitFor } from './helpers.mts';

useDevServer({ bundle: false });

test('every workflow type declares its versioning behaviour: attackResponse PINNED, the others AUTO_UPGRADE', () => {
	const declared = Object.fromEntries(
		Object.entries(workflows).map(([name, wf]) => [
			name,
			(wf as { workflowDefinitionOptions?: { versioningBehavior?: string } }).workflowDefinitionOptions
				?.versioningBehavior,
		]),
	);
	for (const [name, behaviour] of Object.entries(declared))
		assert.equal(behaviour, name === 'attackResponse' ? 'PINNED' : 'AUTO_UPGRADE', name);
	assert.ok(Object.keys(declared).length >= 8, Object.keys(declared).join(', '));
});

test('workflow-task heartbeats during a long local activity carry the worker default, which is PINNED', async () => {
	const deploymentName = `vt-default-${process.pid}`;
	const taskQueue = `vt-default-${process.pid}`;
	const opts = workerDeploymentOptions({ workerVersioning: true, deploymentName } as TemporalCfg, 'b1');
	assert.equal(opts.workerDeploymentOptions?.defaultVersioningBehavior, 'PINNED');
	const worker = await Worker.create({
		connection: env.nativeConnection,
		taskQueue,
		workflowsPath: fileURLToPath(new URL('./fixtures/slowLocalActivity.workflow.mjs', import.meta.url)),
		activities: { slow: (ms: number) => new Promise<string>((r) => setTimeout(() => r('done'), ms)) },
		...opts,
	});
	const running = worker.run();
	try {
		const svc = env.client.workflowService;
		await waitFor('the build registered and made current', async () => {
			try {
				const d = await svc.describeWorkerDeployment({ namespace: 'default', deploymentName });
				await svc.setWorkerDeploymentCurrentVersion({
					namespace: 'default',
					deploymentName,
					buildId: 'b1',
					conflictToken: d.conflictToken,
					identity: 'test',
				});
				return true;
			} catch {
				return false;
			}
		});
		// A 2 s task timeout and a 5 s local activity: the SDK heartbeats the task at ~80 % of the timeout.
		const h = await env.client.workflow.start('pinnedSlowLocalActivity', {
			taskQueue,
			workflowId: `vt-default-${process.pid}`,
			args: [5000],
			workflowTaskTimeout: '2s',
		});
		assert.equal(await h.result(), 'done');
		const events = (await h.fetchHistory()).events ?? [];
		const completed = events
			.filter((e) => e.workflowTaskCompletedEventAttributes)
			.map((e) => e.workflowTaskCompletedEventAttributes!);
		assert.ok(completed.length >= 3, `the SDK heartbeated the workflow task (${completed.length} tasks completed)`);
		// 1 = VERSIONING_BEHAVIOR_PINNED on the wire; with an AUTO_UPGRADE default the heartbeats said 2.
		assert.deepEqual(
			completed.map((a) => Number(a.versioningBehavior)),
			completed.map(() => 1),
		);
		assert.deepEqual([...new Set(completed.map((a) => a.deploymentVersion?.buildId))], ['b1']);
	} finally {
		worker.shutdown();
		await running;
	}
});
