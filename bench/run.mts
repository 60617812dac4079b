/**
 * `npm run bench` (scripts/bench.sh): every benchmark side by side in one run; a table on stdout and
 * bench/results.json. Loopback only, bounded loops.
 *
 *   node --import tsx bench/run.mts [--only 1,2,3,4,5,5b,6,R] [--sizes 50,500] [--sizes-5b 500,2000] [--runs 3] [--items 1000]
 *   bench 7 (fleet watch, ~6 min) runs only when named: --only 7 [--fleet-sites 1000] [--fleet-window 80]
 *   bench 8 (10,000 expiring blocks, ~5 min) runs only when named: --only 8 [--blocks 10000]
 *   bench R (attackers come back: first wave vs a return, a new wave; ~1 min) with R in --only (default on)
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startTemporalDev, type TemporalDev } from '../demo/stack.mts';
import { benchClient } from './client.mts';
import { benchAttack } from './attack.mts';
import { benchReturns } from './returns.mts';
import { benchMetricsCost } from './metricsCost.mts';
import { benchRanges } from './ranges.mts';
import { benchRunbooks, MAX_RUNBOOKS } from './runbooks.mts';
import { benchN8n } from './n8n.mts';
import { benchFleet } from './fleet.mts';
import { benchBlocks, MAX_BLOCKS } from './blocks.mts';
import { ROOT, machineInfo, table, type Row } from './lib.mts';

const { values } = parseArgs({
	options: {
		only: { type: 'string', default: '1,2,3,4,5,5b,6,R' },
		items: { type: 'string', default: '1000' },
		sizes: { type: 'string', default: '50,500' },
		'sizes-5b': { type: 'string', default: '500,2000' },
		runs: { type: 'string', default: '3' },
		'fleet-sites': { type: 'string', default: '1000' },
		'fleet-window': { type: 'string', default: '80' },
		blocks: { type: 'string', default: '10000' },
	},
});
const only = new Set(
	String(values.only)
		.split(',')
		.map((s) => s.trim()),
);
const sizesOf = (v: unknown, max: number) =>
	String(v)
		.split(',')
		.map(Number)
		.filter((n) => Number.isInteger(n) && n > 0 && n <= max);
const sizes = sizesOf(values.sizes, 1000);
const sizes5b = sizesOf(values['sizes-5b'], MAX_RUNBOOKS);
const runs = Math.min(10, Math.max(1, Number(values.runs) || 3));

const rows: Row[] = [];
const results: Record<string, unknown> = {};
const started = new Date();
const loadAtStart = loadavg().map((x) => Math.round(x * 10) / 10);
const note = (s: string) => process.stderr.write(`bench: ${s}\n`);

let temporal: TemporalDev | undefined;
const needTemporal =
	only.has('R') || only.has('3') || only.has('5') || only.has('5b') || only.has('7') || only.has('8');
try {
	if (only.has('6')) {
		note('6 simulator throughput (bench/simulator.mts, 3 s)');
		execFileSync(
			process.execPath,
			['--import', 'tsx', 'bench/simulator.mts', '--seconds', '3', '--connections', '16'],
			{ cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
		);
		const s = JSON.parse(readFileSync(`${ROOT}bench/out/simulator.json`, 'utf8')) as {
			reqPerSec: number;
			latencyMs: { p50: number; p99: number };
			simulatorCpuShare: number;
			connections: number;
		};
		results.simulator = s;
		rows.push({
			bench: '6',
			measure: `simulator throughput, GET is_under_attack, ${s.connections} connections`,
			ours: `${s.reqPerSec} req/s`,
			baseline: '—',
			ratio: `p50 ${s.latencyMs.p50} ms · p99 ${s.latencyMs.p99} ms`,
			goal: '≫ rates of 1–5',
			met: s.reqPerSec >= 2000,
		});
	}
	if (only.has('1')) {
		note('1 client vs raw undici');
		const r = await benchClient();
		results.client = r.result;
		rows.push(...r.rows);
	}
	if (only.has('4')) {
		note('4 10,000 attacker IPs → ranges');
		const r = await benchRanges();
		results.ranges = r.result;
		rows.push(...r.rows);
	}
	if (only.has('2')) {
		const items = Math.min(5000, Math.max(1, Number(values.items) || 1000));
		note(`2 n8n: ${items} items, Security Service node vs HTTP Request node (${runs} runs each)`);
		const r = await benchN8n({ items, runs });
		results.n8n = r.result;
		rows.push(...r.rows);
	}
	if (needTemporal) temporal = await startTemporalDev();
	if (only.has('3') && temporal) {
		note(`3 attack response: runbook vs plain script (${runs} runs per latency)`);
		const r = await benchAttack(temporal, { runs });
		results.attack = r.result;
		rows.push(...r.rows);
		note('3 attack response: metrics on vs off (two workers, runs alternated)');
		const m = await benchMetricsCost(temporal, { runs: Math.max(5, runs) });
		results.metricsCost = m.result;
		rows.push(...m.rows);
	}
	if (only.has('R') && temporal) {
		note(`R attackers come back: a first wave vs a return inside the hold-down, a new wave (${runs} runs, +20 ms)`);
		const r = await benchReturns(temporal, { runs });
		results.returns = r.result;
		rows.push(...r.rows);
	}
	if (only.has('5') && temporal) {
		note(`5 concurrent runbooks on one worker: ${sizes.join(' → ')}`);
		const r = await benchRunbooks(temporal, { sizes });
		results.runbooks = r.result;
		rows.push(...r.rows);
	}
	if (only.has('5b') && temporal) {
		note(`5b concurrent runbooks over 2 worker processes: ${sizes5b.join(' → ')}`);
		const r = await benchRunbooks(temporal, { sizes: sizes5b, workers: 2 });
		results.runbooksWorkers = r.result;
		rows.push(...r.rows);
	}
	if (only.has('7') && temporal) {
		note('7 fleet watch: watchers vs one schedule per site');
		const r = await benchFleet(temporal, {
			sites: Number(values['fleet-sites']),
			window: Number(values['fleet-window']),
		});
		results.fleet = r.result;
		rows.push(...r.rows);
	}
	if (only.has('8') && temporal) {
		const blocks = Math.min(MAX_BLOCKS, Math.max(1, Number(values.blocks) || 10_000));
		note(`8 ${blocks} expiring blocks on one worker (20 sites × 5 domain-ports, durations 60–180 s)`);
		const r = await benchBlocks(temporal, { blocks });
		results.blocks = r.result;
		rows.push(...r.rows);
	}
} finally {
	await temporal?.stop();
}

rows.sort((a, b) => a.bench.localeCompare(b.bench));
const machine = { ...machineInfo(), loadAverageAtStart: loadAtStart };
// The benches not run now keep their recorded rows and results (each row says when it was measured).
const ran = new Set(rows.map((r) => r.bench));
let before: { rows?: Row[]; results?: Record<string, unknown>; runs?: Record<string, unknown>; [k: string]: unknown } =
	{};
try {
	before = JSON.parse(readFileSync(`${ROOT}bench/results.json`, 'utf8'));
} catch {
	// first run
}
const doc = {
	...before,
	at: started.toISOString(),
	seconds: Math.round((Date.now() - started.getTime()) / 1000),
	machine,
	rows: [...(before.rows ?? []).filter((r) => !ran.has(r.bench)), ...rows].sort((a, b) =>
		a.bench.localeCompare(b.bench),
	),
	results: { ...before.results, ...results },
	// when each bench's figures were measured, and on what load
	runs: { ...before.runs, ...Object.fromEntries([...ran].map((b) => [b, { at: started.toISOString(), machine }])) },
};
writeFileSync(`${ROOT}bench/results.json`, `${JSON.stringify(doc, null, 2)}\n`);
const goals = rows.filter((r) => r.met !== null && r.met !== undefined);
process.stdout.write(
	`\n${table(rows)}\n\ngoals of this run (side by side, one run):\n${goals
		.map((r) => `  ${r.met ? 'MET    ' : 'NOT MET'}  bench ${r.bench}: ${r.ratio} (goal ${r.goal}) — ${r.measure}`)
		.join(
			'\n',
		)}\n${goals.every((r) => r.met) ? 'every goal met' : `${goals.filter((r) => !r.met).length} of ${goals.length} goals not met`}\n\nmachine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGB} GB, node ${machine.node}, load average at start ${machine.loadAverageAtStart.join(' ')}, at end ${machine.loadAverageAtEnd.join(' ')}\nsaved bench/results.json (${doc.seconds} s; rows of benches not run kept)\n`,
);
