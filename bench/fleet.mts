/**
 * Bench 7: watching a fleet. N sites at one interval, A of them attacked at staggered times, measured over a window
 * of W seconds, one phase per mode in one run (fresh simulator and worker process per phase, same dev server):
 *   local      — fleet watchers (workflows/fleet/fleetWatch.mts), batches as local activities
 *   regular    — fleet watchers, batches as regular activities
 *   schedules  — today's way: one Temporal Schedule per site (attackWatch every interval)
 * Measures detection latency (attack start → runbook start, from the simulator's attack and the runbook's start time
 * on the server) p50/p99, Temporal actions per site-day (bench/fleetActions.mts: histories from the dev server),
 * worker CPU seconds and peak RSS (/proc), is_under_attack calls per site per interval, extra calls (a site called
 * again within half an interval) and the longest gap between two calls of a site (simulator log).
 *
 * Alone: node --import tsx bench/fleet.mts [--sites 1000] [--interval 10] [--attacks 10] [--window 80]
 *        [--modes local,regular,schedules] [--baseline-sites N] [--record]
 *   --record writes the `fleet` key and the bench-7 rows into bench/results.json (other keys untouched).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { rssOf, type TemporalDev } from '../demo/stack.mts';
import { sitePlan, watcherIdPrefix, type FleetSite } from '../workflows/fleet/shared.mts';
import { applyFleet } from '../workflows/fleet/client.mts';
import { parseFleet } from '../workflows/fleet/clientConfig.mts';
import { createSchedule } from '../worker/src/temporal/schedules.mts';
import { cpuSeconds, pct, replaceResults, round, runAlone, startSimProcess, startSimWorker, type Row } from './lib.mts';
import { actionsOf } from './fleetActions.mts';

const APP_ID = 'bench-fleet';
const SECRET = 'bench-fleet-secret-1';
/** The plan of every watched site (bench 7's and bench T's fleets): quiet sites, long cooldowns. */
export const TEMPLATE = {
	detection: { rapidMode: true, thresholds: [] },
	blacklist: { enabled: false },
	cooldownSeconds: 3600,
	pollSeconds: 5,
	maxDurationSeconds: 7200,
};

export type Mode = 'local' | 'regular' | 'schedules';

export interface FleetBenchOptions {
	sites?: number;
	/** Sites of the schedules phase (default = sites). */
	baselineSites?: number;
	interval?: number;
	attacks?: number;
	/** Measurement window, seconds. */
	window?: number;
	modes?: Mode[];
	/** The faulted case: during the window the worker is SIGKILLed (and restarted at once) twice and the
	 * service answers every is_under_attack with 42901 for 1.5 s four times (two pairs, 1.2 intervals apart). */
	faults?: boolean;
}

interface PhaseResult {
	mode: Mode;
	sites: number;
	windowSeconds: number;
	detection: { site: string; latencyMs: number | null }[];
	detectionP50Ms: number | null;
	detectionP99Ms: number | null;
	detectionMaxMs: number | null;
	detected: number;
	/** Faulted case: kills and 429 windows injected, and the longest kill → first answered check after it. */
	faults?: { kills: number; rateWindows: number; refusedCalls: number; maxRestartMs: number };
	runbooksPerAttackedSite: number[];
	actions: {
		executions: number;
		fetched: number;
		total: number;
		byKind: Record<string, number>;
		watchActions: number;
		runbookStartActions: number;
	};
	/** Watching actions (all but runbook starts) per is_under_attack check made in the window. */
	actionsPerSiteCheck: number;
	/** actionsPerSiteCheck × checks a site is due per day (86400 / interval). */
	actionsPerSiteDay: number;
	workerCpuSeconds: number;
	workerCpuSecondsSetup: number;
	workerCpuMsPerSiteCheck: number | null;
	peakRssMB: number;
	/** Checks of the sites not attacked: due (sites × window / interval) and made (simulator log). */
	dueChecks: number;
	doneChecks: number;
	callsPerSitePerInterval: number;
	callsPerSiteMinMax: [number, number];
	/** Calls less than half an interval after the previous call of the same site (sites not attacked). */
	extraCalls: number;
	/** Longest time between two calls of one site inside the window. */
	maxGapMs: number;
	intervalsInWindow: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The faulted case's schedule over the window: SIGKILLs of the worker (restarted at once by `restart`) at 25 % and
 * 60 %, 1.5 s windows of 42901 on is_under_attack at 35 %, 35 % + 1.2 intervals, 75 % and 75 % + 1.2 intervals.
 * Resolves with the kill times (ms).
 */
async function injectFaults(
	sim: { control: <T>(m: string, p: string, b?: unknown) => Promise<T> },
	restart: () => Promise<void>,
	windowMs: number,
	intervalMs: number,
): Promise<number[]> {
	const t0 = Date.now();
	const events: { at: number; run: () => Promise<unknown> }[] = [
		...[0.25, 0.6].map((f) => ({ at: f * windowMs, run: restart })),
		...[0.35 * windowMs, 0.35 * windowMs + 1.2 * intervalMs, 0.75 * windowMs, 0.75 * windowMs + 1.2 * intervalMs].map(
			(at) => ({
				at,
				run: () => sim.control('POST', '/faults', { op: 'dashboard.isUnderAttack', kind: 'ratelimit', forMs: 1500 }),
			}),
		),
	].sort((a, b) => a.at - b.at);
	const kills: number[] = [];
	for (const e of events) {
		await sleep(Math.max(0, t0 + e.at - Date.now()));
		if (e.run === restart) kills.push(Date.now());
		await e.run();
	}
	return kills;
}

async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>) {
	let i = 0;
	await Promise.all(
		Array.from({ length: n }, async () => {
			while (i < items.length) await fn(items[i++]);
		}),
	);
}

