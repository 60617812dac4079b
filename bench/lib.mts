/**
 * Shared bench helpers: the simulator as its own process (one core of its own), bench 3's stack and its time to
 * mitigate, stats, a results table.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { RunbookState } from '../api/runbook/contract.ts';
import { stateQuery } from '../workflows/attackResponse/messages.mts';
import {
	ROOT,
	sleep,
	startTemporalDev,
	startWorkerProcess,
	stopChild,
	type TemporalDev,
	type WorkerProcessOptions,
} from '../demo/stack.mts';

export { ROOT };

export interface SimProcess {
	url: string;
	/** The app credentials the simulator accepts (its workers' too). */
	appId: string;
	secret: string;
	child: ChildProcess;
	/** POST/GET/DELETE on the control API (/__sim/...). */
	control<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
	cpuSeconds(): number;
	stop(): Promise<void>;
}

export async function startSimProcess(appId: string, secret: string, extra: string[] = []): Promise<SimProcess> {
	const child = spawn(
		process.execPath,
		['--import', 'tsx', 'simulator/main.mts', '--port', '0', '--app-id', appId, '--secret', secret, ...extra],
		{
			cwd: ROOT,
			stdio: ['ignore', 'pipe', 'ignore'],
			detached: true,
		},
	);
	const url: string = await new Promise((resolve, reject) => {
		let buf = '';
		const t = setTimeout(() => reject(new Error('simulator did not start within 30 s')), 30_000);
		child.stdout!.on('data', (d: Buffer) => {
			buf += d.toString();
			if (buf.includes('\n')) {
				clearTimeout(t);
				resolve(buf.split('\n')[0].trim());
			}
		});
		child.once('exit', (c) => reject(new Error(`simulator exited with ${c}`)));
	});
	child.stdout!.resume();
	return {
		url,
		appId,
		secret,
		child,
		async control<T>(method: string, path: string, body?: unknown) {
			const r = await fetch(`${url}/__sim${path}`, {
				method,
				headers: body === undefined ? {} : { 'content-type': 'application/json' },
				body: body === undefined ? undefined : JSON.stringify(body),
			});
			const j = (await r.json()) as { code?: number; result?: T; msg?: string };
			if (!r.ok) throw new Error(`control ${method} ${path}: HTTP ${r.status} ${JSON.stringify(j).slice(0, 300)}`);
			return (j && typeof j === 'object' && 'result' in j ? j.result : j) as T;
		},
		cpuSeconds: () => cpuSeconds(child.pid as number),
		stop: () => stopChild(child),
	};
}

/** A worker process on `temporal` serving `taskQueue` against `sim`, with the simulator's credentials. */
export const startSimWorker = (
	temporal: TemporalDev,
	sim: SimProcess,
	taskQueue: string,
	more: Partial<WorkerProcessOptions> = {},
) =>
	startWorkerProcess({
		temporalAddress: temporal.address,
		namespace: temporal.namespace,
		taskQueue,
		simUrl: sim.url,
		appId: sim.appId,
		secret: sim.secret,
		...more,
	});

/** Bench 3's stack on `temporal`: the simulator (its own process), a worker process on a queue of its own, a client. */
export async function startRunbookStack(temporal: TemporalDev, appId: string, secret: string, name: string) {
	const sim = await startSimProcess(appId, secret);
	const taskQueue = `bench-${name}-${process.pid}`;
	const worker = await startSimWorker(temporal, sim, taskQueue);
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const stop = async () => {
		await connection.close();
		await worker.stop();
		await sim.stop();
	};
	return { sim, taskQueue, worker, tc, stop };
}

/** A request in the simulator's log (`GET /__sim/requests`). */
export type SimRequest = { opId?: string; method: string; time: number; body?: unknown };

/** The API writes in a simulator log, tokens left out. */
export const writesOf = (log: SimRequest[]) =>
	log.filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));

/**
 * A runbook's time to mitigate from `t0` (its start), once its state shows it mitigated (20 ms polling): until its
 * last mitigation write has been answered, the later of the workflow's clock after its last write and the simulator's
 * arrival time of that write (+ the injected latency, converted to this process's clock). observedMs (this clock when
 * the state first shows it) is an upper bound, kept as a cross-check; `log` is the simulator's request log.
 */
export async function timeToMitigate(sim: SimProcess, h: WorkflowHandle, t0: number, delayMs: number) {
	let st: RunbookState | undefined;
	for (let k = 0; k < 3000 && !st?.mitigatedAt; k++) {
		await sleep(20);
		st = await h.query(stateQuery).catch(() => undefined);
	}
	if (!st?.mitigatedAt) throw new Error('runbook did not mitigate within 60 s');
	const observedMs = Date.now() - t0;
	const w0 = Date.now();
	const simNow = (await sim.control<{ now: number }>('GET', '/state')).now;
	const offset = simNow - (w0 + Date.now()) / 2;
	const log = await sim.control<SimRequest[]>('GET', '/requests');
	const lastWrite = writesOf(log).reduce((m, r) => Math.max(m, r.time), 0);
	const ms = Math.max(Date.parse(st.mitigatedAt) - t0, lastWrite - offset + delayMs - t0);
	return { ms, observedMs, st, log };
}

/** A level a runbook can target. */
export interface Level {
	customer_id: string;
	site_id: string;
	network_id: string;
	host_id: string;
}

