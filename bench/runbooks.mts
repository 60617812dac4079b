/**
 * Bench 5: N concurrent runbooks on one worker process (fresh per N): all started at once, each tightens detection
 * at its own level (site / network / host of every site; levels are reused past their count, which the runbook's
 * revert handles as "unchanged"), polls is_under_attack through a cooldown and reverts. Measures completion time
 * (first start → last result), peak worker RSS (sampled from /proc every 100 ms) and growth from 50 → 500.
 * The worker is the compiled one with its default node flags (demo/stack.mts startWorkerProcess).
 *
 * Bench 5b (`workers: 2`): the same runbooks over 2 worker processes on one task queue (fresh per N), 500 → 2,000:
 * peak RSS of each worker (the larger one is reported) and completion time of 2,000 against 500 on the same setup.
 *
 * Alone: node --import tsx bench/runbooks.mts [--sizes 50,500] [--workers 1] [--record "note"]
 *   (--workers 2 defaults to --sizes 500,2000) prints the rows; --record appends them as an entry of `updates` in
 *   bench/results.json; a 5b record also replaces the 5b rows of the main table and `results.runbooksWorkers`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { AttackResponseResult } from '../api/runbook/contract.ts';
import type { PlanInput } from '../api/runbook/plan.ts';
import { startAttackResponse } from '../workflows/attackResponse/client.mts';
import { rssOf, type TemporalDev } from '../demo/stack.mts';
import { workerNodeFlags } from '../worker/src/process/build.mts';
import {
	ROOT,
	cpuSeconds,
	round,
	levelsOf,
	machineInfo,
	runAlone,
	startSimProcess,
	startSimWorker,
	type Row,
} from './lib.mts';

const APP_ID = 'bench-runbooks';
const SECRET = 'bench-runbooks-secret-1';

const RESULT_WAITERS = 200;

async function settledLimited<T>(tasks: (() => Promise<T>)[], limit: number): Promise<PromiseSettledResult<T>[]> {
	const out: PromiseSettledResult<T>[] = new Array(tasks.length);
	let next = 0;
	const lane = async () => {
		while (next < tasks.length) {
			const i = next++;
			try {
				out[i] = { status: 'fulfilled', value: await tasks[i]() };
			} catch (reason) {
				out[i] = { status: 'rejected', reason };
			}
		}
	};
	await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
	return out;
}

/** Largest N either mode accepts (bounded loops). */
export const MAX_RUNBOOKS = 2000;

