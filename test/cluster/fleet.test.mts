/**
 * The fleet watch on the production-shaped cluster: `secsvc fleet apply` (the CLI on the cluster's TLS env) starts
 * the watchers; an attacked site gets exactly one runbook while quiet sites get none; `secsvc fleet status` shows it.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startSimulator, type RunningSimulator } from '../../simulator/index.mts';
import { watcherId } from '../../workflows/fleet/shared.mts';
import { APP_ID, killChild, SECRET, uniqueQueue, waitFor } from '../temporal/helpers.mts';
import { clusterClient, clusterWorker, ensureCluster, freeSites, secsvc, type ClusterEnv } from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

const FLEET = `cfleet${process.pid}`;
let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
let s: RunningSimulator;
let worker: ReturnType<typeof clusterWorker>;
let queue: string;
const since = new Date().toISOString();

before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
	s = await startSimulator({
		port: 0,
		appId: APP_ID,
		secret: SECRET,
		seed: 12,
		fleet: { customers: 2, sitesPerCustomer: 3 },
	});
	queue = uniqueQueue('cluster-fleet');
	worker = clusterWorker(env, s.url, queue);
	await waitFor(
		'worker ready',
		async () => worker.log().includes('secsvc worker: task queue') || worker.exitCode !== null,
		120_000,
		250,
	);
	assert.equal(worker.exitCode, null, worker.log());
});
after(async () => {
	for (let i = 0; i < 4; i++)
		await client?.workflow
			.getHandle(watcherId(FLEET, i))
			.terminate('test done')
			.catch(() => {});
	if (worker) await killChild(worker, 'SIGTERM');
	await s?.close();
	await client?.close();
});

/** Runbooks of a site started by this test (the cluster keeps earlier runs' closed ones). */
const runbooksOf = async (site: string) => {
	const ids: string[] = [];
	for await (const w of client.workflow.list({
		query: `WorkflowId = 'attack-response-${site}' AND StartTime > '${since}'`,
	}))
		ids.push(w.runId);
	return ids;
};

test('fleet apply over TLS; the attacked site gets one runbook, quiet sites none; fleet status shows it', async () => {
	const sites = s.sim.snapshot().sites.slice(0, 5);
	await freeSites(
		client,
		sites.map((x) => ({ site_id: x.site_id, domain_port_id: x.domain_port_ids[0] })),
	);
	const file = join(scratchDir('secsvc-cfleet-'), 'fleet.json');
	writeFileSync(
		file,
		JSON.stringify({
			fleet: FLEET,
			intervalSeconds: 2,
			sitesPerWatcher: 3,
			batchSize: 3,
			concurrency: 2,
			template: {
				detection: { rapidMode: true, thresholds: [] },
				blacklist: { enabled: false },
				cooldownSeconds: 600,
				pollSeconds: 2,
				maxDurationSeconds: 600,
			},
			sites: sites.map((x) => ({
				customer_id: x.customer_id,
				site_id: x.site_id,
				domain_ports: [x.domain_port_ids[0]],
			})),
		}),
	);
	const cliEnv = { ...env, TEMPORAL_TASK_QUEUE: queue };
	const applied = await secsvc(cliEnv, ['fleet', 'apply', file]);
	assert.equal(applied.code, 0, applied.stderr);
	const attacked = sites[1].site_id;
	const attack = s.sim.startAttack({ site_id: attacked, duration: 0, sources: [{ ip: '198.18.0.3' }] });
	try {
		await waitFor(
			'a runbook for the attacked site',
			async () => (await runbooksOf(attacked)).length === 1,
			90_000,
			500,
		).catch((e) => {
			throw new Error(`${(e as Error).message}\nworker log:\n${worker.log().slice(-3000)}`);
		});
		await new Promise((r) => setTimeout(r, 7000)); // more ticks while the attack goes on
		assert.equal((await runbooksOf(attacked)).length, 1, 'still exactly one');
		for (const q of sites.filter((x) => x.site_id !== attacked))
			assert.equal((await runbooksOf(q.site_id)).length, 0, `no runbook for quiet site ${q.site_id}`);
		const st = await secsvc(cliEnv, ['fleet', 'status', '--fleet', FLEET]);
		assert.equal(st.code, 0, st.stderr);
		assert.match(st.stdout, new RegExp(`^ {2}${attacked} +\\d+ +attack .*attack-response-${attacked} RUNNING`, 'm'));
		assert.match(st.stdout, / 1 under attack, 4 quiet/);
	} finally {
		s.sim.stopAttack(attack.id);
		await client.workflow
			.getHandle(`attack-response-${attacked}`)
			.terminate('test done')
			.catch(() => {});
	}
});
