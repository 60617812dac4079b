/**
 * Attack model: raw traffic curves, the effect of policies (blacklist, rapid detection, IP-auth rate
 * limiting, provider auto-mitigation) and every dashboard view (§4.4) computed from the attacks and the
 * simulator clock. Documented in simulator/README.md ("Attack model").
 */
import type { Attack, IpEntry, Site, World, LevelState } from './state.mts';
import { defaultLevel } from './state.mts';
import { ipToInt, parseCidr, parseRange, type IpRange } from './util.mts';
import { sourcesAt, sourcesUntil } from './waves.mts';

export interface MitigationModel {
	/** Multiplier on the remaining attack when the site-level detection mode is rapid (1). */
	rapid: number;
	/** Multiplier when a domain-port of the site has IP authentication enabled (1/2) in block mode (2) with a rate-limit action. */
	rateLimit: number;
	/** Multiplier once provider auto-mitigation engages (attack.autoMitigate and site detection on). */
	auto: number;
	/** Seconds after the attack start before auto-mitigation engages, normal / rapid detection. */
	detectDelayNormal: number;
	detectDelayRapid: number;
}

export const DEFAULT_MITIGATION: MitigationModel = {
	rapid: 0.5,
	rateLimit: 0.5,
	auto: 0.2,
	detectDelayNormal: 60,
	detectDelayRapid: 10,
};

export const endOf = (a: Attack): number =>
	a.stoppedAt !== undefined ? a.stoppedAt : a.duration > 0 ? a.start + a.duration : Number.POSITIVE_INFINITY;

export const isOngoing = (a: Attack, now: number) => a.start <= now && now < endOf(a);

/** Raw (unmitigated) attack traffic at time t (unix seconds). */
export function rawAt(a: Attack, t: number): { bps: number; pps: number } {
	if (t < a.start || t >= endOf(a)) return { bps: 0, pps: 0 };
	const off = t - a.start;
	const c = a.curve;
	if (c.shape === 'ramp') {
		const f = Math.min(1, off / Math.max(1, c.rampSeconds ?? 60));
		return { bps: Math.round(c.peakBps * f), pps: Math.round(c.peakPps * f) };
	}
	if (c.shape === 'points' && c.points) {
		const p = c.points;
		if (off <= p[0][0]) return { bps: p[0][1], pps: p[0][2] ?? 0 };
		for (let i = 1; i < p.length; i++) {
			if (off <= p[i][0]) {
				const f = (off - p[i - 1][0]) / Math.max(1e-9, p[i][0] - p[i - 1][0]);
				return {
					bps: Math.round(p[i - 1][1] + f * (p[i][1] - p[i - 1][1])),
					pps: Math.round((p[i - 1][2] ?? 0) + f * ((p[i][2] ?? 0) - (p[i - 1][2] ?? 0))),
				};
			}
		}
		const last = p[p.length - 1];
		return { bps: last[1], pps: last[2] ?? 0 };
	}
	return { bps: c.peakBps, pps: c.peakPps };
}

/** Maximum raw traffic between the attack start and min(until, end). */
export function maxRaw(a: Attack, until: number): { bps: number; pps: number } {
	const stop = Math.min(until, endOf(a) - 1e-6);
	if (stop < a.start) return { bps: 0, pps: 0 };
	const c = a.curve;
	if (c.shape === 'constant') return { bps: c.peakBps, pps: c.peakPps };
	if (c.shape === 'ramp') return rawAt(a, stop);
	let best = rawAt(a, stop);
	for (const p of c.points ?? []) {
		if (a.start + p[0] <= stop) best = { bps: Math.max(best.bps, p[1]), pps: Math.max(best.pps, p[2] ?? 0) };
	}
	return best;
}

function entryRange(e: IpEntry): IpRange | undefined {
	if (e.type === 'range') {
		const a = ipToInt(e.start_ip ?? '');
		const b = ipToInt(e.end_ip ?? '');
		return a === undefined || b === undefined ? undefined : { start: a, end: b };
	}
	const ip = e.ip ?? '';
	if (ip.includes('/')) return parseCidr(ip);
	const a = ipToInt(ip);
	return a === undefined ? undefined : { start: a, end: a };
}

