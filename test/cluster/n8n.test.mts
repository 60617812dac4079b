/**
 * The Runbook node in the real n8n 2.40.7 (`n8n execute`, the packed package) against the cluster's HTTP API over
 * mutual TLS: the Temporal credential holds the cluster's CA, a client certificate and its key (PEM text); the node
 * starts a runbook that needs approval and decides it, and the runbook mitigates. Bad credentials are refused with
 * one line naming the credential field: no client certificate, a key that is not the certificate's, plain http://
 * to the TLS port, no CA for the private one.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import proto from '@temporalio/proto';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { ATTACK_SOURCES, killChild, startSim, uniqueQueue, waitFor } from '../temporal/helpers.mts';
import {
	freePort,
	makeN8nHome,
	n8nCli,
	nodeOutput,
	packPackage,
	parseRawOutput,
	type N8nHome,
} from '../n8n/harness.mts';
import { runbookNodes } from '../n8n/runbook-stack.mts';
import { chain } from '../n8n/workflows.mts';
import { clusterClient, clusterWorker, ensureCluster, freeSites, tokenOf, type ClusterEnv } from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
let sim: Awaited<ReturnType<typeof startSim>>;
let worker: ReturnType<typeof clusterWorker>;
let home: N8nHome;
let queue: string;
const rb = runbookNodes('28000000');
const cred = (id: string, name: string) => ({ id, name });
const CREDS = {
	tls: cred('tempTls000001', 'Temporal cluster (mTLS)'),
	noCert: cred('tempTls000002', 'Temporal cluster (CA only)'),
	wrongKey: cred('tempTls000003', 'Temporal cluster (wrong key)'),
	plain: cred('tempTls000004', 'Temporal cluster (http://)'),
	noCa: cred('tempTls000005', 'Temporal cluster (no CA)'),
};
const using = (node: ReturnType<typeof rb>, c: { id: string; name: string }) => ({
	...node,
	credentials: { temporalApi: c },
});

async function execute(id: string) {
	const r = await n8nCli(home, ['execute', `--id=${id}`, '--rawOutput']);
	assert.equal(r.code, 0, `n8n execute ${id} failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	return parseRawOutput(r.stdout);
}

before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
	sim = await startSim(51);
	queue = uniqueQueue('cluster-n8n');
	const work = scratchDir('secsvc-cluster-n8n-');
	home = makeN8nHome(packPackage(join(work, 'pack')));
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
	const pem = (p: string) => readFileSync(p, 'utf8');
	// n8n's Temporal API credential sends its API Key as the bearer token: the temporal-n8n client's (NS:write)
	const apiKey = await tokenOf(env, 'temporal-n8n');
	const base = { address: env.SECSVC_TEMPORAL_HTTP_URL, namespace: env.TEMPORAL_NAMESPACE, apiKey };
	const full = {
		...base,
		caCertificate: pem(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH),
		clientCertificate: pem(env.TEMPORAL_TLS_CLIENT_CERT_PATH),
		clientPrivateKey: pem(env.TEMPORAL_TLS_CLIENT_KEY_PATH),
	};
	const creds = [
		{ ...CREDS.tls, data: full },
		{ ...CREDS.noCert, data: { ...base, caCertificate: full.caCertificate } },
		{
			...CREDS.wrongKey,
			data: { ...full, clientPrivateKey: pem(`${env.SECSVC_CLUSTER_DIR}/certs/system-worker.key`) },
		},
		{ ...CREDS.plain, data: { ...base, address: env.SECSVC_TEMPORAL_HTTP_URL.replace('https://', 'http://') } },
		{ ...CREDS.noCa, data: { ...full, caCertificate: '' } },
	].map((c) => ({ ...c, type: 'temporalApi' }));
	writeFileSync(join(work, 'creds.json'), JSON.stringify(creds));
	const r1 = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
	assert.equal(r1.code, 0, r1.stderr);

	const ids = sim.sim.firstIds();
	await freeSites(client, [ids]);
	const plan = {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		approval: { required: true, timeoutSeconds: 300, onTimeout: 'reject', approvers: ['oncall-alice'] },
		blacklist: { enabled: true, topN: 5, metric: 'bps', minPercent: 0, protectedRanges: [] },
		cooldownSeconds: 2,
		pollSeconds: 1,
		activityTimeoutSeconds: 10,
	};
	const wfDir = join(work, 'wf');
	mkdirSync(wfDir);
	const start = (c: { id: string; name: string }, name: string) =>
		using(
			rb(
				name,
				{ operation: 'start', plan: JSON.stringify(plan), taskQueue: queue, dryRun: false, workflowId: '' },
				{ continueOnFail: c !== CREDS.tls },
			),
			c,
		);
	const wfs = [
		chain('wfClusterTls01', 'Runbook over mTLS: start', [start(CREDS.tls, 'Start runbook')]),
		chain('wfClusterTls02', 'Runbook over mTLS: decide', [
			using(
				rb('Alice approves', {
					operation: 'decide',
					runbook: ids.site_id,
					decision: 'approve',
					by: 'oncall-alice',
					reason: 'confirmed',
				}),
				CREDS.tls,
			),
		]),
		chain('wfClusterTls03', 'Runbook over mTLS: bad credentials', [
			start(CREDS.noCert, 'No client certificate'),
			start(CREDS.wrongKey, 'Wrong key'),
			start(CREDS.plain, 'Plain http'),
			start(CREDS.noCa, 'No CA'),
		]),
	];
	for (const wf of wfs) writeFileSync(join(wfDir, `${wf.id}.json`), JSON.stringify(wf));
	const r2 = await n8nCli(home, ['import:workflow', '--separate', `--input=${wfDir}`]);
	assert.equal(r2.code, 0, r2.stderr);
	// The worker after the synchronous npm steps above: they block this process, which serves the simulator.
	worker = clusterWorker(env, sim.url, queue);
	await waitFor(
		'worker ready',
		async () => /is now the current version|polling/.test(worker.log()) || worker.exitCode !== null,
		120_000,
		250,
	);
	assert.equal(worker.exitCode, null, worker.log());
	// The node's Start checks the server's pollers (DescribeTaskQueue): the worker's log line comes before its first
	// poll reaches the server. An n8n CLI process's start (seconds) used to cover that gap; one process per folder
	// runs the first execute within a second of the imports, and it was refused "no worker polls" (session 22).
	await waitFor(
		'the server sees a poller on the task queue',
		async () =>
			((
				await client.workflowService.describeTaskQueue({
					namespace: env.TEMPORAL_NAMESPACE,
					taskQueue: { name: queue },
					taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
				})
			).pollers?.length ?? 0) > 0,
		60_000,
		250,
	);
});

after(async () => {
	if (worker) await killChild(worker, 'SIGTERM');
	await sim?.close();
	await client?.close();
	home?.cleanup();
});

test('the Runbook node starts and decides a runbook through the TLS HTTP API; the runbook mitigates and reverts', async () => {
	const ids = sim.sim.firstIds();
	const attack = sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const started = nodeOutput(await execute('wfClusterTls01'), 'Start runbook')[0];
	assert.equal(started.workflowId, `attack-response-${ids.site_id}`);
	const h = client.workflow.getHandle(String(started.workflowId));
	await waitFor(
		'awaiting approval',
		async () => (await h.query(stateQuery)).phase === 'awaiting-approval',
		60_000,
		500,
	);
	const [ok] = nodeOutput(await execute('wfClusterTls02'), 'Alice approves');
	assert.deepEqual([ok.accepted, ok.decision, ok.by, ok.via], [true, 'approved', 'oncall-alice', 'n8n']);
	await waitFor('mitigating', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000, 500);
	sim.sim.stopAttack(attack.id);
	const r = (await h.result()) as AttackResponseResult;
	assert.equal(r.outcome, 'reverted');
});

test('bad Temporal credentials: one line naming the credential field', async () => {
	const run = await execute('wfClusterTls03');
	const err = (name: string) => String(nodeOutput(run, name)[0].error);
	assert.equal(
		err('No client certificate'),
		'Temporal API credential › Client Certificate: the server requires a client certificate (mutual TLS)',
	);
	assert.equal(
		err('Wrong key'),
		'Temporal API credential › Client Private Key: is not the key of the Client Certificate',
	);
	assert.match(
		err('Plain http'),
		/^Temporal API credential › HTTP API Address: the server (speaks TLS: use https:\/\/|closed the connection — a TLS port\? then use https:\/\/)$/,
	);
	assert.match(
		err('No CA'),
		/^Temporal API credential › Server CA Certificate: the server's certificate is not signed by this CA/,
	);
});
