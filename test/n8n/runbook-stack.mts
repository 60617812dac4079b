// What the Runbook node's end-to-end tests share (runbook.test.mts, runbook-decide-blocks.test.mts): the simulator,
// the real Temporal dev server, the worker process, a Temporal client, and an n8n user folder with the packed package
// and the Temporal credential imported; Runbook node JSON for `chain()` workflows; a bounded wait.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { startSimulator } from '../../simulator/index.mts';
import { startTemporalDev, startWorkerProcess, type TemporalDev, type WorkerProcess } from '../../demo/stack.mts';
import { freePort, makeN8nHome, n8nCli, packPackage, type N8nHome } from './harness.mts';
import { scratchDir } from '../helpers/scratch.mts';

// This file's runbooks are approved by a typed name: its workers opt in to unverified approvals (issue 41).
process.env.SECSVC_UNVERIFIED_APPROVALS ??= '1';

export const TEMPORAL_CRED = { id: 'temporalCred001', name: 'Temporal (dev server)' };

export interface RunbookStack {
	sim: Awaited<ReturnType<typeof startSimulator>>;
	ids: { customer_id: string; site_id: string; domain_port_id: string };
	temporal: TemporalDev;
	worker: WorkerProcess;
	connection: Connection;
	client: Client;
	home: N8nHome;
	/** Writes the workflows to files and imports them with `n8n import:workflow --separate`. */
	importWorkflows(workflows: Array<{ id: string }>): Promise<void>;
	stop(): Promise<void>;
}

/** `workerEnv`: more settings for the worker process; `credential`: more fields of the Temporal credential. */
export async function startRunbookStack(o: {
	appId: string;
	secret: string;
	taskQueue: string;
	label: string;
	workerEnv?: Record<string, string>;
	credential?: Record<string, string>;
}): Promise<RunbookStack> {
	const sim = await startSimulator({ port: 0, appId: o.appId, secret: o.secret, seed: 7 });
	const temporal = await startTemporalDev();
	const worker = await startWorkerProcess({
		temporalAddress: temporal.address,
		taskQueue: o.taskQueue,
		simUrl: sim.url,
		appId: o.appId,
		secret: o.secret,
		...(o.workerEnv ? { env: o.workerEnv } : {}),
	});
	const connection = await Connection.connect({ address: temporal.address });
	const client = new Client({ connection, namespace: 'default' });
	// The node's Start checks the server's pollers (DescribeTaskQueue); the worker's ready line comes before its first
	// poll reaches the server, a gap an n8n CLI process's start used to cover (docs/test-runs.md session 22).
	await workflowPoller(client, o.taskQueue, 60_000);

	const work = scratchDir(`secsvc-${o.label}-`);
	const home = makeN8nHome(packPackage(join(work, 'pack')));
	home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
	writeFileSync(
		join(work, 'creds.json'),
		JSON.stringify([
			{
				...TEMPORAL_CRED,
				type: 'temporalApi',
				data: { address: temporal.httpUrl, namespace: 'default', apiKey: '', ...o.credential },
			},
		]),
	);
	const r1 = await n8nCli(home, ['import:credentials', `--input=${join(work, 'creds.json')}`]);
	assert.equal(r1.code, 0, `import:credentials failed:\n${r1.stdout}\n${r1.stderr}`);

	return {
		sim,
		ids: sim.sim.firstIds(),
		temporal,
		worker,
		connection,
		client,
		home,
		async importWorkflows(workflows) {
			const wfDir = join(work, 'wf');
			mkdirSync(wfDir, { recursive: true });
			for (const wf of workflows) writeFileSync(join(wfDir, `${wf.id}.json`), JSON.stringify(wf));
			const r2 = await n8nCli(home, ['import:workflow', '--separate', `--input=${wfDir}`]);
			assert.equal(r2.code, 0, `import:workflow failed:\n${r2.stdout}\n${r2.stderr}`);
		},
		async stop() {
			await connection.close().catch(() => {});
			await worker.stop();
			await temporal.stop();
			await sim.close();
			home.cleanup();
		},
	};
}

/** Runbook node JSON for `chain()`; node ids start with `idPrefix` (8 hex digits) so each test file's ids are its own. */
export function runbookNodes(idPrefix: string) {
	let n = 0;
	return (
		name: string,
		parameters: Record<string, unknown>,
		o: { continueOnFail?: boolean; executeOnce?: boolean } = {},
	) => {
		n++;
		return {
			id: `${idPrefix}-0000-4000-8000-${String(n).padStart(12, '0')}`,
			name,
			type: 'CUSTOM.securityServiceRunbook',
			typeVersion: 1,
			position: [200 + n * 200, 300],
			parameters,
			credentials: { temporalApi: TEMPORAL_CRED },
			...(o.continueOnFail ? { onError: 'continueRegularOutput' } : {}),
			...(o.executeOnce ? { executeOnce: true } : {}),
		};
	};
}

export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
	return Promise.race([
		p,
		new Promise<T>((_, rej) => setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms).unref()),
	]);
}

async function workflowPoller(client: Client, taskQueue: string, ms: number): Promise<void> {
	for (const end = Date.now() + ms; Date.now() < end; ) {
		const r = await client.workflowService.describeTaskQueue({
			namespace: 'default',
			taskQueue: { name: taskQueue },
			taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
		});
		if (r.pollers?.length) return;
		await new Promise((res) => setTimeout(res, 250));
	}
	throw new Error(`no poller on task queue ${taskQueue} at the server within ${ms} ms`);
}
