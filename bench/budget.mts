/**
 * Bench 9: the cluster's request budget (issue 27, docs/rate-budget.md). The simulator limits the app to 60 req/s
 * (burst 10); 1,000 sites watched every 10 s (a demand of 100 req/s) by 2 worker processes; a storm of A attacks at
 * staggered times. Three phases in one run (same dev server; fresh simulator and workers per phase):
 *   nowatch   — the storm alone (runbooks started by the bench at each attack's start), budget on: the reference
 *               time to mitigate
 *   reactive  — today: fleet watch, no budget (workers slow down after the service refuses)
 *   budget    — fleet watch with api.rateLimit (rps --budget-rps, default 57 = 95 % of the service's 60, burst 8)
 * Measures from the simulator's request log and the server: refusals; time to mitigate (runbook start → its first
 * write answered) p50/p99; detection (attack start → runbook start); the watch's longest gap per site (sites not
 * attacked; window edges count) against 3 intervals; the watch's achieved rate against what the budget leaves it
 * (budget − every other request's rate in the window).
 *
 * Alone: node --import tsx bench/budget.mts [--sites 1000] [--interval 10] [--attacks 20] [--window 80]
 *        [--budget-rps 57] [--budget-burst 8] [--phases nowatch,reactive,budget] [--record]
 *   --record replaces the bench-9 rows and `results.budget` in bench/results.json (other keys untouched).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { type TemporalDev, type WorkerProcess } from '../demo/stack.mts';
import { sitePlan, watcherIdPrefix, type FleetSite } from '../workflows/fleet/shared.mts';
import { applyFleet } from '../workflows/fleet/client.mts';
import { parseFleet } from '../workflows/fleet/clientConfig.mts';
import { pct, replaceResults, round, runAlone, startSimProcess, startSimWorker, type Row } from './lib.mts';
import { fleetStatus } from '../workflows/fleet/client.mts';

const APP_ID = 'bench-budget';
const SECRET = 'bench-budget-secret-1';
const SERVICE = { rps: 60, burst: 10 };
const TEMPLATE = {
	detection: { rapidMode: true, thresholds: [] },
	blacklist: { enabled: false },
	cooldownSeconds: 3600,
	pollSeconds: 5,
	maxDurationSeconds: 7200,
};

type Phase = 'nowatch' | 'reactive' | 'budget';
interface Opts {
	sites: number;
	interval: number;
	attacks: number;
	window: number;
	budgetRps: number;
	budgetBurst: number;
}
interface LogEntry {
	opId: string | null;
	method: string;
	path: string;
	time: number;
	code: number | null;
	status: number;
	fault?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function phase(tc: Client, temporal: TemporalDev, name: Phase, o: Opts, phaseNo: number) {
	const perCustomer = 10;
	const sim = await startSimProcess(APP_ID, SECRET, [
		'--fleet',
		`${Math.ceil(o.sites / perCustomer)}x${perCustomer}`,
		'--log-limit',
		'400000',
		'--rate-limit',
		JSON.stringify(SERVICE),
	]);
	const taskQueue = `bench-budget-${name}-${process.pid}`;
	const budgetEnv =
		name === 'reactive'
			? {}
			: { SECSVC_RATE_LIMIT_RPS: String(o.budgetRps), SECSVC_RATE_LIMIT_BURST: String(o.budgetBurst) };
	const workers: WorkerProcess[] = [];
	const fleetName = `bbudget${name}${process.pid}`;
	try {
		for (let i = 0; i < 2; i++) workers.push(await startSimWorker(temporal, sim, taskQueue, { env: budgetEnv }));
		const view = await sim.control<{ sites: { customer_id: string; site_id: string; domain_port_ids: string[] }[] }>(
			'GET',
			'/fleet',
		);
		const sites: FleetSite[] = view.sites
			.slice(0, o.sites)
			.map((s) => ({ customer_id: s.customer_id, site_id: s.site_id, domain_ports: s.domain_port_ids }));
		if (name !== 'nowatch') {
			const f = parseFleet({
				fleet: fleetName,
				intervalSeconds: o.interval,
				sitesPerWatcher: 250,
				batchSize: 50,
				concurrency: 8,
				activities: 'local',
				template: TEMPLATE,
				sites,
			});
			await applyFleet(tc, taskQueue, f);
		}
		// Warm-up: two intervals.
		await sleep(2 * o.interval * 1000);
		await sim.control('DELETE', '/requests');
		const t0 = Date.now();
		// The storm: A attacks at staggered times over the first part of the window, on sites spread over the fleet.
		const span = Math.max(1, o.window - o.interval - 15);
		const attacked: { site: FleetSite; start: number }[] = [];
		for (let k = 0; k < o.attacks; k++) {
			const s = sites[(Math.floor(((k + 0.5) * sites.length) / o.attacks) + 5 * phaseNo) % sites.length];
			const at = 2 + Math.round((k * span) / o.attacks + ((k * 7) % 5) * 0.4);
			const a = await sim.control<{ start: number }>('POST', '/attacks', {
				site_id: s.site_id,
				at,
				duration: 0,
				attack_type: 'UDP Total',
				curve: { peakBps: 12e9, peakPps: 2e6 },
				sources: [{ ip: `198.18.${k}.10` }],
			});
			attacked.push({ site: s, start: a.start * 1000 });
		}
		if (name === 'nowatch') {
			// no watch: each runbook is started when its attack starts (what the watch would do at once)
			for (const a of [...attacked].sort((x, y) => x.start - y.start)) {
				await sleep(Math.max(0, a.start - Date.now()));
				await tc.workflow
					.start('attackResponse', {
						workflowId: `attack-response-${a.site.site_id}`,
						taskQueue,
						args: [{ plan: sitePlan(TEMPLATE, a.site) }],
					})
					.catch(() => {});
			}
		}
		await sleep(o.window * 1000 - (Date.now() - t0));
		const t1 = Date.now();
		const log = (await sim.control<LogEntry[]>('GET', '/requests')).filter(
			(r) => r.time >= t0 && r.time <= t1 && r.opId !== null,
		);
		const refused = log.filter((r) => r.fault === 'ratelimit').length;
		const hit = new Set(attacked.map((a) => a.site.site_id));
		const siteOf = (r: LogEntry) => /\/site\/([^/]+)\//.exec(r.path)?.[1] ?? '';
		const answered = log.filter((r) => r.code === 0);
		const watchCalls = answered.filter((r) => r.opId === 'dashboard.isUnderAttack' && !hit.has(siteOf(r)));
		const others = log.filter(
			(r) => !(r.opId === 'dashboard.isUnderAttack' && !hit.has(siteOf(r))) && r.fault !== 'ratelimit',
		);
		const windowS = (t1 - t0) / 1000;
		// gaps per site not attacked, the window's edges included (a site never checked has a gap of the whole window)
		let maxGapMs = 0;
		if (name !== 'nowatch') {
			const per = new Map<string, number[]>(sites.filter((s) => !hit.has(s.site_id)).map((s) => [s.site_id, []]));
			for (const r of watchCalls) per.get(siteOf(r))?.push(r.time);
			for (const times of per.values()) {
				const t = [t0, ...times.sort((a, b) => a - b), t1];
				for (let i = 1; i < t.length; i++) maxGapMs = Math.max(maxGapMs, t[i] - t[i - 1]);
			}
		}
		// the watchers' own view of their oldest check (what `secsvc fleet status` and the gauge show), at t1
		const watcherView =
			name === 'nowatch'
				? []
				: (await fleetStatus(tc, fleetName).catch(() => ({ watchers: [] }))).watchers.map((w) => {
						const ages = w.sites
							.filter((x) => !hit.has(x.site_id))
							.map((x) => (x.at === undefined ? Infinity : t1 - x.at));
						return {
							index: w.index,
							oldestCheckIntervals: w.oldestCheckIntervals,
							oldestAtEndS: round(Math.max(0, ...ages) / 1000, 1),
						};
					});
		// where the longest gap was: the site, its watcher (sites in fleet order, sitesPerWatcher 250) and the service's
		// view of that watcher (checks per second, its longest gap)
		const gapOf = (ids: Set<string>) => {
			let g = 0;
			let at = 0;
			let site = '';
			const per = new Map<string, number[]>([...ids].map((x) => [x, []]));
			for (const r of watchCalls) per.get(siteOf(r))?.push(r.time);
			for (const [id, times] of per) {
				const t = [t0, ...times.sort((a, b) => a - b), t1];
				for (let i = 1; i < t.length; i++)
					if (t[i] - t[i - 1] > g) {
						g = t[i] - t[i - 1];
						at = t[i - 1] - t0;
						site = id;
					}
			}
			return { gapMs: g, fromS: round(at / 1000, 1), site };
		};
		const perWatcher =
			name === 'nowatch'
				? []
				: Array.from({ length: Math.ceil(sites.length / 250) }, (_, w) => {
						const ids = new Set(
							sites
								.slice(w * 250, (w + 1) * 250)
								.map((x) => x.site_id)
								.filter((x) => !hit.has(x)),
						);
						const calls = watchCalls.filter((r) => ids.has(siteOf(r))).length;
						return { watcher: w, sites: ids.size, checksPerS: round(calls / windowS, 1), ...gapOf(ids) };
					});
		const runbooks = await Promise.all(
			attacked.map(async (a) => {
				try {
					const d = await tc.workflow.getHandle(`attack-response-${a.site.site_id}`).describe();
					const start = d.startTime.getTime();
					const w = answered.find((r) => r.method !== 'GET' && r.time >= start && siteOf(r) === a.site.site_id);
					return { site: a.site.site_id, detectMs: start - a.start, mitigateMs: w ? w.time - start : null };
				} catch {
					return { site: a.site.site_id, detectMs: null, mitigateMs: null };
				}
			}),
		);
		for (const w of await listIds(
			tc,
			`WorkflowType = 'fleetWatch' AND WorkflowId STARTS_WITH '${watcherIdPrefix(fleetName)}' AND ExecutionStatus = 'Running'`,
		))
			await tc.workflow
				.getHandle(w)
				.terminate('bench done')
				.catch(() => {});
		for (const a of attacked)
			await tc.workflow
				.getHandle(`attack-response-${a.site.site_id}`)
				.terminate('bench done')
				.catch(() => {});
		const mit = runbooks
			.map((r) => r.mitigateMs)
			.filter((x): x is number => x !== null)
			.sort((a, b) => a - b);
		const det = runbooks
			.map((r) => r.detectMs)
			.filter((x): x is number => x !== null && x >= 0)
			.sort((a, b) => a - b);
		const otherRps = others.length / windowS;
		const watchRps = watchCalls.length / windowS;
		return {
			phase: name,
			windowSeconds: round(windowS, 1),
			requests: log.length,
			refused,
			mitigated: mit.length,
			mitigateP50Ms: mit.length ? pct(mit, 0.5) : null,
			mitigateP99Ms: mit.length ? pct(mit, 0.99) : null,
			detectP50Ms: det.length ? pct(det, 0.5) : null,
			detectP99Ms: det.length ? pct(det, 0.99) : null,
			watchRps: round(watchRps, 1),
			otherRps: round(otherRps, 1),
			// what the budget leaves the watch, or its own demand (sites not attacked / interval) when that is less
			leftForWatchRps: round(Math.min(o.budgetRps - otherRps, (o.sites - hit.size) / o.interval), 1),
			maxGapMs,
			perWatcher,
			watcherView,
			runbooks,
		};
	} finally {
		for (const w of workers) await w.stop().catch(() => {});
		await sim.stop();
	}
}

async function listIds(tc: Client, query: string): Promise<string[]> {
	const out: string[] = [];
	for await (const w of tc.workflow.list({ query })) out.push(w.workflowId);
	return out;
}

export async function benchBudget(temporal: TemporalDev, o: Opts, phases: Phase[]) {
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({ connection, namespace: temporal.namespace });
	const res: Awaited<ReturnType<typeof phase>>[] = [];
	try {
		for (const p of phases) {
			process.stderr.write(
				`bench 9: ${p} (${o.sites} sites every ${o.interval}s, ${o.attacks} attacks, ${o.window}s window, service ${SERVICE.rps}/s)\n`,
			);
			res.push(await phase(tc, temporal, p, o, res.length));
		}
	} finally {
		await connection.close();
	}
	const ref = res.find((r) => r.phase === 'nowatch');
	const rows: Row[] = [];
	const label: Record<Phase, string> = {
		nowatch: 'storm, no watch (budget on)',
		reactive: 'watch + storm, no budget (today)',
		budget: `watch + storm, budget ${o.budgetRps}/s burst ${o.budgetBurst}`,
	};
	const intervals3 = 3 * o.interval * 1000;
	for (const r of res) {
		const tag = `${label[r.phase]}, ${o.sites} sites every ${o.interval}s, ${o.attacks} attacks, service ${SERVICE.rps}/s`;
		const goals = r.phase === 'budget';
		rows.push({
			bench: '9',
			measure: `${tag}: refusals from the service in ${r.windowSeconds}s (requests sent)`,
			ours: `${r.refused} (${r.requests})`,
			baseline: '—',
			ratio: '—',
			goal: goals ? '0' : '—',
			met: goals ? r.refused === 0 : null,
		});
		const ratio =
			ref && r !== ref && ref.mitigateP99Ms && r.mitigateP99Ms !== null
				? r.mitigateP99Ms / ref.mitigateP99Ms
				: undefined;
		rows.push({
			bench: '9',
			measure: `${tag}: time to mitigate (runbook start → first write answered) p50 / p99 (${r.mitigated}/${o.attacks}); detection p50 / p99`,
			ours: `${r.mitigateP50Ms ?? '—'} / ${r.mitigateP99Ms ?? '—'} ms; ${r.detectP50Ms ?? '—'} / ${r.detectP99Ms ?? '—'} ms`,
			baseline: ref && r !== ref ? `${ref.mitigateP99Ms ?? '—'} ms (no watch)` : '—',
			ratio: ratio !== undefined ? `${round(ratio, 2)}×` : '—',
			goal: goals ? 'p99 ≤ 1.5× no watch' : '—',
			met: goals ? ratio !== undefined && ratio <= 1.5 && r.mitigated === o.attacks : null,
		});
		if (r.phase !== 'nowatch') {
			rows.push({
				bench: '9',
				measure: `${tag}: longest time a site (not attacked) went unchecked, window edges included`,
				ours: `${round(r.maxGapMs / 1000, 1)} s`,
				baseline: '—',
				ratio: '—',
				goal: goals ? `≤ 3 intervals (${intervals3 / 1000} s)` : '—',
				met: goals ? r.maxGapMs <= intervals3 : null,
			});
			const use = r.leftForWatchRps > 0 ? r.watchRps / r.leftForWatchRps : 0;
			rows.push({
				bench: '9',
				measure: `${tag}: the watch's rate against what the budget leaves it (budget − other requests ${r.otherRps}/s, at most the watch's demand)`,
				ours: `${r.watchRps}/s`,
				baseline: `${r.leftForWatchRps}/s`,
				ratio: `${round(use * 100, 0)} %`,
				goal: goals ? 'within 10 %' : '—',
				met: goals ? Math.abs(use - 1) <= 0.1 : null,
			});
		}
	}
	return { result: { service: SERVICE, ...o, phases: res }, rows };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const { values } = parseArgs({
		options: {
			sites: { type: 'string', default: '1000' },
			interval: { type: 'string', default: '10' },
			attacks: { type: 'string', default: '20' },
			window: { type: 'string', default: '80' },
			'budget-rps': { type: 'string', default: '57' },
			'budget-burst': { type: 'string', default: '8' },
			phases: { type: 'string', default: 'nowatch,reactive,budget' },
			record: { type: 'boolean', default: false },
		},
	});
	const r = await runAlone((temporal) =>
		benchBudget(
			temporal,
			{
				sites: Number(values.sites),
				interval: Number(values.interval),
				attacks: Number(values.attacks),
				window: Number(values.window),
				budgetRps: Number(values['budget-rps']),
				budgetBurst: Number(values['budget-burst']),
			},
			String(values.phases).split(',') as Phase[],
		),
	);
	// only this bench's rows (another bench may carry the number 9 too)
	if (values.record)
		replaceResults((x) => x.bench === '9' && / service \d+\/s: /.test(x.measure), r.rows, 'budget', r.result);
}
