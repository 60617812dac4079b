/**
 * Safe upgrades with Worker Deployment Versioning, on a real dev server with worker child processes:
 * a runbook waits on build A (continuing as new every few polls); a worker of build B (a copy of workflows/ whose attack response has one more command)
 * starts and is rolled out with `secsvc deploy set-current`; the runbook's later runs stay on A (a PINNED run's
 * continue-as-new inherits its build) and it finishes and reverts exactly on A, a new one
 * runs on B, short playbooks auto-upgrade, no workflow task ever fails (no nondeterminism), A is then reported
 * drained / retirable. Bad input: an unknown build id and a build with no worker polling are refused, nothing changes.
 *
 * The dev server runs with short drainage / poller-history timers (production defaults: minutes) so that the
 * server's own "drained" verdict and the "no poller" check come within seconds.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { startWorkerProcess, type WorkerProcess } from '../../demo/stack.mts';
import { sourceHash } from '../../worker/src/process/bundle.mts';
import { DeployError, versionPollers } from '../../worker/src/process/deploy.mts';
import { deploymentStatus, setCurrent } from '../../worker/src/process/deployStatus.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { startWorker } from '../../worker/src/process/worker.mts';
import { ConfigError, loadTemporalConfig } from '../../worker/src/process/config.mts';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import {
	APP_ID,
	ATTACK_SOURCES,
	env,
	useDevServer,
	liveSettings,
	operatorClient,
	plan,
	ROOT,
	SECRET,
	startSim,
	uniqueQueue,
	waitFor,
	workerConfig,
} from './helpers.mts';
import { startAttackReport } from '../../workflows/report/client.mts';
import { secsvcArgs } from '../helpers/secsvcCli.mts';

const DEV_CONFIG = [
	'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
	'matching.wv.VersionDrainageStatusVisibilityGracePeriod="2s"',
	'matching.PollerHistoryTTL="4s"',
	'matching.longPollExpirationInterval="2s"', // live pollers re-register every 2 s, within the 4 s history
].flatMap((v) => ['--dynamic-config-value', v]);

let copyRoot: string;
let dirB: string;
const deployment = `secsvc-vt-${process.pid}`;
const workers: WorkerProcess[] = [];

/** Build B: a copy of workflows/ whose attackResponse starts with one extra command (a 1 ms timer). */
function makeBuildB(): string {
	// A fixed place (.tmp/ is git-ignored): the build id hashes paths too, so B's bundle is cached between runs.
	copyRoot = join(ROOT, '.tmp', 'versioning-build-b');
	rmSync(copyRoot, { recursive: true, force: true });
	mkdirSync(copyRoot, { recursive: true });
	const dir = join(copyRoot, 'workflows');
	cpSync(join(ROOT, 'workflows'), dir, { recursive: true });
	symlinkSync(join(ROOT, 'api'), join(copyRoot, 'api')); // `../api/...` imports resolve as from workflows/
	const file = join(dir, 'attackResponse', 'attackResponse.mts');
	const src = readFileSync(file, 'utf8');
	const head = /export async function attackResponse\([^)]*\)[^{]*\{/;
	assert.match(src, head, 'attackResponse signature found in the copy');
	writeFileSync(
		file,
		`import { sleep as buildBSleep } from '@temporalio/workflow';\n${src.replace(head, (m) => `${m}\n\tawait buildBSleep('1ms'); // build B only\n`)}`,
	);
	return dir;
}

useDevServer({
	bundle: false,
	extraArgs: DEV_CONFIG,
	stop: async () => {
		for (const w of workers) await w.stop().catch(() => {});
		if (copyRoot) rmSync(copyRoot, { recursive: true, force: true });
	},
});
before(() => {
	dirB = makeBuildB();
});

const cfgOf = (taskQueue: string) => ({
	address: env.address,
	namespace: 'default',
	taskQueue,
	deploymentName: deployment,
});

function cli(args: string[], taskQueue: string) {
	const r = spawnSync(process.execPath, secsvcArgs(...args), {
		cwd: ROOT,
		encoding: 'utf8',
		timeout: 60_000,
		env: {
			...process.env,
			TEMPORAL_ADDRESS: env.address,
			TEMPORAL_NAMESPACE: 'default',
			TEMPORAL_TASK_QUEUE: taskQueue,
			SECSVC_DEPLOYMENT_NAME: deployment,
		},
	});
	return { code: r.status, out: r.stdout, err: r.stderr };
}

interface Ev {
	eventType?: string;
	workflowTaskCompletedEventAttributes?: {
		deploymentVersion?: { buildId?: string; deploymentName?: string };
		versioningBehavior?: string;
	};
	timerStartedEventAttributes?: { startToFireTimeout?: string };
}
/** History as JSON (enums as names): WFT-completed builds and behaviours, failed WFTs, timers. */
async function historyOf(h: WorkflowHandle) {
	const events = (JSON.parse(JSON.stringify(await h.fetchHistory())) as { events: Ev[] }).events;
	const wft = events.flatMap((e) =>
		e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes] : [],
	);
	return {
		builds: [...new Set(wft.map((a) => `${a.deploymentVersion?.deploymentName}:${a.deploymentVersion?.buildId}`))],
		behaviors: [...new Set(wft.map((a) => a.versioningBehavior))],
		// A failed task is what a build mismatch (nondeterminism) gives; a timed-out one is load (the final CI run of
		// session 12: a pinned run's task ran its local activities past its timeout, TMPRL1104, retried on build A).
		failedTasks: events.filter((e) => /WORKFLOW_TASK_FAILED/.test(e.eventType ?? '')).length,
		timers: events
			.filter((e) => e.timerStartedEventAttributes)
			.map((e) => e.timerStartedEventAttributes?.startToFireTimeout),
		firstCommand: events.find((e) => /TIMER_STARTED|MARKER_RECORDED|ACTIVITY_TASK_SCHEDULED/.test(e.eventType ?? ''))
			?.eventType,
	};
}

