/**
 * Worker memory probe (bench 5's runbooks, one compiled worker, `--trace-gc` to a log file): where a worker's RSS goes
 * at N runbooks — peak RSS, and in the log each isolate's heap after every full GC ("Mark-Compact a (b) -> live
 * (committed) MB"; two isolates: the main thread and the workflow thread). Not part of run.mts: a diagnosis tool.
 *   N=1000 COOLDOWN=3 FLAGS='--max-old-space-size=512 --max-semi-space-size=2' EXTRA='{"SECSVC_MAX_CACHED_WORKFLOWS":"250"}' \
 *   LOG=/tmp/worker-gc.log node --import tsx bench/workerMemory.mts
 * SNAPSHOT=prefix (with SNAPSHOT_AFTER seconds after the starts, default 20): heap snapshots of the worker's main and
 * workflow-thread isolates at that moment (bench/heapSnapshot.mts; the worker runs with --inspect=127.0.0.1:0).
 * HISTORY=1: the first runbook's history on the dev server afterwards — events and bytes by event type.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { startAttackResponse } from '../workflows/attackResponse/client.mts';
import { rssOf, startTemporalDev, stopChild } from '../demo/stack.mts';
import { DEFAULT_WORKER_NODE_FLAGS, workerCommand } from '../worker/src/process/build.mts';
import { levelsOf, startSimProcess } from './lib.mts';
import { snapshotIsolates } from './heapSnapshot.mts';
import { smapsOf } from './memoryDiag.mts';
const N = Number(process.env.N ?? 1000);
const flags = (process.env.FLAGS ?? DEFAULT_WORKER_NODE_FLAGS.join(' ')).split(' ').filter(Boolean);
const temporal = await startTemporalDev();
const sim = await startSimProcess('probe', 'probe-secret-1');
const conn = await Connection.connect({ address: temporal.address });
const tc = new Client({ connection: conn });
const tq = `probe-${process.pid}`;
const cmd = workerCommand(process.env, [
	...flags,
	'--trace-gc',
	'--trace-gc-ignore-scavenger',
	...(process.env.SNAPSHOT ? ['--inspect=127.0.0.1:0'] : []),
]);
const log = createWriteStream(process.env.LOG ?? '/tmp/probe-worker.log');
const wrap = (process.env.WRAP ?? '').split(' ').filter(Boolean); // e.g. WRAP='heaptrack -o /tmp/w': native allocations by call stack
const child = spawn(wrap[0] ?? cmd.command, wrap.length ? [...wrap.slice(1), cmd.command, ...cmd.args] : cmd.args, {
	env: {
		...process.env,
		...cmd.env,
		...(process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}),
		TEMPORAL_ADDRESS: temporal.address,
		TEMPORAL_NAMESPACE: 'default',
		TEMPORAL_TASK_QUEUE: tq,
		SECSVC_BASE_URL: sim.url,
		SECSVC_APP_ID: 'probe',
		SECSVC_SECRET: 'probe-secret-1',
		SECSVC_TOKEN_KIND: 'app',
		SECSVC_TIMEOUT_MS: '5000',
		SECSVC_RETRIES: '1',
	},
	stdio: ['ignore', 'pipe', 'pipe'],
	detached: true,
});
child.stdout.pipe(log);
child.stderr.pipe(log);
let ready = false;
child.stdout.on('data', (d) => {
	if (String(d).includes('secsvc worker: task queue')) ready = true;
});
let wsUrl = '';
child.stderr.on('data', (d) => {
	const m = /ws:\/\/\S+/.exec(String(d));
	if (m && !wsUrl) wsUrl = m[0];
});
while (!ready) await new Promise((r) => setTimeout(r, 100));
let peak = 0;
const samples: number[] = [];
const t = setInterval(async () => {
	const r = await rssOf(child.pid!);
	peak = Math.max(peak, r);
	samples.push(Math.round(r / 2 ** 20));
}, 250);
const idle = await rssOf(child.pid!);
const { levels, sites } = await levelsOf(sim);
const t0 = Date.now();
const hs = await Promise.all(
	Array.from({ length: N }, (_, i) =>
		startAttackResponse(
			tc,
			tq,
			{
				...levels[i % levels.length],
				domain_ports: [],
				detection: { rapidMode: true, thresholds: [{ name: 'total_traffic', factor: 0.5 }] },
				blacklist: { enabled: false, topN: 1, metric: 'bps', minPercent: 0, protectedRanges: [] },
				cooldownSeconds: Number(process.env.COOLDOWN ?? 3),
				pollSeconds: 1,
				activityTimeoutSeconds: 30,
				maxDurationSeconds: 600,
			},
			{ workflowId: `probe-${i}-${Date.now()}` },
		),
	),
);
if (process.env.SNAPSHOT)
	setTimeout(
		() => {
			const at = Math.round(peak / 2 ** 20);
			snapshotIsolates(wsUrl, process.env.SNAPSHOT!).then(
				(f) => console.log(JSON.stringify({ snapshots: f, rssMBBefore: at })),
				(e) => console.error('snapshot failed', e),
			);
		},
		Number(process.env.SNAPSHOT_AFTER ?? 20) * 1000,
	);
// SMAPS=seconds: the worker's mappings at that moment, resident MB by kind (file-backed, [heap] = malloc's main arena,
// anonymous by size: 64 MB-aligned malloc arenas vs V8 pages), to tell native memory from the V8 heaps.
if (process.env.SMAPS)
	setTimeout(
		() => {
			console.log(JSON.stringify({ smaps: smapsOf(child.pid!) }));
		},
		Number(process.env.SMAPS) * 1000,
	);
for (let i = 0; i < hs.length; i += 200) await Promise.allSettled(hs.slice(i, i + 200).map((h) => h.result()));
console.log(
	JSON.stringify({
		N,
		flags,
		extra: process.env.EXTRA,
		levels: levels.length,
		sites,
		seconds: (Date.now() - t0) / 1000,
		idleMB: Math.round(idle / 2 ** 20),
		peakMB: Math.round(peak / 2 ** 20),
		samples: samples.filter((_, i) => i % 20 === 0),
	}),
);
clearInterval(t);
if (process.env.HISTORY) {
	const { temporal: proto } = (await import('@temporalio/proto')).default as typeof import('@temporalio/proto');
	const h = await tc.workflowService.getWorkflowExecutionHistory({
		namespace: 'default',
		execution: { workflowId: hs[0].workflowId },
	});
	const by: Record<string, { n: number; bytes: number }> = {};
	for (const e of h.history?.events ?? []) {
		const k = String(proto.api.enums.v1.EventType[e.eventType ?? 0]);
		const b = proto.api.history.v1.HistoryEvent.encode(e).finish().length;
		(by[k] ??= { n: 0, bytes: 0 }).n++;
		by[k].bytes += b;
	}
	console.log(
		JSON.stringify({
			history: {
				events: h.history?.events?.length,
				bytes: proto.api.history.v1.History.encode(h.history ?? {}).finish().length,
				by,
			},
		}),
	);
}
await stopChild(child);
await conn.close();
await sim.stop();
await temporal.stop();
