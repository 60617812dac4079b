/**
 * A rollout on the production-shaped cluster (Worker Deployment Versioning on PostgreSQL, mutual TLS): a runbook
 * waits on build A; a worker of build B (a copy of workflows/ with one more command) starts and `secsvc deploy
 * set-current` (the CLI on the cluster's TLS env) rolls it out; the waiting runbook finishes and reverts on A, a new
 * one runs on B, and no workflow task fails in either.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { sourceHash } from '../../worker/src/process/bundle.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import {
	ATTACK_SOURCES,
	killChild,
	liveSettings,
	operatorClient,
	plan,
	ROOT,
	startSim,
	uniqueQueue,
	waitFor,
} from '../temporal/helpers.mts';
import { clusterClient, clusterWorker, ensureCluster, freeSites, secsvc, type ClusterEnv } from './helpers.mts';

let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
const copyRoot = join(ROOT, '.tmp', 'cluster-build-b'); // .tmp/ is git-ignored
const workers: ReturnType<typeof clusterWorker>[] = [];

/** Build B: workflows/ copied, attackResponse starting with a 1 ms timer. */
function makeBuildB(): string {
	rmSync(copyRoot, { recursive: true, force: true });
	mkdirSync(copyRoot, { recursive: true });
	const dir = join(copyRoot, 'workflows');
	cpSync(join(ROOT, 'workflows'), dir, { recursive: true });
	symlinkSync(join(ROOT, 'api'), join(copyRoot, 'api'));
	const file = join(dir, 'attackResponse', 'attackResponse.mts');
	const head = /export async function attackResponse\([^)]*\)[^{]*\{/;
	const src = readFileSync(file, 'utf8');
	assert.match(src, head);
	writeFileSync(
		file,
		`import { sleep as buildBSleep } from '@temporalio/workflow';\n${src.replace(head, (m) => `${m}\n\tawait buildBSleep('1ms'); // build B only\n`)}`,
	);
	return dir;
}

before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
});
after(async () => {
	for (const w of workers) await killChild(w, 'SIGTERM');
	await client?.close();
	rmSync(copyRoot, { recursive: true, force: true });
});

/** Builds and failed workflow tasks of one run's history. */
async function historyOf(h: WorkflowHandle) {
	const events = (
		JSON.parse(JSON.stringify(await h.fetchHistory())) as {
			events: {
				eventType?: string;
				workflowTaskCompletedEventAttributes?: { deploymentVersion?: { buildId?: string } };
			}[];
		}
	).events;
	return {
		builds: [
			...new Set(
				events.flatMap((e) =>
					e.workflowTaskCompletedEventAttributes
						? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId]
						: [],
				),
			),
		],
		failedTasks: events.filter((e) => /WORKFLOW_TASK_FAILED|WORKFLOW_TASK_TIMED_OUT/.test(e.eventType ?? '')).length,
	};
}

test(
	'rollout of build B over a runbook waiting on build A: A finishes on A, new runbooks run on B',
	{ timeout: 300_000 },
	async () => {
		const s = await startSim(61);
		const op = operatorClient(s.url);
		const ids = s.sim.firstIds();
		await freeSites(client, [ids]);
		const queue = uniqueQueue('cluster-vt');
		const deployment = `cluster-vt-${process.pid}`;
		const dirB = makeBuildB();
		const [buildA, buildB] = [sourceHash(), sourceHash(dirB)];
		const start = async (extra: NodeJS.ProcessEnv) => {
			const w = clusterWorker(env, s.url, queue, { SECSVC_DEPLOYMENT_NAME: deployment, ...extra });
			workers.push(w);
			await waitFor(
				'worker ready',
				async () => w.log().includes('secsvc worker: task queue') || w.exitCode !== null,
				180_000,
				250,
			);
			assert.equal(w.exitCode, null, w.log());
			return w;
		};
		const cli = (args: string[]) =>
			secsvc({ ...env, TEMPORAL_TASK_QUEUE: queue, SECSVC_DEPLOYMENT_NAME: deployment }, args);
		try {
			const a = await start({});
			assert.match(a.log(), new RegExp(`build ${buildA} is now the current version of deployment ${deployment}`));
			const snapshot = await liveSettings(op, ids);
			const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h1 = await startAttackResponse(client, queue, plan(ids, { cooldownSeconds: 1, maxDurationSeconds: 600 }));
			await waitFor('runbook 1 waiting', async () => (await h1.query(stateQuery)).phase === 'waiting', 120_000, 500);

			const b = await start({ SECSVC_WORKFLOWS_DIR: dirB });
			assert.match(b.log(), new RegExp(`build ${buildB} polls but is not current`));
			const roll = await waitFor(
				'set-current accepted',
				async () => {
					const r = await cli(['deploy', 'set-current', buildB]);
					return r.code === 0 && r;
				},
				60_000,
				2000,
			);
			assert.match(roll.stdout, new RegExp(`current build: ${buildB} \\(was ${buildA}\\)`));
			const shown = await cli(['deploy', 'status']);
			assert.match(shown.stdout, new RegExp(`${h1.workflowId} +build ${buildA} +Pinned`));

			s.sim.stopAttack(attack.id);
			const r1 = (await h1.result()) as AttackResponseResult;
			assert.equal(r1.outcome, 'reverted');
			assert.deepEqual(await liveSettings(op, ids), snapshot);
			assert.deepEqual(await historyOf(client.workflow.getHandle(h1.workflowId)), { builds: [buildA], failedTasks: 0 });

			const attack2 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h2 = await startAttackResponse(client, queue, plan(ids, { cooldownSeconds: 1 }));
			await waitFor('runbook 2 waiting', async () => (await h2.query(stateQuery)).phase === 'waiting', 120_000, 500);
			s.sim.stopAttack(attack2.id);
			assert.equal(((await h2.result()) as AttackResponseResult).outcome, 'reverted');
			assert.deepEqual(await historyOf(client.workflow.getHandle(h2.workflowId)), { builds: [buildB], failedTasks: 0 });
			assert.deepEqual(await liveSettings(op, ids), snapshot);
		} finally {
			await op.close();
			await s.close();
		}
	},
);
