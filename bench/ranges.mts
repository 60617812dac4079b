/**
 * Bench 4: 10,000 attacker IPs → blacklist. The runbook's aggregation (workflows/pure/ranges.mts blacklistCandidates)
 * must produce exactly the maximal ranges of the address set (counted here independently: sort, count runs),
 * and the blacklist gets one add call per range. Calls go through the client against the simulator process;
 * the simulator's request log counts them.
 */
import { blacklistCandidates, formatIp, formatRange } from '../workflows/pure/ranges.mts';
import { createApiClient } from '../worker/src/service/client.mts';
import { round, startSimProcess, type Row } from './lib.mts';

const APP_ID = 'bench-ranges';
const SECRET = 'bench-ranges-secret-1';

/** Deterministic attacker set: runs of 2–64 adjacent addresses plus scattered single addresses. */
export function attackerIps(n: number, seed = 42): string[] {
	let s = seed >>> 0;
	const rnd = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
	const set = new Set<number>();
	const base = (203 << 24) >>> 0; // 203.0.0.0/8 keeps it away from the simulator's whitelisted ranges
	while (set.size < n * 0.6) {
		const start = base + Math.floor(rnd() * 2 ** 24);
		const len = 2 + Math.floor(rnd() * 63);
		for (let i = 0; i < len && set.size < n * 0.6; i++) set.add(start + i);
	}
	while (set.size < n) set.add(base + Math.floor(rnd() * 2 ** 24));
	const out = [...set].map(formatIp);
	// shuffle: the threat map does not come sorted by address
	for (let i = out.length - 1; i > 0; i--) {
		const j = Math.floor(rnd() * (i + 1));
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}

/** Number of maximal runs of consecutive addresses (independent of workflows/pure/ranges.mts). */
export function maximalRanges(ips: string[]): number {
	const nums = [...new Set(ips.map((ip) => ip.split('.').reduce((a, o) => a * 256 + Number(o), 0)))].sort(
		(a, b) => a - b,
	);
	let runs = 0;
	for (let i = 0; i < nums.length; i++) if (i === 0 || nums[i] !== nums[i - 1] + 1) runs++;
	return runs;
}

export async function benchRanges(o: { ips?: number } = {}) {
	const n = o.ips ?? 10_000;
	const ips = attackerIps(n);
	const expected = maximalRanges(ips);
	const t0 = performance.now();
	const cand = blacklistCandidates({ sources: ips, whitelist: [], protectedRanges: [], alreadyListed: [] });
	const aggregateMs = performance.now() - t0;
	const covered = cand.add.reduce((a, r) => a + (r.end - r.start + 1), 0);

	const sim = await startSimProcess(APP_ID, SECRET);
	const client = createApiClient({
		baseUrl: sim.url,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		connections: 1,
		retries: 0,
	});
	try {
		const ids = await sim.control<{ site_id: string; domain_port_id: string }>('GET', '/ids');
		const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
		await sim.control('DELETE', '/requests');
		const t1 = performance.now();
		// As the runbook applies them: one add per range, in order.
		for (const r of cand.add)
			await client.call('applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: formatRange(r) });
		const callsMs = performance.now() - t1;
		const calls = (await sim.control<unknown[]>('GET', '/requests?op=applicationProtection.ipBlacklist.add')).length;
		const listed = (
			(await client.call('applicationProtection.ipBlacklist.get', dp)) as { p_info: { ipv4: { black_soc: unknown[] } } }
		).p_info.ipv4.black_soc.length;
		const result = {
			ips: n,
			uniqueIps: new Set(ips).size,
			maximalRanges: expected,
			rangesFromAggregation: cand.add.length,
			addressesCovered: covered,
			blacklistAddCalls: calls,
			entriesListedAfter: listed,
			aggregateMs: round(aggregateMs, 1),
			callsMs: round(callsMs, 0),
			perCallUs: round((callsMs * 1000) / Math.max(1, calls), 0),
			met: calls === expected && cand.add.length === expected && covered === n,
		};
		const rows: Row[] = [
			{
				bench: '4',
				measure: `${n} attacker IPs: blacklist add calls vs maximal ranges`,
				ours: `${calls} calls`,
				baseline: `${expected} ranges`,
				ratio: `${round(calls / expected, 3)}×`,
				goal: 'equal',
				met: result.met,
			},
			{
				bench: '4',
				measure: `${n} IPs: time (aggregation + ${calls} sequential add calls)`,
				ours: `${result.aggregateMs} ms + ${result.callsMs} ms`,
				baseline: '—',
				ratio: '—',
				goal: '—',
				met: null,
			},
		];
		return { result, rows };
	} finally {
		await client.close();
		await sim.stop();
	}
}