export { parseRange };

export interface Effect {
	raw: { bps: number; pps: number };
	/** Attack traffic that still reaches the site after all policies. */
	bps: number;
	pps: number;
	blockedSources: string[];
	factors: { rapid: boolean; rateLimit: boolean; auto: boolean };
}

export function siteLevel(w: World, site: Site): LevelState {
	return w.levels.get(`${site.customer_id}/${site.site_id}/0/0`) ?? defaultLevel('site');
}

/** Effect of the current policies on one attack at time `now`. */
export function effectOf(w: World, m: MitigationModel, a: Attack, now: number): Effect {
	const site = w.sites.get(a.site_id) as Site;
	const raw = rawAt(a, now);
	const black: IpRange[] = [];
	const white: IpRange[] = [];
	let rateLimit = false;
	for (const id of site.domain_port_ids) {
		const p = w.domainPorts.get(id)?.policy;
		if (!p) continue;
		if (p.switches.p_wbl.enable === 1) {
			// enable: 0 = enabled, 1 = disabled for both lists (§2.4).
			if (p.ipBlacklist.enable === 0)
				for (const e of p.ipBlacklist.entries) {
					const r = entryRange(e);
					if (r) black.push(r);
				}
			if (p.ipWhitelist.enable === 0)
				for (const e of p.ipWhitelist.entries) {
					const r = entryRange(e);
					if (r) white.push(r);
				}
		}
		const ip = p.authIp;
		if (ip.enable !== 0 && ip.mode === 2 && (ip.action === 'ratelimit' || ip.action === 'ratelimit_blacklist'))
			rateLimit = true;
	}
	let totalW = 0;
	let passW = 0;
	const blockedSources: string[] = [];
	for (const s of sourcesAt(a, now)) {
		totalW += s.weight;
		const n = ipToInt(s.ip) as number;
		const inR = (r: IpRange) => n >= r.start && n <= r.end;
		if (black.some(inR) && !white.some(inR)) blockedSources.push(s.ip);
		else passW += s.weight;
	}
	const share = totalW > 0 ? passW / totalW : 1;
	const level = siteLevel(w, site);
	const rapid = level.detection.model === 1;
	const delay = rapid ? m.detectDelayRapid : m.detectDelayNormal;
	const auto = a.autoMitigate && level.overview.detection_mode !== 0 && now - a.start >= delay;
	const f = share * (rapid ? m.rapid : 1) * (rateLimit ? m.rateLimit : 1) * (auto ? m.auto : 1);
	return {
		raw,
		bps: Math.round(raw.bps * f),
		pps: Math.round(raw.pps * f),
		blockedSources,
		factors: { rapid, rateLimit, auto },
	};
}

export function severityOf(maxBps: number): number {
	// 0 low, 1 high, 2 medium/blackhole (§2.5). Our thresholds: ≥ 40 Gbps blackhole (2), ≥ 10 Gbps high (1).
	return maxBps >= 40e9 ? 2 : maxBps >= 10e9 ? 1 : 0;
}

export function eventOf(w: World, a: Attack, now: number) {
	const site = w.sites.get(a.site_id) as Site;
	const ongoing = isOngoing(a, now);
	const end = endOf(a);
	const mx = maxRaw(a, now);
	return {
		alert_id: a.id,
		attack_type: a.attack_type,
		duration: Math.floor((ongoing ? now : end) - a.start),
		start_time: a.start,
		end_time: ongoing ? 0 : Math.floor(end),
		max_bps: mx.bps,
		max_pps: mx.pps,
		profile_desc: a.profile_desc,
		profile_name: a.profile_name,
		severity: severityOf(mx.bps),
		site_ip: site.site_ip,
		site_name: site.site_name,
		status: ongoing ? 1 : 0,
	};
}

export function baselineAt(site: Site, now: number): number {
	return Math.round(site.baseline_bps * (1 + 0.05 * Math.sin(now / 300)));
}