const comparable = (v: unknown) => JSON.parse(JSON.stringify(v));

/** historyOf for every run of a runbook that continued as new, first to last. */
async function runsOf(h: WorkflowHandle & { firstExecutionRunId?: string }) {
	const out: Awaited<ReturnType<typeof historyOf>>[] = [];
	for (let runId: string | undefined = h.firstExecutionRunId; runId; ) {
		const run = env.client.workflow.getHandle(h.workflowId, runId);
		out.push(await historyOf(run));
		const last = (
			JSON.parse(JSON.stringify(await run.fetchHistory())) as {
				events: { workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string } }[];
			}
		).events.at(-1);
		runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
	}
	return out;
}

test('configuration: deployment name and versioning switch are validated, with defaults', () => {
	assert.deepEqual([loadTemporalConfig({}).deploymentName, loadTemporalConfig({}).workerVersioning], ['secsvc', true]);
	assert.deepEqual(
		[
			loadTemporalConfig({ SECSVC_DEPLOYMENT_NAME: 'soc-1', SECSVC_WORKER_VERSIONING: '0' }).deploymentName,
			loadTemporalConfig({ SECSVC_WORKER_VERSIONING: '0' }).workerVersioning,
		],
		['soc-1', false],
	);
	assert.throws(
		() => loadTemporalConfig({ SECSVC_DEPLOYMENT_NAME: 'a.b' }),
		(e: unknown) =>
			e instanceof ConfigError && /temporal\.deploymentName \(SECSVC_DEPLOYMENT_NAME\): must be/.test(e.message),
	);
	assert.throws(
		() => loadTemporalConfig({ SECSVC_WORKER_VERSIONING: 'maybe' }),
		/SECSVC_WORKER_VERSIONING: must be 1 or 0/,
	);
});

