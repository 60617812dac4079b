/**
 * Chaos on the real cluster's processes (scripts/temporal-cluster.sh `kill`, by PID) while runbooks wait under an
 * attack: the history service SIGKILLed and restarted, PostgreSQL shut down immediately (crash recovery) and
 * restarted, the frontend down for 60 s. One worker process throughout; after each, the attacks stop and every
 * runbook completes with every site equal to its snapshot.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	ATTACK_SOURCES,
	killChild,
	liveSettings,
	operatorClient,
	plan,
	siteIds,
	startSim,
	uniqueQueue,
	waitFor,
	type Ids,
} from '../temporal/helpers.mts';
import {
	BASE_PORT,
	SCRIPT,
	clusterClient,
	clusterPids,
	clusterWorker,
	ensureCluster,
	freeSites,
	serviceLog,
	type ClusterEnv,
} from './helpers.mts';

let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
let sim: Awaited<ReturnType<typeof startSim>>;
let op: ReturnType<typeof operatorClient>;
let worker: ReturnType<typeof clusterWorker>;
let queue: string;
let sites: Ids[];
let next = 0;

before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
	sim = await startSim(41);
	op = operatorClient(sim.url);
	sites = siteIds(sim.sim, 4);
	await freeSites(client, sites);
	queue = uniqueQueue('cluster-chaos');
	worker = clusterWorker(env, sim.url, queue);
	await waitFor(
		'worker ready',
		async () => /is now the current version|polling/.test(worker.log()) || worker.exitCode !== null,
		120_000,
		250,
	);
	assert.equal(worker.exitCode, null, worker.log());
});
after(async () => {
	await ensureCluster().catch(() => {}); // leave it whole for the next file
	if (worker) await killChild(worker, 'SIGTERM');
	await op?.close();
	await sim?.close();
	await client?.close();
});

const crash = (name: string) =>
	execFileSync('bash', [SCRIPT, 'kill', name, '--base-port', BASE_PORT], { stdio: ['ignore', 'ignore', 'inherit'] });

/** n runbooks under attack, each waiting; `during` breaks something; then the attacks stop and all must revert exactly. */
async function survive(n: number, during: () => Promise<void>) {
	const mine = sites.slice(next, next + n);
	next += n;
	const snapshots = await Promise.all(mine.map((ids) => liveSettings(op, ids)));
	const attacks = mine.map((ids) =>
		sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES }),
	);
	const handles = await Promise.all(
		mine.map((ids) => startAttackResponse(client, queue, plan(ids, { maxDurationSeconds: 900 }))),
	);
	for (const h of handles)
		await waitFor(`${h.workflowId} waiting`, async () => (await h.query(stateQuery)).phase === 'waiting', 120_000, 500);
	await during();
	for (const a of attacks) sim.sim.stopAttack(a.id);
	const results = (await Promise.all(handles.map((h) => h.result()))) as AttackResponseResult[];
	assert.deepEqual(
		results.map((r) => r.outcome),
		mine.map(() => 'reverted'),
	);
	for (let i = 0; i < mine.length; i++)
		assert.deepEqual(await liveSettings(op, mine[i]), snapshots[i], `site ${mine[i].site_id} equals its snapshot`);
	assert.equal(worker.exitCode, null, 'the worker rode it out');
}

test('history service SIGKILLed and restarted while runbooks wait', async () => {
	await survive(2, async () => {
		const before = clusterPids().history;
		crash('history');
		assert.equal(clusterPids().history, undefined);
		await new Promise((r) => setTimeout(r, 3000));
		await ensureCluster();
		const now = clusterPids().history;
		assert.ok(now && now !== before, `a new history process (${serviceLog(env, 'history')})`);
	});
});

test('PostgreSQL shut down immediately (crash recovery) and restarted while a runbook waits', async () => {
	await survive(1, async () => {
		crash('postgres');
		assert.equal(clusterPids().postgres, undefined);
		await new Promise((r) => setTimeout(r, 5000));
		await ensureCluster();
	});
});

test('the frontend down for 60 s while a runbook waits', async () => {
	await survive(1, async () => {
		crash('frontend');
		await new Promise((r) => setTimeout(r, 60_000));
		await ensureCluster();
	});
});