async function phase(
	temporal: TemporalDev,
	tc: Client,
	mode: Mode,
	nSites: number,
	o: Required<Omit<FleetBenchOptions, 'modes' | 'baselineSites' | 'sites'>>,
	phaseNo: number,
): Promise<PhaseResult> {
	const perCustomer = 10;
	const customers = Math.ceil(nSites / perCustomer);
	const sim = await startSimProcess(APP_ID, SECRET, [
		'--fleet',
		`${customers}x${perCustomer}`,
		'--log-limit',
		'400000',
	]);
	const taskQueue = `bench-fleet-${mode}-${process.pid}`;
	const startWorker = () => startSimWorker(temporal, sim, taskQueue);
	let worker = await startWorker();
	const killed: { stop: () => Promise<void> }[] = [];
	let peak = await rssOf(worker.pid);
	const sampler = setInterval(() => void rssOf(worker.pid).then((r) => (peak = Math.max(peak, r))), 100);
	const fleetName = `bench${mode}${process.pid}`;
	const scheduleIds: string[] = [];
	const deleteSchedules = () =>
		pool(scheduleIds, 16, (id) =>
			tc.schedule
				.getHandle(id)
				.delete()
				.catch(() => {}),
		);
	try {
		const view = await sim.control<{ sites: { customer_id: string; site_id: string; domain_port_ids: string[] }[] }>(
			'GET',
			'/fleet',
		);
		const sites: FleetSite[] = view.sites
			.slice(0, nSites)
			.map((s) => ({ customer_id: s.customer_id, site_id: s.site_id, domain_ports: s.domain_port_ids }));
		const cpuSetup0 = cpuSeconds(worker.pid);
		if (mode === 'schedules') {
			await pool(sites, 16, async (s) => {
				const h = await createSchedule(tc, taskQueue, 'watch', s.site_id, `${o.interval}s`, {
					plan: sitePlan(TEMPLATE, s),
				});
				scheduleIds.push(h.scheduleId);
			});
		} else {
			const f = parseFleet({
				fleet: fleetName,
				intervalSeconds: o.interval,
				sitesPerWatcher: 250,
				batchSize: 50,
				concurrency: 8,
				parallelBatches: 4,
				activities: mode,
				template: TEMPLATE,
				sites,
			});
			await applyFleet(tc, taskQueue, f);
		}
		// Warm-up: two intervals, so every site has been checked and the worker's caches are filled.
		await sleep(2 * o.interval * 1000);
		const workerCpuSecondsSetup = cpuSeconds(worker.pid) - cpuSetup0;

		await sim.control('DELETE', '/requests');
		const cpu0 = cpuSeconds(worker.pid);
		const t0 = Date.now();
		// Attacks at staggered times inside the window (not aligned to the interval), on sites spread over the fleet.
		const attacked: { site: string; start: number }[] = [];
		const span = Math.max(1, o.window - o.interval - 8);
		for (let k = 0; k < o.attacks; k++) {
			// Other sites in every phase (runbook ids are per site and the dev server is shared by the phases).
			const s = sites[(Math.floor(((k + 0.5) * sites.length) / o.attacks) + 3 * phaseNo) % sites.length];
			const at = 3 + Math.round((k * span) / o.attacks + ((k * 7) % 5) + k * 0.37);
			const a = await sim.control<{ start: number }>('POST', '/attacks', {
				site_id: s.site_id,
				at,
				duration: 0,
				attack_type: 'UDP Total',
				curve: { peakBps: 12e9, peakPps: 2e6 },
				sources: [{ ip: `198.18.${k}.10` }],
			});
			attacked.push({ site: s.site_id, start: a.start * 1000 });
		}
		const restart = async () => {
			process.kill(worker.pid, 'SIGKILL');
			killed.push(worker);
			worker = await startWorker();
		};
		const kills = o.faults ? await injectFaults(sim, restart, o.window * 1000, o.interval * 1000) : [];
		await sleep(o.window * 1000 - (Date.now() - t0));
		const t1 = Date.now();
		// Faulted: the worker of the window's end only (its predecessors were killed).
		const workerCpuSeconds = o.faults ? cpuSeconds(worker.pid) : cpuSeconds(worker.pid) - cpu0;
		const log = await sim.control<{ opId: string; path: string; time: number; code: number | null; fault?: string }[]>(
			'GET',
			'/requests',
		);
		const answered = log.filter((r) => r.opId === 'dashboard.isUnderAttack' && r.code === 0);
		const faults = o.faults
			? {
					kills: kills.length,
					rateWindows: 4,
					refusedCalls: log.filter((r) => r.fault === 'ratelimit').length,
					maxRestartMs: Math.max(0, ...kills.map((k) => (answered.find((r) => r.time > k)?.time ?? t1) - k)),
				}
			: undefined;
		// Calls of the sites not attacked (an attacked site's runbook polls is_under_attack too).
		const hit = new Set(attacked.map((a) => a.site));
		const perSite = new Map<string, number[]>(sites.filter((x) => !hit.has(x.site_id)).map((x) => [x.site_id, []]));
		for (const r of log) {
			if (r.opId !== 'dashboard.isUnderAttack' || r.code !== 0 || r.time < t0 || r.time > t1) continue;
			const id = /\/site\/([^/]+)\//.exec(r.path)?.[1] ?? '';
			perSite.get(id)?.push(r.time);
		}
		const counts = [...perSite.values()].map((t) => t.length);
		// Extra calls: a call less than half an interval after the previous call of the same site (a second call in
		// one interval, whatever its cause); gaps: the longest time between two calls of one site.
		let extraCalls = 0;
		let maxGapMs = 0;
		for (const times of perSite.values()) {
			times.sort((a, b) => a - b);
			for (let i = 1; i < times.length; i++) {
				const gap = times[i] - times[i - 1];
				if (gap < (o.interval * 1000) / 2) extraCalls++;
				maxGapMs = Math.max(maxGapMs, gap);
			}
		}
		const doneChecks = counts.reduce((a, b) => a + b, 0);
		const dueChecks = (perSite.size * (t1 - t0)) / 1000 / o.interval;
		const detection = await Promise.all(
			attacked.map(async (a) => {
				try {
					const d = await tc.workflow.getHandle(`attack-response-${a.site}`).describe();
					return { site: a.site, latencyMs: d.startTime.getTime() - a.start };
				} catch {
					return { site: a.site, latencyMs: null };
				}
			}),
		);
		const runbooksPerAttackedSite = await Promise.all(
			attacked.map(async (a) => {
				let n = 0;
				for await (const _w of tc.workflow.list({
					query: `WorkflowId = 'attack-response-${a.site}' AND StartTime >= '${new Date(t0 - 1000).toISOString()}'`,
				}))
					n++;
				return n;
			}),
		);
		// Stop watching before the histories are read (nothing more to count).
		if (mode === 'schedules') await deleteSchedules();
		else
			for await (const w of tc.workflow.list({
				query: `WorkflowType = 'fleetWatch' AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH '${watcherIdPrefix(fleetName)}'`,
			}))
				await tc.workflow
					.getHandle(w.workflowId)
					.terminate('bench done')
					.catch(() => {});
		await sleep(1000);
		const actions =
			mode === 'schedules'
				? await actionsOf(tc, `WorkflowType = 'attackWatch' AND TaskQueue = '${taskQueue}'`, t0, t1, {
						scheduled: true,
						sample: 300,
					})
				: await actionsOf(
						tc,
						`WorkflowType = 'fleetWatch' AND WorkflowId STARTS_WITH '${watcherIdPrefix(fleetName)}'`,
						t0,
						t1,
					);
		for (const a of attacked)
			await tc.workflow
				.getHandle(`attack-response-${a.site}`)
				.terminate('bench done')
				.catch(() => {});
		const lat = detection
			.map((d) => d.latencyMs)
			.filter((x): x is number => x !== null && x >= 0)
			.sort((a, b) => a - b);
		const windowSeconds = (t1 - t0) / 1000;
		// Watching cost: everything but the runbook starts (2 actions per attacked site in every mode), per check made.
		const runbookStartActions = actions.byKind['child workflow (start + execution)'] ?? 0;
		const watchActions = actions.total - runbookStartActions;
		const perCheck = doneChecks ? watchActions / doneChecks : 0;
		return {
			mode,
			sites: sites.length,
			windowSeconds: round(windowSeconds, 1),
			detection,
			detectionP50Ms: lat.length ? pct(lat, 0.5) : null,
			detectionP99Ms: lat.length ? pct(lat, 0.99) : null,
			detectionMaxMs: lat.length ? lat[lat.length - 1] : null,
			detected: lat.length,
			...(faults ? { faults } : {}),
			runbooksPerAttackedSite,
			actions: { ...actions, watchActions, runbookStartActions },
			actionsPerSiteCheck: round(perCheck, 4),
			actionsPerSiteDay: round((perCheck * 86400) / o.interval, 0),
			workerCpuSeconds: round(workerCpuSeconds, 1),
			workerCpuSecondsSetup: round(workerCpuSecondsSetup, 1),
			workerCpuMsPerSiteCheck: doneChecks ? round((workerCpuSeconds * 1000) / doneChecks, 3) : null,
			peakRssMB: round(peak / 2 ** 20, 0),
			dueChecks: Math.round(dueChecks),
			doneChecks,
			callsPerSitePerInterval: round(doneChecks / Math.max(1, dueChecks), 3),
			callsPerSiteMinMax: [Math.min(...counts), Math.max(...counts)],
			extraCalls,
			maxGapMs,
			intervalsInWindow: round(windowSeconds / o.interval, 1),
		};
	} finally {
		clearInterval(sampler);
		if (mode === 'schedules') await deleteSchedules();
		await worker.stop();
		for (const w of killed) await w.stop().catch(() => {});
		await sim.stop();
	}
}

