/**
 * Issue 40: a second worker started with SECSVC_TOKEN_KIND=user on the same refresh token as a running one. The first
 * worker's start renews the user token, and every renewal replaces the refresh token, so the service refuses the
 * second worker's (code 40103). Its one line must name the cause and the cure — the refresh token, another worker
 * renewing it, tenant mode — not the app credentials (which are fine).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { startTemporalDev, type TemporalDev } from '../../demo/stack.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { workerCommand } from '../../worker/src/process/build.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { APP_ID, ROOT, SECRET, startSim, uniqueQueue, waitFor } from './helpers.mts';

let dev: TemporalDev;
let sim: RunningSimulator;
let bundle: string;
const procs: ChildProcess[] = [];

before(async () => {
	bundle = (await workflowBundle()).codePath;
	[dev, sim] = await Promise.all([startTemporalDev(), startSim(40)]);
});
after(async () => {
	for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
	await sim?.close();
	await dev?.stop();
});

function userWorker(queue: string, refreshToken: string) {
	const e: NodeJS.ProcessEnv = { ...process.env };
	for (const k of Object.keys(e)) if (k.startsWith('SECSVC_') || k.startsWith('TEMPORAL_')) delete e[k];
	const cmd = workerCommand();
	const child = spawn(cmd.command, cmd.args, {
		cwd: ROOT,
		env: {
			...e,
			...cmd.env,
			TEMPORAL_ADDRESS: dev.address,
			TEMPORAL_TASK_QUEUE: queue,
			SECSVC_BASE_URL: sim.url,
			SECSVC_APP_ID: APP_ID,
			SECSVC_SECRET: SECRET,
			SECSVC_TOKEN_KIND: 'user',
			SECSVC_REFRESH_TOKEN: refreshToken,
			SECSVC_WORKFLOW_BUNDLE: bundle,
		},
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	procs.push(child);
	let out = '';
	child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
	child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
	const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
	return { child, out: () => out, exit };
}

test(
	'a second user-token worker on a renewed refresh token names the cause and tenant mode',
	{ timeout: 120_000 },
	async () => {
		const { refresh_token } = sim.sim.issueUserTokens(sim.sim.firstIds().customer_id);
		const queue = uniqueQueue('user-token');
		const first = userWorker(queue, refresh_token);
		await waitFor(
			'first worker ready',
			async () => {
				if (first.child.exitCode !== null) throw new Error(`first worker exited: ${first.out()}`);
				return first.out().includes('secsvc worker: task queue');
			},
			60_000,
			100,
		);
		const second = userWorker(queue, refresh_token);
		assert.equal(await second.exit, 1, second.out());
		const line = second.out().trim().split('\n').pop() ?? '';
		assert.match(line, /^secsvc worker: SECSVC_REFRESH_TOKEN \(api\.refreshToken\): the service no longer accepts/);
		assert.match(line, /code 40103/);
		assert.match(line, /another worker \(or n8n\)/);
		assert.match(line, /tenant mode \(SECSVC_TENANTS=1/);
		assert.doesNotMatch(line, /SECSVC_APP_ID \/ SECSVC_SECRET/, 'the app credentials are not the cause');
		assert.equal(first.child.exitCode, null, 'the first worker keeps running');
	},
);
