/**
 * Issue 43 item 1 / issue 37 item 4: the record a write makes before it sends (worker/src/activities/writeRecord.mts)
 * survives a SIGKILL of its worker right after it: the retry, in the next worker process, reads it. The SDK's heartbeat
 * alone is sent later and asynchronously, so such a kill may lose it (interleave seed 106: the retry took its own entry
 * for a person's); the control case shows how often it did here.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { freePort } from '../../demo/stack.mts';
import { env, killChild, ROOT, uniqueQueue, useDevServer, waitFor } from './helpers.mts';

const SCRIPT = fileURLToPath(new URL('./fixtures/recordThenDie.mts', import.meta.url));

/** The dev server's Prometheus metrics: what it was asked (RecordActivityTaskHeartbeat calls). */
let metricsPort = 0;
useDevServer({ bundle: false, extraArgs: async () => ['--metrics-port', String((metricsPort = await freePort()))] });

/** RecordActivityTaskHeartbeat requests the server's frontend answered so far. */
async function heartbeatsAtServer(): Promise<number> {
	const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
	return text
		.split('\n')
		.filter((l) => l.startsWith('service_requests{') && /operation="RecordActivityTaskHeartbeat"/.test(l))
		.filter((l) => /service_name="frontend"/.test(l))
		.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

function worker(queue: string): ChildProcess {
	const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, env.address, queue], {
		cwd: ROOT,
		stdio: ['ignore', 'pipe', 'inherit'],
	});
	child.stdout?.resume();
	return child;
}

/** Runs the fixture workflow: the first worker process dies right after the record, a second one retries. */
async function killedAfterRecord(mode: 'stored' | 'sdk'): Promise<{ attempt: number; earlier: unknown }> {
	const queue = uniqueQueue(`write-record-${mode}`);
	const first = worker(queue);
	const h = await env.client.workflow.start('recordedWrite', { taskQueue: queue, workflowId: queue, args: [mode] });
	await new Promise<void>((r) => first.once('exit', () => r()));
	assert.equal(first.signalCode, 'SIGKILL', 'the first attempt killed its worker right after the record');
	const second = worker(queue);
	try {
		return (await h.result()) as { attempt: number; earlier: unknown };
	} finally {
		await killChild(second, 'SIGTERM');
	}
}

test('a write record stored before the write survives a SIGKILL right after it; the retry reads it', async () => {
	const r = await killedAfterRecord('stored');
	assert.equal(r.attempt, 2);
	assert.deepEqual(r.earlier, { found: 'listed before the write' });
	const control = await killedAfterRecord('sdk');
	process.stderr.write(
		`[write record] stored: the retry read ${JSON.stringify(r.earlier)}; SDK heartbeat alone: ${JSON.stringify(control.earlier)}\n`,
	);
});

test('a write that records once and ends sends the server one heartbeat: the record, no SDK copy of it', async () => {
	const queue = uniqueQueue('write-record-once');
	const w = worker(queue);
	try {
		const before = await heartbeatsAtServer();
		const r = await env.client.workflow.execute('recordedWrite', {
			taskQueue: queue,
			workflowId: queue,
			args: ['once'],
		});
		assert.deepEqual(r, { attempt: 1, earlier: null });
		// the server's counters are exported as they change; a second heartbeat would be the SDK's, sent at once
		await waitFor('the record counted', async () => (await heartbeatsAtServer()) > before, 10_000, 100);
		await new Promise((res) => setTimeout(res, 2000));
		assert.equal((await heartbeatsAtServer()) - before, 1, 'one RecordActivityTaskHeartbeat: the stored record');
	} finally {
		await killChild(w, 'SIGTERM');
	}
});