export function isUnderAttack(w: World, m: MitigationModel, site: Site, now: number) {
	let status = 0;
	let bps = 0;
	let last: Attack | undefined;
	for (const a of w.attacks) {
		if (a.site_id !== site.site_id || a.start > now) continue;
		if (isOngoing(a, now)) {
			status = 1;
			bps += effectOf(w, m, a, now).bps;
		} else if (!last || endOf(a) > endOf(last)) last = a;
	}
	if (status === 1) return { status, bps_size: bps };
	return { status: 0, bps_size: last ? maxRaw(last, now).bps : 0 };
}

export function currentTraffic(w: World, m: MitigationModel, site: Site, now: number) {
	let bps = baselineAt(site, now);
	for (const a of w.attacks) if (a.site_id === site.site_id && isOngoing(a, now)) bps += effectOf(w, m, a, now).bps;
	return { bps_size: bps };
}

export function activeMitigation(w: World, m: MitigationModel, site: Site, now: number) {
	const out = [];
	for (const a of w.attacks) {
		if (a.site_id !== site.site_id || !isOngoing(a, now)) continue;
		const e = effectOf(w, m, a, now);
		if (e.bps >= e.raw.bps) continue; // nothing is being dropped
		const clean = baselineAt(site, now);
		out.push({
			bps: { bot: e.raw.bps - e.bps, clean },
			pps: { bot: e.raw.pps - e.pps, clean: Math.round(clean / 8000) },
			cidr: `${site.site_ip}/32`,
			name: e.factors.auto ? a.profile_name : (w.domainPorts.get(site.domain_port_ids[0])?.domain ?? site.site_name),
		});
	}
	return out;
}

const RANGE_SECONDS: Record<string, number> = { hour: 3600, day: 86400, week: 7 * 86400, month: 30 * 86400 };

export function networkSummary(w: World, site: Site, now: number, range: string, type: 'bps' | 'pps') {
	const from = now - RANGE_SECONDS[range];
	const app = new Map<string, { count: number; size: number }>();
	const asn = new Map<number, { count: number; size: number }>();
	const atype = new Map<string, number>();
	const country = new Map<string, number>();
	const ip = new Map<string, number>();
	const proto = new Map<string, { count: number; size: number }>();
	const bump = <K,>(m: Map<K, { count: number; size: number }>, k: K, size: number) => {
		const v = m.get(k) ?? { count: 0, size: 0 };
		v.count++;
		v.size += size;
		m.set(k, v);
	};
	const sum = <K,>(m: Map<K, number>, k: K, size: number) => m.set(k, (m.get(k) ?? 0) + size);
	for (const a of w.attacks) {
		if (a.site_id !== site.site_id || a.start > now || endOf(a) < from) continue;
		const size = maxRaw(a, now)[type];
		const appName =
			a.dest_port === '443' ? 'HTTPS' : a.dest_port === '80' ? 'HTTP' : a.dest_port === '53' ? 'DNS' : 'Other';
		bump(app, appName, size);
		bump(proto, a.protocol, size);
		sum(atype, a.attack_type, size);
		const sources = sourcesUntil(a, now);
		const totalW = sources.reduce((s, x) => s + x.weight, 0);
		const seenAsn = new Set<number>();
		for (const s of sources) {
			const part = Math.round((size * s.weight) / totalW);
			sum(country, s.country, part);
			sum(ip, s.ip, part);
			if (!seenAsn.has(s.asn)) {
				seenAsn.add(s.asn);
				const v = asn.get(s.asn) ?? { count: 0, size: 0 };
				v.count++;
				asn.set(s.asn, v);
			}
			(asn.get(s.asn) as { size: number }).size += part;
		}
	}
	const bySize = <T extends { size: number }>(x: T[]) => x.sort((p, q) => q.size - p.size);
	return {
		app: bySize([...app].map(([k, v]) => ({ app: k, count: v.count, size: v.size }))),
		as_num: bySize([...asn].map(([k, v]) => ({ as: k, count: v.count, size: v.size }))),
		attack_type: bySize([...atype].map(([k, v]) => ({ attack_type: k, size: v }))),
		country: bySize([...country].map(([k, v]) => ({ country: k, size: v }))),
		ip: bySize([...ip].map(([k, v]) => ({ ip: k, size: v }))),
		proto: bySize([...proto].map(([k, v]) => ({ proto: k, count: v.count, size: v.size }))),
	};
}

export { eventDetail } from './eventDetail.mts';
