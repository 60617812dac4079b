/**
 * Bench T — tenants (issue 24 item 8): N tenants (default 500) over 2N sites (1,000), the simulator in strict tenancy
 * with 60 s access tokens, 2 compiled worker processes in tenant mode on one task queue, a fleet watch over every
 * site (every 10 s) as the load: each check is a call with its site's tenant token, so every tenant's token is asked
 * for after each expiry.
 *
 * Measured over the window (after every tenant is installed and the watch has run one interval):
 *  - renewal requests per tenant-hour (refresh POSTs the simulator answered) against the renewals due (one per
 *    token lifetime: a token is renewed at expiry − min(60 s, lifetime / 5) = every 48 s for 60 s tokens); refused
 *    refreshes (lock-outs) and calls refused for a foreign token;
 *  - the time a call waited for its tenant's token after an expiry (`secsvc_tenant_token_wait` histogram from both
 *    workers' /metrics): over the calls that found their token due — reason "ahead" (the held token at once, 0 ms)
 *    and "due" (waited for the next one) — p50 / p99 as the bucket bound they fall in; and the "due" ones alone;
 *  - peak RSS of each worker (/proc, every 100 ms); at the end, RSS by mapping kind and the cached workflows per
 *    task queue (temporal_sticky_cache_size).
 *
 * Alone: node --import tsx bench/tenants.mts [--tenants 500] [--ttl 60] [--window 300] [--interval 10] [--record "note"]
 * (`--record` replaces the bench-T rows and `results.tenants` in results.json).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { freePort, rssOf, type TemporalDev, type WorkerProcess } from '../demo/stack.mts';
import type { FleetSite } from '../workflows/fleet/shared.mts';
import { applyFleet } from '../workflows/fleet/client.mts';
import { parseFleet } from '../workflows/fleet/clientConfig.mts';
import { parseKeys, SealedPayloadCodec } from '../worker/src/temporal/codec.mts';
import { connectForCode, exchangeCode, installTenant, listTenants } from '../workflows/tenant/client.mts';
import { createApiClient } from '../worker/src/service/client.mts';
import { cpuSeconds, replaceResults, round, runAlone, startSimProcess, startSimWorker, type Row } from './lib.mts';
import { TEMPLATE } from './fleet.mts';
import { gaugeByQueue, smapsOf } from './memoryDiag.mts';

const APP_ID = 'bench-tenants';
const SECRET = 'bench-tenants-secret-1';
const REDIRECT = 'https://app.example.com/installed';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface TenantBenchOptions {
	tenants?: number;
	ttl?: number;
	/** Measurement window, seconds. */
	window?: number;
	interval?: number;
}

async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>) {
	let next = 0;
	await Promise.all(
		Array.from({ length: n }, async () => {
			while (next < items.length) await fn(items[next++]);
		}),
	);
}