export async function benchFleet(temporal: TemporalDev, opts: FleetBenchOptions = {}) {
	const o = {
		interval: opts.interval ?? 10,
		attacks: opts.attacks ?? 10,
		window: opts.window ?? 80,
		faults: opts.faults ?? false,
	};
	const sites = opts.sites ?? 1000;
	const modes = opts.modes ?? ['local', 'regular', 'schedules'];
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const phases: PhaseResult[] = [];
	try {
		for (const m of modes) {
			process.stderr.write(
				`bench 7: ${m} (${m === 'schedules' ? (opts.baselineSites ?? sites) : sites} sites, every ${o.interval}s, ${o.attacks} attacks, ${o.window}s window)\n`,
			);
			phases.push(
				await phase(temporal, tc, m, m === 'schedules' ? (opts.baselineSites ?? sites) : sites, o, phases.length),
			);
		}
	} finally {
		await connection.close();
	}
	const base = phases.find((p) => p.mode === 'schedules');
	const goalMs = (o.interval + 2) * 1000;
	const label: Record<Mode, string> = {
		local: 'fleet watchers, local-activity batches',
		regular: 'fleet watchers, regular-activity batches',
		schedules: 'one schedule per site',
	};
	const rows: Row[] = [];
	for (const p of phases) {
		const f = p.faults;
		const tag = `${label[p.mode]}, ${p.sites} sites every ${o.interval}s${f ? `, faulted (${f.kills} SIGKILLs, ${f.rateWindows} × 1.5 s 429 windows)` : ''}`;
		rows.push({
			bench: '7',
			measure: `${tag}: detection p50 / p99 (${p.detected}/${o.attacks} detected)`,
			ours: `${p.detectionP50Ms ?? '—'} / ${p.detectionP99Ms ?? '—'} ms${f ? ` (max ${p.detectionMaxMs ?? '—'} ms)` : ''}`,
			baseline: '—',
			ratio: '—',
			goal: f
				? `max ≤ ${goalMs} ms + restart (${f.maxRestartMs} ms), one runbook per site`
				: `p99 ≤ ${goalMs} ms, one runbook per site`,
			met:
				p.detectionP99Ms !== null &&
				p.detected === o.attacks &&
				(f ? (p.detectionMaxMs ?? Infinity) <= goalMs + f.maxRestartMs : p.detectionP99Ms <= goalMs) &&
				p.runbooksPerAttackedSite.every((n) => n === 1),
		});
		const ratio = base && p !== base ? base.actionsPerSiteDay / Math.max(1, p.actionsPerSiteDay) : undefined;
		rows.push({
			bench: '7',
			measure: `${tag}: Temporal actions per site-day (watching; per check × checks due per day)`,
			ours: `${p.actionsPerSiteDay}`,
			baseline: base && p !== base ? `${base.actionsPerSiteDay}` : '—',
			ratio: ratio ? `${round(ratio, 1)}× fewer` : '—',
			goal: p === base ? '—' : '≥ 20× fewer',
			met: p === base ? null : ratio !== undefined ? ratio >= 20 : null,
		});
		rows.push({
			bench: '7',
			measure: `${tag}: is_under_attack calls per site per interval (checks made / due; per site min–max over ${p.intervalsInWindow} intervals; extra calls = a second call of a site within half an interval; longest gap)`,
			ours: `${p.callsPerSitePerInterval} (${p.doneChecks}/${p.dueChecks}; ${p.callsPerSiteMinMax.join('–')}; ${p.extraCalls} extra; gap ≤ ${round(p.maxGapMs / 1000, 1)} s)`,
			baseline: '—',
			ratio: '—',
			goal: f
				? `0 extra, no gap > 1 interval + restart (${f.maxRestartMs} ms) + 1 s`
				: '1 per site per interval (0 extra, no gap > 2 intervals)',
			met: f
				? p.extraCalls === 0 && p.maxGapMs <= o.interval * 1000 + f.maxRestartMs + 1000
				: Math.abs(p.callsPerSitePerInterval - 1) <= 0.05 && p.extraCalls === 0 && p.maxGapMs <= 2 * o.interval * 1000,
		});
		rows.push({
			bench: '7',
			measure: `${tag}: worker CPU s in ${p.windowSeconds}s (ms per check) · peak RSS`,
			ours: `${p.workerCpuSeconds} s (${p.workerCpuMsPerSiteCheck ?? '—'} ms) · ${p.peakRssMB} MB`,
			baseline:
				base && p !== base
					? `${base.workerCpuSeconds} s (${base.workerCpuMsPerSiteCheck ?? '—'} ms) · ${base.peakRssMB} MB`
					: '—',
			ratio:
				base && p !== base && p.workerCpuMsPerSiteCheck && base.workerCpuMsPerSiteCheck
					? `CPU per check ${round(p.workerCpuMsPerSiteCheck / base.workerCpuMsPerSiteCheck, 2)}×`
					: '—',
			goal: 'RSS < 300 MB',
			met: p.peakRssMB < 300,
		});
	}
	return { result: { intervalSeconds: o.interval, attacks: o.attacks, windowSeconds: o.window, phases }, rows };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const { values } = parseArgs({
		options: {
			sites: { type: 'string', default: '1000' },
			'baseline-sites': { type: 'string' },
			interval: { type: 'string', default: '10' },
			attacks: { type: 'string', default: '10' },
			window: { type: 'string', default: '80' },
			modes: { type: 'string', default: 'local,regular,schedules' },
			record: { type: 'boolean', default: false },
			faults: { type: 'boolean', default: false },
		},
	});
	const r = await runAlone((temporal) =>
		benchFleet(temporal, {
			sites: Number(values.sites),
			baselineSites: values['baseline-sites'] ? Number(values['baseline-sites']) : undefined,
			interval: Number(values.interval),
			attacks: Number(values.attacks),
			window: Number(values.window),
			modes: String(values.modes).split(',') as Mode[],
			faults: values.faults,
		}),
	);
	if (values.record) replaceResults((x) => x.bench === '7', r.rows, 'fleet', r.result);
}
