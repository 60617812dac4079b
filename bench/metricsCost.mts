/**
 * Bench 3, metrics cost: the runbook's time to mitigate (bench/attack.mts timeRunbook) on a worker serving Prometheus
 * /metrics (SECSVC_METRICS_ADDRESS: SDK runtime metrics + ours, worker/src/process/metrics.mts) vs the same worker without,
 * in one run: two worker processes on their own task queues, runs alternated, medians compared. Goal ≤ 1.05×.
 *
 *   node --import tsx bench/metricsCost.mts [--runs 7] [--delays 0,20]   (alone: merges its rows into bench/results.json)
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { freePort, startTemporalDev, type TemporalDev, type WorkerProcess } from '../demo/stack.mts';
import { timeRunbook } from './attack.mts';
import { median, ROOT, round, startSimProcess, startSimWorker, type Row } from './lib.mts';

const APP_ID = 'bench-attack';
const SECRET = 'bench-attack-secret-1';

export async function benchMetricsCost(temporal: TemporalDev, o: { runs?: number; delays?: number[] } = {}) {
	const runs = o.runs ?? 7;
	const delays = o.delays ?? [0, 20];
	const sim = await startSimProcess(APP_ID, SECRET);
	const port = await freePort();
	const workers: Record<'off' | 'on', { queue: string; w?: WorkerProcess }> = {
		off: { queue: `bench-metrics-off-${process.pid}` },
		on: { queue: `bench-metrics-on-${process.pid}` },
	};
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const out: { delayMs: number; offMs: number[]; onMs: number[]; scrapedSeries: number }[] = [];
	try {
		workers.off.w = await startSimWorker(temporal, sim, workers.off.queue);
		workers.on.w = await startSimWorker(temporal, sim, workers.on.queue, {
			env: { SECSVC_METRICS_ADDRESS: `127.0.0.1:${port}` },
		});
		for (const delayMs of delays) {
			const offMs: number[] = [];
			const onMs: number[] = [];
			await timeRunbook(sim, tc, workers.off.queue, delayMs, -1); // warm both (first runs pay JIT and caches)
			await timeRunbook(sim, tc, workers.on.queue, delayMs, -2);
			for (let i = 0; i < runs; i++) {
				// alternate which goes first, so a drift of the machine's load hits both sides alike
				const order = i % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const);
				for (const k of order)
					(k === 'on' ? onMs : offMs).push((await timeRunbook(sim, tc, workers[k].queue, delayMs, i)).ms);
			}
			const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
			out.push({ delayMs, offMs, onMs, scrapedSeries: text.split('\n').filter((l) => l && !l.startsWith('#')).length });
		}
	} finally {
		await connection.close();
		await workers.off.w?.stop();
		await workers.on.w?.stop();
		await sim.stop();
	}
	const rows: Row[] = out.map((x) => {
		const on = median(x.onMs);
		const off = median(x.offMs);
		return {
			bench: '3',
			measure: `time to mitigate: runbook with Prometheus metrics on vs off (median of ${x.onMs.length}), API latency +${x.delayMs} ms`,
			ours: `${round(on, 0)} ms`,
			baseline: `${round(off, 0)} ms`,
			ratio: `${(on / off).toFixed(2)}×`,
			goal: '≤ 1.05×',
			met: on / off <= 1.05,
		};
	});
	return {
		result: out.map((x) => ({
			...x,
			onMedianMs: round(median(x.onMs), 1),
			offMedianMs: round(median(x.offMs), 1),
			ratio: round(median(x.onMs) / median(x.offMs), 3),
		})),
		rows,
	};
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { values } = parseArgs({
		options: { runs: { type: 'string', default: '7' }, delays: { type: 'string', default: '0,20' } },
	});
	const temporal = await startTemporalDev();
	try {
		const r = await benchMetricsCost(temporal, {
			runs: Number(values.runs),
			delays: values.delays.split(',').map(Number),
		});
		for (const row of r.rows)
			process.stdout.write(
				`${row.measure}: ${row.ours} vs ${row.baseline} = ${row.ratio} (${row.met ? 'met' : 'NOT met'})\n`,
			);
		// merge into bench/results.json: replace this bench's rows, keep everything else
		const file = `${ROOT}bench/results.json`;
		const doc = JSON.parse(readFileSync(file, 'utf8'));
		doc.rows = [...doc.rows.filter((x: Row) => !x.measure.includes('metrics on vs off')), ...r.rows].sort(
			(a: Row, b: Row) => a.bench.localeCompare(b.bench),
		);
		doc.results = { ...doc.results, metricsCost: { at: new Date().toISOString(), ...{ runs: r.result } } };
		writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
	} finally {
		await temporal.stop();
	}
}
