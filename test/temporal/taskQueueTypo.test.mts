/**
 * Issue 29, a Task Queue typo: the CLI's commands that start a workflow refuse when no worker polls the configured
 * task queue (DescribeTaskQueue), naming the setting, and start nothing; on the polled queue the same commands run.
 * (The Runbook node's Start and block Add: test/n8n/runbook.test.mts.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { env, plan, runCli, startInProcessWorker, startSim, uniqueQueue, useDevServer } from './helpers.mts';

useDevServer();
let dir: string;
before(() => void (dir = mkdtempSync(join(tmpdir(), 'secsvc-tq-typo-'))));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a task queue nobody polls: start, call, drift, report and block add refuse naming it and start nothing', async () => {
	const s = await startSim();
	const ids = s.sim.firstIds();
	const queue = uniqueQueue('tq');
	const typo = `${queue}-typo`;
	const worker = await startInProcessWorker(env, s.url, queue);
	try {
		const planFile = join(dir, 'plan.json');
		writeFileSync(planFile, JSON.stringify(plan(ids, { approval: { required: false } })));
		const desiredFile = join(dir, 'desired.json');
		writeFileSync(
			desiredFile,
			JSON.stringify({
				site_id: ids.site_id,
				customer_id: ids.customer_id,
				domain_ports: { [ids.domain_port_id]: { switches: { p_auth: 0 } } },
			}),
		);
		const commands = [
			['start', '--plan', planFile, '--dry-run'],
			[
				'call',
				'applicationProtection.switch.list',
				'--params',
				JSON.stringify({ site_id: ids.site_id, domain_port_id: ids.domain_port_id }),
			],
			['drift', '--desired', desiredFile],
			['report', '--site', ids.site_id],
			['block', 'add', ids.site_id, ids.domain_port_id, '192.0.2.7', '--seconds', '60', '--by', 'x', '--reason', 'y'],
		];
		for (const argv of commands) {
			const r = await runCli(env, argv, typo);
			assert.equal(r.code, 2, `${argv[0]}: ${r.err}`);
			assert.match(
				r.err,
				new RegExp(`TEMPORAL_TASK_QUEUE: no worker polls task queue "${typo}".*nothing was started`),
				argv[0],
			);
		}
		const started: string[] = [];
		for await (const w of env.client.workflow.list({ query: `TaskQueue = '${typo}'` })) started.push(w.workflowId);
		assert.deepEqual(started, [], 'nothing started on the typo queue');
		// the polled queue: the same start runs (the check is not a blanket refusal)
		const ok = await runCli(env, ['start', '--plan', planFile, '--dry-run', '--wait'], queue);
		assert.equal(ok.code, 0, ok.err);
		assert.match(ok.out, /"outcome": "dry-run"/);
	} finally {
		await worker.shutdown();
		await s.close();
	}
});