/** Cumulative bucket counts of one histogram (summed over every label set but `le`), filtered by a label. */
export function histogram(text: string, name: string, label?: [string, string]): { le: number; count: number }[] {
	const sums = new Map<number, number>();
	const re = new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\d+(?:\\.\\d+)?)`, 'gm');
	for (const m of text.matchAll(re)) {
		const labels = m[1];
		if (label && !labels.includes(`${label[0]}="${label[1]}"`)) continue;
		const le = /le="([^"]+)"/.exec(labels)?.[1];
		const bound = le === '+Inf' ? Infinity : Number(le);
		sums.set(bound, (sums.get(bound) ?? 0) + Number(m[2]));
	}
	return [...sums].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/** The smallest bucket bound holding at least p of the observations (a p-quantile's upper bound). */
export function quantileBound(buckets: { le: number; count: number }[], p: number): number | undefined {
	const total = buckets.find((b) => b.le === Infinity)?.count ?? 0;
	if (!total) return undefined;
	return buckets.find((b) => b.count >= p * total)?.le;
}

export async function benchTenants(temporal: TemporalDev, opts: TenantBenchOptions = {}) {
	const n = opts.tenants ?? 500;
	const ttl = opts.ttl ?? 60;
	const windowS = opts.window ?? 300;
	const interval = opts.interval ?? 10;
	const keys = `k1:${randomBytes(32).toString('base64')}`;
	const sim = await startSimProcess(APP_ID, SECRET, [
		'--fleet',
		`${n}x2`,
		'--tenancy',
		'strict',
		'--token-ttl',
		String(ttl),
		'--log-limit',
		'2000000',
	]);
	const taskQueue = `bench-tenants-${process.pid}`;
	const connection = await Connection.connect({ address: temporal.address });
	const tc = new Client({
		connection,
		namespace: temporal.namespace,
		dataConverter: { payloadCodecs: [new SealedPayloadCodec(parseKeys(keys))] },
	});
	const ports = [await freePort(), await freePort()];
	const workers: WorkerProcess[] = [];
	const peaks = [0, 0];
	const sampler = setInterval(
		() => workers.forEach((w, i) => void rssOf(w.pid).then((r) => (peaks[i] = Math.max(peaks[i], r)))),
		100,
	);
	const app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	try {
		for (let i = 0; i < 2; i++)
			workers.push(
				await startSimWorker(temporal, sim, taskQueue, {
					env: {
						SECSVC_TENANTS: '1',
						SECSVC_PAYLOAD_KEYS: keys,
						SECSVC_METRICS_ADDRESS: `127.0.0.1:${ports[i]}`,
					},
				}),
			);
		// the fleet's customers with their 2 sites each (the seeded world's own customers are left out)
		const view = await sim.control<{ sites: { customer_id: string; site_id: string; domain_port_ids: string[] }[] }>(
			'GET',
			'/fleet',
		);
		const byCustomer = new Map<string, FleetSite[]>();
		for (const s of view.sites)
			byCustomer.set(s.customer_id, [
				...(byCustomer.get(s.customer_id) ?? []),
				{ customer_id: s.customer_id, site_id: s.site_id, domain_ports: s.domain_port_ids },
			]);
		const tenants = [...byCustomer].slice(0, n);
		const installedAt = new Map<string, number>();
		const tInstall = Date.now();
		await pool(tenants, 8, async ([customerId, sites]) => {
			const code = await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId });
			const token = await exchangeCode(app, { appId: APP_ID, secret: SECRET }, code);
			installedAt.set(customerId, token.issuedAt);
			await installTenant(tc, taskQueue, { customerId, kind: 'user', sites: sites.map((s) => s.site_id) }, token);
		});
		const installSeconds = (Date.now() - tInstall) / 1000;
		process.stderr.write(`bench T: ${n} tenants installed in ${round(installSeconds, 1)} s\n`);
		const sites = tenants.flatMap(([, s]) => s);
		await applyFleet(
			tc,
			taskQueue,
			parseFleet({
				fleet: `benchtenants${process.pid}`,
				intervalSeconds: interval,
				sitesPerWatcher: 250,
				batchSize: 50,
				concurrency: 8,
				parallelBatches: 4,
				activities: 'local',
				template: TEMPLATE,
				sites,
			}),
		);
		await sleep(interval * 1000);
		const metrics0 = await Promise.all(
			ports.map(async (p) => await (await fetch(`http://127.0.0.1:${p}/metrics`)).text()),
		);
		const cpu0 = workers.map((w) => cpuSeconds(w.pid));
		const seq0 = Math.max(0, ...(await sim.control<{ seq: number }[]>('GET', '/requests')).map((r) => r.seq));
		const t0 = Date.now();
		peaks.fill(0);
		await sleep(windowS * 1000);
		const t1 = Date.now();
		const metrics1 = await Promise.all(
			ports.map(async (p) => await (await fetch(`http://127.0.0.1:${p}/metrics`)).text()),
		);
		const cpu = workers.map((w, i) => round(cpuSeconds(w.pid) - cpu0[i], 1));
		const log = (
			await sim.control<{ seq: number; opId: string; code: number | null; time: number }[]>('GET', '/requests')
		).filter((r) => r.seq > seq0);
		const refreshes = log.filter((r) => r.opId === 'authorization.refreshToken');
		const refused = refreshes.filter((r) => r.code !== 0).length;
		const foreign = log.filter((r) => r.code === 40302).length;
		const expiredToken = log.filter((r) => r.code === 40101).length;
		const checks = log.filter((r) => r.opId === 'dashboard.isUnderAttack' && r.code === 0).length;
		// renewals due: one per 48 s (renewAt) for each tenant over the window
		const renewEveryS = ttl - Math.min(60, ttl / 5);
		const tenantHours = (n * (t1 - t0)) / 3_600_000;
		const perTenantHour = refreshes.length / tenantHours;
		const duePerTenantHour = 3600 / renewEveryS;
		const views = await listTenants(tc);
		const lockedOut = views.filter((v) => v.status !== 'ok').length;
		// the wait histogram over the window: window counts = end − start, per bucket, both workers. The calls made
		// after an expiry are those that found their tenant's token due: "ahead" (served the held token at once, 0 ms)
		// and "due" (waited for the next token).
		const waits = (texts: string[], reasons: string[]) => {
			const all = new Map<number, number>();
			for (const t of texts)
				for (const r of reasons)
					for (const b of histogram(t, 'secsvc_tenant_token_wait', ['reason', r]))
						all.set(b.le, (all.get(b.le) ?? 0) + b.count);
			return all;
		};
		const windowBuckets = (reasons: string[]) => {
			const w0 = waits(metrics0, reasons);
			return [...waits(metrics1, reasons)]
				.map(([le, c]) => ({ le, count: c - (w0.get(le) ?? 0) }))
				.sort((a, b) => a.le - b.le);
		};
		const total = (b: { le: number; count: number }[]) => b.find((x) => x.le === Infinity)?.count ?? 0;
		const buckets = windowBuckets(['due', 'ahead']);
		const blocked = windowBuckets(['due']);
		const waitCount = total(buckets);
		const blockedCount = total(blocked);
		const p99 = quantileBound(buckets, 0.99);
		const p50 = quantileBound(buckets, 0.5);
		const within1s = waitCount ? (buckets.find((b) => b.le === 1000)?.count ?? 0) / waitCount : 0;
		const blockedP99 = quantileBound(blocked, 0.99);
		// the largest wait's bucket bound: the first bound holding every blocked call
		const blockedMax = blockedCount ? quantileBound(blocked, 1) : undefined;
		const peakMB = peaks.map((p) => Math.round(p / 1024 / 1024));
		const cachedWorkflows = metrics1.map((t) => gaugeByQueue(t, 'temporal_sticky_cache_size'));
		const smaps = workers.map((w) => smapsOf(w.pid));
		const endRssMB = await Promise.all(workers.map(async (w) => Math.round((await rssOf(w.pid)) / 2 ** 20)));
		const result = {
			tenants: n,
			sites: sites.length,
			tokenTtlSeconds: ttl,
			intervalSeconds: interval,
			windowSeconds: round((t1 - t0) / 1000, 1),
			installSeconds: round(installSeconds, 1),
			refreshPosts: refreshes.length,
			refusedRefreshes: refused,
			lockedOutTenants: lockedOut,
			foreignTokenRefusals: foreign,
			expiredTokenRefusals: expiredToken,
			checks,
			renewalsPerTenantHour: round(perTenantHour, 1),
			renewalsDuePerTenantHour: round(duePerTenantHour, 1),
			callsAfterExpiry: waitCount,
			tokenWaitP50BoundMs: p50 ?? null,
			tokenWaitP99BoundMs: p99 ?? null,
			tokenWaitsWithin1s: round(within1s, 4),
			callsThatWaited: blockedCount,
			waitedP99BoundMs: blockedP99 ?? null,
			waitedMaxBoundMs: blockedMax ?? null,
			peakRssMB: peakMB,
			endRssMB,
			workerCpuSeconds: cpu,
			cachedWorkflows,
			smapsMB: smaps,
		};
		const tag = `${n} tenants over ${sites.length} sites, ${ttl} s tokens, 2 workers, fleet watch every ${interval} s, ${result.windowSeconds} s window`;
		const rows: Row[] = [
			{
				bench: 'T',
				measure: `${tag}: renewal requests per tenant-hour (refresh POSTs; refused; locked-out tenants; calls refused for a foreign / expired token)`,
				ours: `${result.renewalsPerTenantHour} (${refreshes.length} POSTs; ${refused} refused; ${lockedOut} locked out; ${foreign} / ${expiredToken})`,
				baseline: `${result.renewalsDuePerTenantHour} due (one per ${renewEveryS} s)`,
				ratio: `${round(perTenantHour / duePerTenantHour, 3)}×`,
				goal: "= expiries (≤ 1.02× due: the window's edges), 0 refused",
				met: perTenantHour <= duePerTenantHour * 1.02 && refused === 0 && lockedOut === 0 && foreign === 0,
			},
			{
				bench: 'T',
				measure: `${tag}: time a call waits for its tenant's token after an expiry (p50 / p99 bucket bound over the ${waitCount} calls that found their token due; share ≤ 1 s; of them, calls that waited for the next token: count, p99 / max bucket bound)`,
				ours: `≤ ${p50 ?? '—'} / ≤ ${p99 ?? '—'} ms (${round(within1s * 100, 2)} %); waited: ${blockedCount}, ≤ ${blockedP99 ?? '—'} / ≤ ${blockedMax ?? '—'} ms`,
				baseline: '—',
				ratio: '—',
				goal: 'p99 ≤ 1 s',
				met: p99 !== undefined && p99 <= 1000,
			},
			{
				bench: 'T',
				measure: `${tag}: peak RSS per worker · worker CPU s in the window`,
				ours: `${peakMB.join(' / ')} MB · ${cpu.join(' / ')} s`,
				baseline: '—',
				ratio: '—',
				goal: 'RSS < 300 MB per worker',
				met: peakMB.every((m) => m < 300),
			},
		];
		return { result, rows };
	} finally {
		clearInterval(sampler);
		await app.close().catch(() => {});
		for (const w of workers) await w.stop().catch(() => {});
		await connection.close().catch(() => {});
		await sim.stop();
	}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const { values } = parseArgs({
		options: {
			tenants: { type: 'string', default: '500' },
			ttl: { type: 'string', default: '60' },
			window: { type: 'string', default: '300' },
			interval: { type: 'string', default: '10' },
			record: { type: 'string' },
		},
	});
	const r = await runAlone((temporal) =>
		benchTenants(temporal, {
			tenants: Number(values.tenants),
			ttl: Number(values.ttl),
			window: Number(values.window),
			interval: Number(values.interval),
		}),
	);
	if (values.record !== undefined)
		replaceResults((x) => x.bench === 'T', r.rows, 'tenants', { note: values.record, ...r.result });
}
