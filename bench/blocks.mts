/**
 * Bench 8: N active expiring blocks on one worker (compiled, as deployed) + dev server + simulator.
 * The simulator holds a fleet of SITES × DPS domain-ports (scenario `fleet`); block i goes to domain-port i mod
 * (SITES × DPS) with its own address (100.64.0.0 + i) and a duration spread evenly over the window
 * (`windowStart` … `windowStart + windowSeconds` seconds after its add). Adds go in bulk `addBlocks` Updates
 * (Update-with-start, as `secsvc block add --file` does) of up to `bulk` blocks of one domain-port (default 100: at
 * 10,000 blocks one Update per domain-port), `concurrency` Updates at once; `--bulk 1` = one `addBlock` Update per
 * block (as the CLI does for one entry). Then the bench waits until every block's DELETE is in the simulator's
 * request log. Measured:
 *  - add throughput (blocks / s from the first add sent to the last add answered);
 *  - removal lateness: the DELETE's time in the simulator's log minus the block's `expiresAt` (p50 / p99 / max);
 *  - API writes per block from the log: exactly one POST (add) and one DELETE naming it (no duplicate, none missing);
 *  - peak worker RSS (/proc every 100 ms) and worker CPU seconds (/proc/<pid>/stat) over the whole run.
 *
 * Alone: node --import tsx bench/blocks.mts [--blocks 10000] [--sites 20] [--dps 5] [--window-start 60]
 *   [--window 120] [--bulk 100] [--concurrency 50] [--record "note"]   (--record stores `results.blocks` and the bench-8 rows in bench/results.json)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { addBlock, addBlocks } from '../workflows/blocks/client.mts';
import { MAX_BULK_BLOCKS, type Block } from '../workflows/blocks/shared.mts';
import { rssOf, sleep, type TemporalDev } from '../demo/stack.mts';
import { cpuSeconds, pct, recordBench, round, runAlone, startSimProcess, startSimWorker, type Row } from './lib.mts';

const APP_ID = 'bench-blocks';
const SECRET = 'bench-blocks-secret-1';
const OP_ADD = 'applicationProtection.ipBlacklist.add';
const OP_REMOVE = 'applicationProtection.ipBlacklist.remove';
const OP_GET = 'applicationProtection.ipBlacklist.get';
export const MAX_BLOCKS = 20_000;

interface LogEntry {
	seq: number;
	time: number;
	method: string;
	query: Record<string, string | string[]>;
	body: unknown;
	status: number;
	code: number | null;
}

export interface BlocksBenchOptions {
	blocks?: number;
	sites?: number;
	dpsPerSite?: number;
	/** Shortest block duration (s). */
	windowStart?: number;
	/** Durations are spread over this many seconds after windowStart. */
	windowSeconds?: number;
	/** Adds (Updates) in flight at once (bench client). */
	concurrency?: number;
	/**
	 * Blocks per add: 1 = one `addBlock` Update per block; more = bulk `addBlocks`
	 * Updates of up to this many blocks of one domain-port (a threat feed), each block keeping its own duration.
	 */
	bulk?: number;
	workerEnv?: NodeJS.ProcessEnv;
}

