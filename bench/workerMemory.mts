/**
 * Worker memory probe (bench 5's runbooks, one compiled worker, `--trace-gc` to a log file): where a worker's RSS goes
 * at N runbooks — peak RSS, and in the log each isolate's heap after every full GC ("Mark-Compact a (b) -> live
 * (committed) MB"; two isolates: the main thread and the workflow thread). Not part of run.mts: a diagnosis tool.
 *   N=1000 COOLDOWN=3 FLAGS='--max-old-space-size=512 --max-semi-space-size=2' EXTRA='{"SECSVC_MAX_CACHED_WORKFLOWS":"250"}' \
 *   LOG=/tmp/worker-gc.log node --import tsx bench/workerMemory.mts
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { startAttackResponse } from '../worker/src/runbooks.mts';
import { rssOf, startTemporalDev, stopChild } from '../demo/stack.mts';
import { workerCommand } from '../worker/src/build.mts';
import { startSimProcess } from './lib.mts';
const N = Number(process.env.N ?? 1000);
const flags = (process.env.FLAGS ?? '--max-old-space-size=512 --max-semi-space-size=2').split(' ').filter(Boolean);
const temporal = await startTemporalDev();
const sim = await startSimProcess('probe', 'probe-secret-1');
const conn = await Connection.connect({ address: temporal.address });
const tc = new Client({ connection: conn });
const tq = `probe-${process.pid}`;
const cmd = workerCommand(process.env, [...flags, '--trace-gc', '--trace-gc-ignore-scavenger']);
const log = createWriteStream(process.env.LOG ?? '/tmp/probe-worker.log');
const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env, ...(process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}), TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: 'default', TEMPORAL_TASK_QUEUE: tq, SECSVC_BASE_URL: sim.url, SECSVC_APP_ID: 'probe', SECSVC_SECRET: 'probe-secret-1', SECSVC_TOKEN_KIND: 'app', SECSVC_TIMEOUT_MS: '5000', SECSVC_RETRIES: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
child.stdout.pipe(log); child.stderr.pipe(log);
let ready = false; child.stdout.on('data', (d) => { if (String(d).includes('secsvc worker: task queue')) ready = true; });
while (!ready) await new Promise((r) => setTimeout(r, 100));
let peak = 0; const samples: number[] = [];
const t = setInterval(async () => { const r = await rssOf(child.pid!); peak = Math.max(peak, r); samples.push(Math.round(r / 2 ** 20)); }, 250);
const idle = await rssOf(child.pid!);
const state = await sim.control<any>('GET', '/state');
const levels: any[] = [];
for (const s of state.sites) { levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: '0', host_id: '0' }); for (const n of s.networks) { levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: n.network_id, host_id: '0' }); for (const h of n.hosts) levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: n.network_id, host_id: h.host_id }); } }
const t0 = Date.now();
const hs = await Promise.all(Array.from({ length: N }, (_, i) => startAttackResponse(tc, tq, { ...levels[i % levels.length], domain_ports: [], detection: { rapidMode: true, thresholds: [{ name: 'total_traffic', factor: 0.5 }] }, blacklist: { enabled: false, topN: 1, metric: 'bps', minPercent: 0, protectedRanges: [] }, cooldownSeconds: Number(process.env.COOLDOWN ?? 3), pollSeconds: 1, activityTimeoutSeconds: 30, maxDurationSeconds: 600 } as any, { workflowId: `probe-${i}-${Date.now()}` })));
let done = 0;
for (let i = 0; i < hs.length; i += 200) { await Promise.allSettled(hs.slice(i, i + 200).map((h) => h.result())); done = i + 200; }
console.log(JSON.stringify({ N, flags, extra: process.env.EXTRA, levels: levels.length, sites: state.sites.length, seconds: (Date.now() - t0) / 1000, idleMB: Math.round(idle / 2 ** 20), peakMB: Math.round(peak / 2 ** 20), samples: samples.filter((_, i) => i % 20 === 0) }));
clearInterval(t);
await stopChild(child); await conn.close(); await sim.stop(); await temporal.stop();