test(
	'a runbook pinned to build A finishes and reverts on A after build B is rolled out; new runbooks run on B; A is then retirable',
	{ timeout: 180_000 },
	async () => {
		const s = await startSim();
		const op = operatorClient(s.url);
		const ids = s.sim.firstIds();
		const queue = uniqueQueue('vt');
		const buildA = sourceHash();
		const buildB = sourceHash(dirB);
		assert.notEqual(buildA, buildB, 'a code change gives a new build id');
		const startW = async (extra: NodeJS.ProcessEnv) => {
			const w = await startWorkerProcess({
				temporalAddress: env.address,
				taskQueue: queue,
				simUrl: s.url,
				appId: APP_ID,
				secret: SECRET,
				env: { SECSVC_DEPLOYMENT_NAME: deployment, ...extra },
			});
			workers.push(w);
			return w;
		};
		try {
			// Build A: a fresh deployment, so its first worker makes it current.
			const workerA = await startW({});
			assert.match(
				workerA.output(),
				new RegExp(`build ${buildA} is now the current version of deployment ${deployment}`),
			);
			let st = await deploymentStatus(env.client.connection, cfgOf(queue));
			assert.equal(st.current, buildA);

			const snapshot = await liveSettings(op, ids);
			const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			// Runbook 1 continues as new every few polls (tiny threshold): its later runs must stay on A as well.
			const h1 = await startAttackResponse(
				env.client,
				queue,
				plan(ids, { cooldownSeconds: 1, execution: { continueAsNewAfterEvents: 60 } }),
			);
			await waitFor('runbook 1 waiting', async () => (await h1.query(stateQuery)).phase === 'waiting');

			// Build B starts: it polls, but routing stays on A until the operator rolls it out.
			const workerB = await startW({ SECSVC_WORKFLOWS_DIR: dirB });
			assert.match(
				workerB.output(),
				new RegExp(`build ${buildB} polls but is not current .*secsvc deploy set-current ${buildB}`),
			);
			st = await deploymentStatus(env.client.connection, cfgOf(queue));
			assert.equal(st.current, buildA);
			assert.deepEqual(
				st.runbooks.map((r) => [r.workflowId, r.buildId, r.behavior]),
				[[h1.workflowId, buildA, 'Pinned']],
			);

			// Bad input: an unknown build id changes nothing.
			const bad = cli(['deploy', 'set-current', 'no-such-build'], queue);
			assert.equal(bad.code, 2, bad.err);
			assert.match(
				bad.err,
				/build id no-such-build: unknown in worker deployment 'secsvc-vt-\d+' \(known builds: .*\); nothing changed/,
			);
			assert.equal((await deploymentStatus(env.client.connection, cfgOf(queue))).current, buildA);

			// Rollout.
			const roll = cli(['deploy', 'set-current', buildB], queue);
			assert.equal(roll.code, 0, roll.err);
			assert.match(roll.out, new RegExp(`current build: ${buildB} \\(was ${buildA}\\)`));
			st = await deploymentStatus(env.client.connection, cfgOf(queue));
			assert.equal(st.current, buildB);
			const a = st.versions.find((v) => v.buildId === buildA);
			assert.ok(a && a.status === 'draining' && a.pinnedRunning === 1 && !a.retirable, JSON.stringify(a));
			const shown = cli(['deploy', 'status'], queue);
			assert.equal(shown.code, 0, shown.err);
			assert.match(shown.out, new RegExp(`current: ${buildB}`));
			assert.match(shown.out, new RegExp(`${h1.workflowId} +build ${buildA} +Pinned`));
			// RUNNING on A: the runbook, and the site's coordinator (auto-upgrade) until its next workflow task moves it to B
			// (it has no periodic timer: it wakes on a claim, a release or its holds' expiry). PINNED: the runbook only.
			assert.match(shown.out, new RegExp(`${buildA} +draining +\\d+ +[12] +1 +no — 1 pinned runbook`));

			// Runbook 1 continues as new twice more while B is current: a PINNED run's new run inherits build A.
			const cont = async () => (await h1.query(stateQuery)).continuedAsNew ?? 0;
			const c0 = await cont();
			await waitFor("runbook 1 continued as new on B's watch", async () => (await cont()) >= c0 + 2, 60_000);
			// Runbook 1 ends on A and reverts exactly.
			s.sim.stopAttack(attack.id);
			const r1 = (await h1.result()) as AttackResponseResult;
			assert.equal(r1.outcome, 'reverted');
			assert.equal(r1.conflicts.length, 0);
			assert.deepEqual(
				comparable(await liveSettings(op, ids)),
				comparable(snapshot),
				'settings equal the snapshot after runbook 1',
			);
			const runs1 = await runsOf(h1);
			assert.ok(runs1.length >= c0 + 3, `runbook 1 ran in ${runs1.length} runs`);
			for (const [i, hist1] of runs1.entries()) {
				assert.deepEqual(
					hist1.builds,
					[`${deployment}:${buildA}`],
					`every workflow task of runbook 1 (run ${i + 1}) ran on build A`,
				);
				assert.deepEqual(hist1.behaviors, ['VERSIONING_BEHAVIOR_PINNED']);
				assert.equal(hist1.failedTasks, 0, `no failed workflow task (nondeterminism) in runbook 1 (run ${i + 1})`);
				assert.notEqual(hist1.firstCommand, 'EVENT_TYPE_TIMER_STARTED', "build A's command sequence");
			}

			// Runbook 2 starts on B (its extra timer is the first command) and reverts exactly too.
			const attack2 = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h2 = await startAttackResponse(env.client, queue, plan(ids, { cooldownSeconds: 1 }));
			await waitFor('runbook 2 waiting', async () => (await h2.query(stateQuery)).phase === 'waiting');
			s.sim.stopAttack(attack2.id);
			const r2 = (await h2.result()) as AttackResponseResult;
			assert.equal(r2.outcome, 'reverted');
			assert.deepEqual(
				comparable(await liveSettings(op, ids)),
				comparable(snapshot),
				'settings equal the snapshot after runbook 2',
			);
			const hist2 = await historyOf(h2);
			assert.deepEqual(hist2.builds, [`${deployment}:${buildB}`], 'runbook 2 ran on build B');
			assert.equal(hist2.firstCommand, 'EVENT_TYPE_TIMER_STARTED', "build B's extra command");
			assert.equal(hist2.failedTasks, 0);

			// A short playbook auto-upgrades: it runs on the current build.
			const rep = await startAttackReport(env.client, queue, { site_id: ids.site_id }, `vt-report-${process.pid}`);
			await rep.result();
			const hist3 = await historyOf(rep);
			assert.deepEqual(hist3.builds, [`${deployment}:${buildB}`]);
			assert.deepEqual(hist3.behaviors, ['VERSIONING_BEHAVIOR_AUTO_UPGRADE']);
			assert.equal(hist3.failedTasks, 0);

			// A: no pinned runbook left → drained (the server's verdict) and retirable.
			await waitFor(
				'build A drained',
				async () =>
					(await deploymentStatus(env.client.connection, cfgOf(queue))).versions.find((v) => v.buildId === buildA)
						?.retirable,
				30_000,
				500,
			);
			const retire = cli(['deploy', 'retire-check', buildA], queue);
			assert.equal(retire.code, 0, retire.out + retire.err);
			assert.match(retire.out, new RegExp(`${buildA} +drained .*yes — drained: no pinned runbook left`));
			const notYet = cli(['deploy', 'retire-check', buildB], queue);
			assert.equal(notYet.code, 1, 'the current build is not retirable');

			// A retired: rolling back to a build with no worker polling is refused, nothing changes.
			await workerA.stop();
			await waitFor(
				'no poller of build A',
				async () =>
					(await versionPollers(env.client.connection, 'default', deployment, buildA)).every((p) => p.pollers === 0),
				30_000,
				500,
			);
			await assert.rejects(setCurrent(env.client.connection, cfgOf(queue), buildA), (e: unknown) => {
				assert.ok(e instanceof DeployError);
				assert.match(
					e.message,
					new RegExp(
						`build id ${buildA}: no worker of this build is polling \\(task queues ${queue}, ${queue}-coordinators\\).*nothing changed`,
					),
				);
				return true;
			});
			assert.equal((await deploymentStatus(env.client.connection, cfgOf(queue))).current, buildB);
		} finally {
			await op.close();
			await s.close();
		}
	},
);

test(
	'SECSVC_WORKER_VERSIONING=0: an unversioned worker (clusters without deployments) still runs the runbooks',
	{ timeout: 60_000 },
	async () => {
		const s = await startSim();
		const queue = uniqueQueue('vt-off');
		const cfg = workerConfig(env, s.url, queue);
		cfg.temporal.workerVersioning = false;
		const w = await startWorker(cfg, { connection: env.nativeConnection });
		try {
			assert.equal(w.deployment, undefined);
			const h = await startAttackResponse(env.client, queue, plan(s.sim.firstIds()), { dryRun: true });
			assert.equal(((await h.result()) as AttackResponseResult).outcome, 'dry-run');
			const hist = await historyOf(h);
			assert.deepEqual(hist.builds, ['undefined:undefined'], 'no deployment version recorded');
			assert.equal(hist.failedTasks, 0);
		} finally {
			await w.shutdown();
			await s.close();
		}
	},
);