/** Every level of the simulator's world, site by site: the site, each network, each host; and its site count. */
export async function levelsOf(sim: SimProcess): Promise<{ levels: Level[]; sites: number }> {
	const state = await sim.control<{
		sites: { site_id: string; customer_id: string; networks: { network_id: string; hosts: { host_id: string }[] }[] }[];
	}>('GET', '/state');
	const levels: Level[] = [];
	for (const s of state.sites) {
		levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: '0', host_id: '0' });
		for (const n of s.networks) {
			levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: n.network_id, host_id: '0' });
			for (const h of n.hosts)
				levels.push({ customer_id: s.customer_id, site_id: s.site_id, network_id: n.network_id, host_id: h.host_id });
		}
	}
	return { levels, sites: state.sites.length };
}

/** utime + stime of a process in seconds (Linux /proc; 100 ticks per second). */
export function cpuSeconds(pid: number): number {
	try {
		const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
		const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
		return (Number(rest[11]) + Number(rest[12])) / 100;
	} catch {
		return 0;
	}
}

export const median = (xs: number[]) => {
	const s = [...xs].sort((a, b) => a - b);
	const m = Math.floor(s.length / 2);
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

export interface Row {
	bench: string;
	measure: string;
	ours: string;
	baseline: string;
	ratio: string;
	goal: string;
	met: boolean | null;
}

export function table(rows: Row[]): string {
	const head = ['#', 'measure', 'ours', 'baseline', 'ratio', 'goal', 'met'];
	const data = rows.map((r) => [
		r.bench,
		r.measure,
		r.ours,
		r.baseline,
		r.ratio,
		r.goal,
		r.met === null ? '—' : r.met ? 'yes' : 'NO',
	]);
	const w = head.map((h, i) => Math.max(h.length, ...data.map((d) => d[i].length)));
	const line = (cells: string[]) => cells.map((c, i) => c.padEnd(w[i])).join(' | ');
	return [line(head), w.map((n) => '-'.repeat(n)).join('-|-'), ...data.map(line)].join('\n');
}

/** The machine's load average (1, 5, 15 min) as printed beside each figure: timings on a shared machine need it. */
export const loadText = () =>
	loadavg()
		.map((x) => x.toFixed(1))
		.join(' ');

/** The machine a bench ran on, recorded with its results. */
export const machineInfo = () => ({
	cpus: cpus().length,
	cpuModel: cpus()[0]?.model,
	memoryGB: Math.round(totalmem() / 2 ** 30),
	node: process.version,
	loadAverageAtEnd: loadavg().map((x) => round(x, 1)),
});

/**
 * Records a run in bench/results.json: its rows under `bench`, its result under `results[key]`; the run recorded
 * before becomes history (rows `history (…)`, `results[key + 'History']`): nothing measured is lost.
 */
export function recordBench(o: {
	key: string;
	bench: string;
	rows: Row[];
	result: object;
	note: string;
	sortRows?: boolean;
}) {
	const file = `${ROOT}bench/results.json`;
	const doc = JSON.parse(readFileSync(file, 'utf8')) as { rows?: Row[]; results?: Record<string, unknown> };
	const machine = machineInfo();
	const prev = doc.results?.[o.key] as { note?: string; measuredAt?: string } | undefined;
	const label = `history (${prev?.note ?? prev?.measuredAt ?? 'earlier run'})`;
	const old = (doc.rows ?? []).filter((x) => x.bench === o.bench);
	const kept = [
		...o.rows,
		...old.filter((x) => !x.measure.startsWith('history')).map((x) => ({ ...x, measure: `${label}: ${x.measure}` })),
		...old.filter((x) => x.measure.startsWith('history')),
	];
	doc.rows = [...(doc.rows ?? []).filter((x) => x.bench !== o.bench), ...kept];
	if (o.sortRows) doc.rows.sort((a, b) => a.bench.localeCompare(b.bench));
	doc.results ??= {};
	const history = `${o.key}History`;
	if (prev) doc.results[history] = [prev, ...((doc.results[history] as unknown[] | undefined) ?? [])];
	doc.results[o.key] = { ...o.result, note: o.note, measuredAt: new Date().toISOString(), machine };
	writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
	process.stdout.write(`saved bench ${o.bench} to bench/results.json\n`);
}

/** A bench run alone (`node --import tsx bench/x.mts …`): on a dev server of its own; prints the table and result. */
export async function runAlone<R extends { rows: Row[]; result: object }>(run: (t: TemporalDev) => Promise<R>) {
	const temporal = await startTemporalDev();
	let r: R;
	try {
		r = await run(temporal);
	} finally {
		await temporal.stop();
	}
	process.stdout.write(`${table(r.rows)}\n${JSON.stringify(r.result, null, 1)}\n`);
	return r;
}

/** Replaces a bench's rows (those `drop` names) and `results[key]` in bench/results.json (UTF-8, as run.mts writes it). */
export function replaceResults(drop: (x: Row) => boolean, rows: Row[], key: string, result: object) {
	const file = `${ROOT}bench/results.json`;
	const doc = JSON.parse(readFileSync(file, 'utf8')) as { rows: Row[]; results: Record<string, unknown> };
	doc.rows = [...doc.rows.filter((x) => !drop(x)), ...rows];
	doc.results[key] = { at: new Date().toISOString(), ...result };
	writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
	process.stdout.write(`bench/results.json: bench ${rows[0]?.bench} rows and results.${key} updated\n`);
}