/** The simulator writes a single address as `a.b.c.d`, a block's range is `start-end`: compare as `start-end`. */
const asRange = (e: string) => (e.includes('-') ? e : `${e}-${e}`);
const ipOf = (i: number) => `100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;

export async function benchBlocks(temporal: TemporalDev, o: BlocksBenchOptions = {}) {
	const n = o.blocks ?? 10_000;
	const sites = o.sites ?? 20;
	const dpsPerSite = o.dpsPerSite ?? 5;
	const windowStart = o.windowStart ?? 60;
	const windowSeconds = o.windowSeconds ?? 120;
	const concurrency = o.concurrency ?? 50;
	const bulk = o.bulk ?? 100;
	if (!Number.isInteger(bulk) || bulk < 1 || bulk > MAX_BULK_BLOCKS)
		throw new Error(`bulk: must be an integer from 1 to ${MAX_BULK_BLOCKS}`);
	if (!Number.isInteger(n) || n < 1 || n > MAX_BLOCKS)
		throw new Error(`blocks: must be an integer from 1 to ${MAX_BLOCKS}`);
	if (!Number.isInteger(sites) || sites < 1 || sites > 1000)
		throw new Error('sites: must be an integer from 1 to 1000');
	if (!Number.isInteger(dpsPerSite) || dpsPerSite < 1 || dpsPerSite > 8)
		throw new Error('dpsPerSite: must be an integer from 1 to 8 (the simulator fleet allows 8)');
	if (!Number.isInteger(windowStart) || windowStart < 5)
		throw new Error('windowStart: must be an integer of at least 5 s');
	if (!Number.isInteger(windowSeconds) || windowSeconds < 0 || windowSeconds > 3600)
		throw new Error('windowSeconds: must be an integer from 0 to 3600');

	// The fleet as a scenario: `sites` sites of one customer (ids 210001…), `dpsPerSite` domain-ports each.
	const dir = mkdtempSync(join(tmpdir(), 'bench-blocks-'));
	const scenarioFile = join(dir, 'scenario.json');
	writeFileSync(
		scenarioFile,
		JSON.stringify({ fleet: { customers: 1, sitesPerCustomer: sites, domainPortsPerSite: dpsPerSite } }),
	);
	// Every request of the run stays in the log (adds + reads + removes ≈ 3 per block).
	const sim = await startSimProcess(APP_ID, SECRET, [
		'--scenario',
		scenarioFile,
		'--log-limit',
		String(4 * n + 10_000),
	]);
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const taskQueue = `bench-blocks-${n}-${process.pid}-${Date.now()}`;
	const worker = await startSimWorker(temporal, sim, taskQueue, {
		env: o.workerEnv,
	});
	let peak = 0;
	const sampler = setInterval(() => void rssOf(worker.pid).then((r) => (peak = Math.max(peak, r))), 100);
	try {
		const state = await sim.control<{ domainPorts: { site_id: string; domain_port_id: string }[] }>('GET', '/state');
		const dps = state.domainPorts.filter((d) => Number(d.site_id) >= 210001);
		if (dps.length !== sites * dpsPerSite)
			throw new Error(`the simulator's fleet has ${dps.length} domain-ports, expected ${sites * dpsPerSite}`);
		const idleRss = await rssOf(worker.pid);
		await sim.control('DELETE', '/requests');
		const cpu0 = cpuSeconds(worker.pid);
		const serverCpu0 = cpuSeconds(temporal.child.pid as number);
		const simCpu0 = sim.cpuSeconds();
		const addLatency: number[] = [];
		const load0 = loadavg();

		// Adds.
		const blocks: Block[] = new Array(n);
		const addErrors: string[] = [];
		// The adds: chunks of `bulk` blocks of one domain-port (block i on domain-port i mod #dps), in order of i.
		const chunks: number[][] = [];
		for (let k = 0; k < dps.length; k++) {
			const mine: number[] = [];
			for (let i = k; i < n; i += dps.length) mine.push(i);
			for (let j = 0; j < mine.length; j += bulk) chunks.push(mine.slice(j, j + bulk));
		}
		chunks.sort((a, b) => a[0] - b[0]);
		const reqOf = (i: number) => ({
			entry: ipOf(i),
			seconds: windowStart + Math.floor((windowSeconds * i) / n),
			by: 'bench@soc',
			reason: `bench 8 block ${i}`,
			via: 'api' as const,
		});
		let next = 0;
		const t0 = Date.now();
		const lane = async () => {
			while (next < chunks.length) {
				const chunk = chunks[next++];
				const d = dps[chunk[0] % dps.length];
				const a0 = Date.now();
				try {
					if (bulk === 1)
						blocks[chunk[0]] = await addBlock(tc, taskQueue, d.site_id, d.domain_port_id, reqOf(chunk[0]));
					else {
						const r = await addBlocks(tc, taskQueue, d.site_id, d.domain_port_id, { blocks: chunk.map(reqOf) });
						const byRange = new Map(r.blocks.map((b) => [b.range, b]));
						for (const i of chunk) if (byRange.has(ipOf(i))) blocks[i] = byRange.get(ipOf(i)) as Block;
						for (const x of r.refused) addErrors.push(`${x.entry}: ${x.field}: ${x.rule}`.slice(0, 200));
					}
					addLatency.push(Date.now() - a0);
				} catch (e) {
					addErrors.push(
						`${chunk.map(ipOf).slice(0, 3).join(',')}…: ${String((e as Error)?.message ?? e).slice(0, 200)}`,
					);
				}
			}
		};
		await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
		const addSeconds = (Date.now() - t0) / 1000;
		// CPU of the adds apart from the rest (the wait between costs next to nothing; the rest is the removal window).
		const addCpu = {
			worker: cpuSeconds(worker.pid) - cpu0,
			server: cpuSeconds(temporal.child.pid as number) - serverCpu0,
		};
		const added = blocks.filter(Boolean);
		const expiryOf = new Map(added.map((b) => [asRange(b.range), Date.parse(b.expiresAt)]));
		const lastExpiry = Math.max(...expiryOf.values());

		// Wait for the removals (the DELETEs in the simulator's log), until 60 s after the last expiry.
		const removals: LogEntry[] = [];
		const removedOnce = new Set<string>();
		let since = 0;
		while (removedOnce.size < added.length && Date.now() < lastExpiry + 60_000) {
			await sleep(2000);
			const got = await sim.control<LogEntry[]>('GET', `/requests?op=${OP_REMOVE}&since=${since}`);
			for (const r of got) {
				since = Math.max(since, r.seq);
				removals.push(r);
				for (const e of String(r.query.ip_black_list ?? '').split(','))
					if (e.trim()) removedOnce.add(asRange(e.trim()));
			}
		}
		const cpu = cpuSeconds(worker.pid) - cpu0;
		const serverCpu = cpuSeconds(temporal.child.pid as number) - serverCpu0;
		const simCpu = sim.cpuSeconds() - simCpu0;
		addLatency.sort((a, b) => a - b);
		const runSeconds = (Date.now() - t0) / 1000;
		const load1 = loadavg();

		// Counts from the log: every POST and every DELETE naming each block's entry.
		const adds = await sim.control<LogEntry[]>('GET', `/requests?op=${OP_ADD}`);
		const reads = (await sim.control<LogEntry[]>('GET', `/requests?op=${OP_GET}`)).length;
		const addCount = new Map<string, number>();
		for (const a of adds) {
			const e = asRange(String((a.body as Record<string, unknown> | undefined)?.ip_black_list ?? ''));
			if (a.status === 200 && a.code === 0) addCount.set(e, (addCount.get(e) ?? 0) + 1);
		}
		const removeCount = new Map<string, number>();
		const late: number[] = [];
		/** Where the tail is: lateness by 20 s slice of the expiry window, and by domain-port (block i → i mod #dps). */
		const firstExpiry = Math.min(...expiryOf.values());
		const bySlice = new Map<number, number[]>();
		const byDp = new Map<number, number[]>();
		const dpOf = new Map(
			added.map((b) => [
				asRange(b.range),
				dps.findIndex((d) => d.domain_port_id === b.domain_port_id && d.site_id === b.site_id),
			]),
		);
		for (const r of removals) {
			if (r.status !== 200 || r.code !== 0) continue;
			for (const e of String(r.query.ip_black_list ?? '')
				.split(',')
				.map((x) => x.trim())
				.filter(Boolean)
				.map(asRange)) {
				removeCount.set(e, (removeCount.get(e) ?? 0) + 1);
				const exp = expiryOf.get(e);
				if (exp !== undefined && removeCount.get(e) === 1) {
					late.push(r.time - exp);
					const k = Math.floor((exp - firstExpiry) / 20_000);
					bySlice.set(k, [...(bySlice.get(k) ?? []), r.time - exp]);
					const d = dpOf.get(e) ?? -1;
					byDp.set(d, [...(byDp.get(d) ?? []), r.time - exp]);
				}
			}
		}
		const tally = (m: Map<string, number>) => {
			let missing = 0;
			let dup = 0;
			for (const b of added) {
				const c = m.get(asRange(b.range)) ?? 0;
				if (c === 0) missing++;
				else if (c > 1) dup += c - 1;
			}
			const foreign = [...m.keys()].filter((k) => !expiryOf.has(k)).length;
			return { missing, duplicates: dup, notOurs: foreign };
		};
		const addTally = tally(addCount);
		const removeTally = tally(removeCount);
		late.sort((a, b) => a - b);
		// Left on the lists afterwards (should be none).
		let leftOnLists = 0;
		const st = await sim.control<{
			domainPorts: { site_id: string; domain_port_id: string; policy?: { ipBlacklist?: { entries?: unknown[] } } }[];
		}>('GET', '/state');
		for (const d of st.domainPorts)
			if (Number(d.site_id) >= 210001) leftOnLists += d.policy?.ipBlacklist?.entries?.length ?? 0;
		// Workflow runs (continue-as-new) of the blocks workflows on this task queue.
		const runs: Record<string, number> = {};
		for await (const w of tc.workflow.list({ query: `WorkflowType = 'blocks' AND TaskQueue = '${taskQueue}'` }))
			runs[w.status.name] = (runs[w.status.name] ?? 0) + 1;
		const maxPerDp = Math.max(...dps.map((_, k) => Math.ceil((n - k) / dps.length)));
		const mb = (b: number) => round(b / 2 ** 20, 0);
		const result = {
			blocks: n,
			sites,
			domainPortsPerSite: dpsPerSite,
			blocksWorkflows: dps.length,
			maxBlocksPerDomainPort: maxPerDp,
			durationsSeconds: [windowStart, windowStart + windowSeconds],
			addConcurrency: concurrency,
			blocksPerAdd: bulk,
			addUpdates: chunks.length,
			added: added.length,
			addErrors: addErrors.length,
			addErrorSamples: addErrors.slice(0, 5),
			addSeconds: round(addSeconds, 1),
			addsPerSecond: round(added.length / addSeconds, 1),
			/** Per add Update (a bulk add's latency covers all its blocks). */
			addLatencyMs: addLatency.length ? { p50: pct(addLatency, 0.5), p99: pct(addLatency, 0.99) } : null,
			removed: removeCount.size,
			lateMs: late.length
				? { p50: pct(late, 0.5), p99: pct(late, 0.99), max: late[late.length - 1], min: late[0] }
				: null,
			lateOver2s: late.filter((x) => x > 2000).length,
			/** p50 / p99 (ms) per 20 s of the expiry window; the domain-ports with the most removals over 2 s. */
			lateBySlice: [...bySlice]
				.sort((a, b) => a[0] - b[0])
				.map(
					([k, xs]) => (
						xs.sort((a, b) => a - b),
						`${k * 20}s: ${pct(xs, 0.5)} / ${pct(xs, 0.99)} (${xs.filter((x) => x > 2000).length} > 2 s)`
					),
				),
			worstDomainPorts: [...byDp]
				.map(([d, xs]) => [d, xs.filter((x) => x > 2000).length])
				.sort((a, b) => b[1] - a[1])
				.slice(0, 5)
				.map(([d, c]) => `#${d}: ${c} > 2 s`),
			apiWrites: { adds: adds.length, removeRequests: removals.length, addTally, removeTally, blacklistReads: reads },
			leftOnLists,
			workflowRuns: runs,
			peakRssMB: mb(peak),
			idleRssMB: mb(idleRss),
			workerCpuSeconds: round(cpu, 1),
			devServerCpuSeconds: round(serverCpu, 1),
			/** CPU seconds from the last add answered to the end: the removal window (worker / dev server), per DELETE sent. */
			afterAddsCpuSeconds: {
				worker: round(cpu - addCpu.worker, 1),
				devServer: round(serverCpu - addCpu.server, 1),
				msPerRemoveRequest: removals.length
					? round(((cpu - addCpu.worker + serverCpu - addCpu.server) * 1000) / removals.length, 1)
					: null,
			},
			simulatorCpuSeconds: round(simCpu, 1),
			runSeconds: round(runSeconds, 1),
			loadAverage: { atStart: load0.map((x) => round(x, 1)), atEnd: load1.map((x) => round(x, 1)) },
		};
		const writesOk =
			added.length === n &&
			addTally.missing === 0 &&
			addTally.duplicates === 0 &&
			removeTally.missing === 0 &&
			removeTally.duplicates === 0 &&
			leftOnLists === 0;
		const p99 = result.lateMs?.p99 ?? Infinity;
		const how =
			bulk === 1
				? 'one addBlock Update per block'
				: `bulk adds: ${chunks.length} addBlocks Updates of ≤ ${bulk} blocks`;
		const label = `${n.toLocaleString('en')} expiring blocks, ${sites}×${dpsPerSite} domain-ports, ${windowStart}–${windowStart + windowSeconds} s, ${how}`;
		const rows: Row[] = [
			{
				bench: '8',
				measure: `${label}: peak worker RSS · worker CPU`,
				ours: `${result.peakRssMB} MB · ${result.workerCpuSeconds} s`,
				baseline: `idle ${result.idleRssMB} MB`,
				ratio: `${round((result.workerCpuSeconds / n) * 1000, 2)} ms CPU per block`,
				goal: 'RSS < 300 MB',
				met: result.peakRssMB < 300,
			},
			{
				bench: '8',
				measure: `${label}: removal lateness (simulator log − expiresAt) p50 / p99 / max`,
				ours: result.lateMs
					? `${round(result.lateMs.p50 / 1000, 2)} / ${round(result.lateMs.p99 / 1000, 2)} / ${round(result.lateMs.max / 1000, 2)} s`
					: 'none',
				baseline: '—',
				ratio: `${result.lateOver2s} of ${late.length} over 2 s`,
				goal: 'p99 ≤ 2 s',
				met: p99 <= 2000 && late.length === n,
			},
			{
				bench: '8',
				measure: `${label}: API writes per block (log) · add throughput`,
				ours: `${adds.length} POST / ${removeCount.size} removed in ${removals.length} DELETE · ${result.addsPerSecond} adds/s`,
				baseline: `${n} blocks`,
				ratio: `dup ${addTally.duplicates}+${removeTally.duplicates}, missing ${addTally.missing}+${removeTally.missing}, left ${leftOnLists}`,
				goal: 'one add + one remove per block',
				met: writesOk,
			},
		];
		return { result, rows };
	} finally {
		clearInterval(sampler);
		await worker.stop();
		await connection.close();
		await sim.stop();
		rmSync(dir, { recursive: true, force: true });
	}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const { values } = parseArgs({
		options: {
			blocks: { type: 'string', default: '10000' },
			sites: { type: 'string', default: '20' },
			dps: { type: 'string', default: '5' },
			'window-start': { type: 'string', default: '60' },
			window: { type: 'string', default: '120' },
			concurrency: { type: 'string', default: '50' },
			bulk: { type: 'string', default: '100' },
			record: { type: 'string' },
		},
	});
	const r = await runAlone((temporal) =>
		benchBlocks(temporal, {
			blocks: Number(values.blocks),
			sites: Number(values.sites),
			dpsPerSite: Number(values.dps),
			windowStart: Number(values['window-start']),
			windowSeconds: Number(values.window),
			concurrency: Number(values.concurrency),
			bulk: Number(values.bulk),
		}),
	);
	if (values.record !== undefined)
		recordBench({ key: 'blocks', bench: '8', rows: r.rows, result: r.result, note: values.record, sortRows: true });
}