export async function benchRunbooks(
	temporal: TemporalDev,
	o: {
		sizes?: number[];
		workers?: number;
		cooldownSeconds?: number;
		workerEnv?: NodeJS.ProcessEnv;
		workerNodeArgs?: string[];
	} = {},
) {
	const workers = o.workers ?? 1;
	if (!Number.isInteger(workers) || workers < 1 || workers > 4)
		throw new Error(`workers: must be an integer from 1 to 4 (got ${o.workers})`);
	const sizes = o.sizes ?? (workers > 1 ? [500, 2000] : [50, 500]);
	const cooldownSeconds = o.cooldownSeconds ?? 3;
	const sim = await startSimProcess(APP_ID, SECRET);
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const out: {
		n: number;
		completionSeconds: number;
		/** The largest peak RSS of any worker process. */
		peakRssMB: number;
		/** Each worker's peak RSS (bench 5b). */
		peakRssPerWorkerMB?: number[];
		idleRssMB: number;
		workerCpuSeconds: number;
		/** CPU seconds of the Temporal dev server during the run (when the bench started it). */
		devServerCpuSeconds?: number;
		outcomes: Record<string, number>;
		activitiesPerSecond: number;
		runbooksFindingSettingsHeld: number;
	}[] = [];
	try {
		const { levels } = await levelsOf(sim);
		for (const n of sizes) {
			const taskQueue = `bench-rb-${workers}w-${n}-${process.pid}`;
			const procs = await Promise.all(
				Array.from({ length: workers }, () =>
					startSimWorker(temporal, sim, taskQueue, {
						env: o.workerEnv,
						nodeArgs: o.workerNodeArgs,
					}),
				),
			);
			const peaks = procs.map(() => 0);
			const idle = Math.max(...(await Promise.all(procs.map((w) => rssOf(w.pid)))));
			const sample = () =>
				Promise.all(procs.map((w, i) => rssOf(w.pid).then((r) => (peaks[i] = Math.max(peaks[i], r)))));
			const sampler = setInterval(() => void sample(), 100);
			try {
				await sim.control('DELETE', '/requests');
				const cpu0 = procs.reduce((a, w) => a + cpuSeconds(w.pid), 0);
				const serverPid = (temporal as { child?: { pid?: number } }).child?.pid;
				const serverCpu0 = serverPid ? cpuSeconds(serverPid) : 0;
				const t0 = performance.now();
				const handles = await Promise.all(
					Array.from({ length: n }, (_, i) => {
						const l = levels[i % levels.length];
						const plan: PlanInput = {
							...l,
							domain_ports: [],
							detection: { rapidMode: true, thresholds: [{ name: 'total_traffic', factor: 0.5 }] },
							blacklist: { enabled: false, topN: 1, metric: 'bps', minPercent: 0, protectedRanges: [] },
							cooldownSeconds,
							pollSeconds: 1,
							activityTimeoutSeconds: 30,
							maxDurationSeconds: 600,
						};
						return startAttackResponse(tc, taskQueue, plan, {
							workflowId: `bench-rb-${workers}w-${n}-${i}-${Date.now()}`,
						});
					}),
				);
				// Settled, not Promise.all: one failed runbook is counted under its error, the others still finish.
				// At most RESULT_WAITERS result long-polls at once: the dev server refuses more than ~1,200 concurrent long
				// polls per namespace (RESOURCE_EXHAUSTED "namespace concurrent poller limit exceeded"), which the first
				// 2,000-runbook run hit with one long poll per runbook. Later results of runbooks already done return at once.
				const results = await settledLimited(
					handles.map((h) => () => h.result() as Promise<AttackResponseResult>),
					RESULT_WAITERS,
				);
				const secs = (performance.now() - t0) / 1000;
				const outcomes: Record<string, number> = {};
				for (const r of results) {
					const k =
						r.status === 'fulfilled'
							? r.value.outcome
							: `error: ${String((r.reason as Error)?.cause ?? r.reason).slice(0, 120)}`;
					outcomes[k] = (outcomes[k] ?? 0) + 1;
				}
				// Runbooks sharing a level (N > levels) find its settings held by the first one (one owner per setting).
				const heldByOthers = results.filter(
					(r) => r.status === 'fulfilled' && (r.value.heldByOthers?.length ?? 0) > 0,
				).length;
				const workerCpu = procs.reduce((a, w) => a + cpuSeconds(w.pid), 0) - cpu0;
				const serverCpu = serverPid ? cpuSeconds(serverPid) - serverCpu0 : undefined;
				const apiCalls = (await sim.control<unknown[]>('GET', '/requests')).length;
				await sample();
				const mb = (b: number) => round(b / 2 ** 20, 0);
				out.push({
					n,
					completionSeconds: round(secs, 1),
					peakRssMB: mb(Math.max(...peaks)),
					...(workers > 1 ? { peakRssPerWorkerMB: peaks.map(mb) } : {}),
					idleRssMB: mb(idle),
					workerCpuSeconds: round(workerCpu, 1),
					...(serverCpu !== undefined ? { devServerCpuSeconds: round(serverCpu, 1) } : {}),
					outcomes,
					activitiesPerSecond: round(apiCalls / secs, 0),
					runbooksFindingSettingsHeld: heldByOthers,
				});
			} finally {
				clearInterval(sampler);
				await Promise.all(procs.map((w) => w.stop()));
			}
		}
	} finally {
		await connection.close();
		await sim.stop();
	}
	const first = out[0];
	const last = out[out.length - 1];
	const timeRatio = (x: (typeof out)[number]) => x.completionSeconds / first.completionSeconds;
	const rows: Row[] = out.map((x) =>
		workers === 1
			? {
					bench: '5',
					measure: `${x.n} concurrent runbooks on one worker (cooldown ${cooldownSeconds}s): completion · peak RSS`,
					ours: `${x.completionSeconds} s · ${x.peakRssMB} MB`,
					baseline: x === first ? '—' : `${first.n}: ${first.completionSeconds} s · ${first.peakRssMB} MB`,
					ratio:
						x === first
							? '—'
							: `time ${timeRatio(x).toFixed(2)}× · RSS ${(x.peakRssMB / first.peakRssMB).toFixed(2)}× for ${(x.n / first.n).toFixed(0)}× runbooks`,
					goal: 'RSS < 300 MB',
					met: x.peakRssMB < 300 && (x.outcomes.reverted ?? 0) === x.n,
				}
			: {
					bench: '5b',
					measure: `${x.n} concurrent runbooks over ${workers} worker processes (cooldown ${cooldownSeconds}s): completion · peak RSS per worker`,
					ours: `${x.completionSeconds} s · ${x.peakRssPerWorkerMB?.join(' / ')} MB`,
					baseline:
						x === first
							? '—'
							: `${first.n}: ${first.completionSeconds} s · ${first.peakRssPerWorkerMB?.join(' / ')} MB`,
					ratio: x === first ? '—' : `time ${timeRatio(x).toFixed(2)}× for ${(x.n / first.n).toFixed(0)}× runbooks`,
					goal: x === first ? 'RSS < 300 MB per worker' : `RSS < 300 MB per worker · time ≤ 4× of ${first.n}`,
					met: x.peakRssMB < 300 && (x.outcomes.reverted ?? 0) === x.n && (x === first || timeRatio(x) <= 4),
				},
	);
	const flags = o.workerNodeArgs ?? workerNodeFlags({ ...process.env, ...o.workerEnv });
	return {
		result: {
			workers,
			workerNodeFlags: flags,
			sizes: out,
			growth: {
				runbooks: last.n / first.n,
				time: round(last.completionSeconds / first.completionSeconds, 2),
				rss: round(last.peakRssMB / first.peakRssMB, 2),
			},
		},
		rows,
	};
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const { values } = parseArgs({
		options: { sizes: { type: 'string' }, workers: { type: 'string', default: '1' }, record: { type: 'string' } },
	});
	const workers = Number(values.workers);
	const sizes =
		values.sizes === undefined
			? undefined
			: String(values.sizes)
					.split(',')
					.map(Number)
					.filter((n) => Number.isInteger(n) && n > 0 && n <= MAX_RUNBOOKS);
	const r = await runAlone((temporal) => benchRunbooks(temporal, { sizes, workers }));
	if (values.record !== undefined) {
		const file = `${ROOT}bench/results.json`;
		const doc = JSON.parse(readFileSync(file, 'utf8')) as { updates?: unknown[] };
		const machine = machineInfo();
		const at = new Date().toISOString();
		(doc.updates ??= []).push({
			at,
			benches: [workers > 1 ? '5b' : '5'],
			note: values.record,
			machine,
			rows: r.rows,
			results: { [workers > 1 ? 'runbooksWorkers' : 'runbooks']: r.result },
		});
		if (workers > 1) {
			// Bench 5b also goes into the main table (replacing earlier 5b rows), marked with when and where it ran.
			const d = doc as { rows?: Row[]; results?: Record<string, unknown> };
			d.rows = [...(d.rows ?? []).filter((x) => x.bench !== '5b'), ...r.rows].sort((a, b) =>
				a.bench.localeCompare(b.bench),
			);
			(d.results ??= {}).runbooksWorkers = { ...r.result, measuredAt: at, machine };
		}
		// UTF-8 as run.mts writes it (a record adds lines, it does not re-encode the others).
		writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
		process.stdout.write('appended to bench/results.json updates\n');
	}
}
