/** The event detail's four modules (§4.4), from an attack and the simulator clock; sources of the moment (waves.mts). */
import type { Attack, AttackSource, Site, World } from './state.mts';
import { baselineAt, endOf, isOngoing, maxRaw, rawAt } from './attacks.mts';
import { ipToInt } from './util.mts';
import { sourcesAt } from './waves.mts';

/** The four modules of the event detail (§4.4). */
export function eventDetail(w: World, a: Attack, now: number, module: string): unknown {
	const site = w.sites.get(a.site_id) as Site;
	const ongoing = isOngoing(a, now);
	const until = Math.min(now, endOf(a));
	const ref = ongoing ? rawAt(a, now) : maxRaw(a, now);
	const sources = sourcesAt(a, ongoing ? now : until - 1e-6);
	const totalW = sources.reduce((s, x) => s + x.weight, 0);
	if (module === 'threat_map') {
		const row = (s: (typeof sources)[number], v: number) => ({
			code: s.code,
			country: s.country,
			ip: s.ip,
			org: s.org,
			size: String(Math.round((v * s.weight) / totalW)),
			latitude: s.latitude,
			longitude: s.longitude,
			percent: Math.round((100 * s.weight) / totalW),
		});
		const sorted = [...sources].sort((p, q) => q.weight - p.weight || (p.ip < q.ip ? -1 : 1));
		return { bps: sorted.map((s) => row(s, ref.bps)), pps: sorted.map((s) => row(s, ref.pps)) };
	}
	if (module === 'traffic') {
		const span = Math.max(0, until - a.start);
		const step = Math.max(60, Math.ceil(span / 120));
		const bps: Record<string, number[][]> = { attack: [], clean: [] };
		const pps: Record<string, number[][]> = { attack: [], clean: [] };
		for (let t = a.start; t <= until; t += step) {
			const r = rawAt(a, Math.min(t, until - 1e-6));
			const c = baselineAt(site, t);
			bps.attack.push([t, r.bps]);
			bps.clean.push([t, c]);
			pps.attack.push([t, r.pps]);
			pps.clean.push([t, Math.round(c / 8000)]);
		}
		return { bps, pps };
	}
	if (module === 'characterization') {
		const out: { country: string; element: string; item: string; value: string; percent: number }[] = [];
		const byCountry = new Map<string, { w: number; code: string }>();
		for (const s of sources) {
			const v = byCountry.get(s.country) ?? { w: 0, code: s.code };
			v.w += s.weight;
			byCountry.set(s.country, v);
		}
		for (const [c, v] of byCountry)
			out.push({
				country: c,
				element: 'src_country',
				item: 'Source country',
				value: v.code,
				percent: Math.round((100 * v.w) / totalW),
			});
		out.push({ country: '', element: 'protocol', item: 'Protocol', value: a.protocol, percent: 100 });
		out.push({ country: '', element: 'dst_port', item: 'Destination port', value: a.dest_port, percent: 100 });
		out.push({ country: '', element: 'dst_ip', item: 'Destination IP', value: site.site_ip, percent: 100 });
		return out;
	}
	return trafficPatterns(a, sources, maxRaw(a, now), Math.max(1, until - a.start));
}

/** traffic_patterns: one row per source /24 of the sources of the moment. */
function trafficPatterns(a: Attack, sources: AttackSource[], mx: { bps: number; pps: number }, elapsed: number) {
	const totalW = sources.reduce((t, x) => t + x.weight, 0);
	const rows = new Map<string, { asn: number; w: number }>();
	for (const s of sources) {
		const n = ipToInt(s.ip) as number;
		const base = n - (n % 256);
		const cidr = `${Math.floor(base / 16777216)}.${Math.floor(base / 65536) % 256}.${Math.floor(base / 256) % 256}.0/24`;
		const v = rows.get(cidr) ?? { asn: s.asn, w: 0 };
		v.w += s.weight;
		rows.set(cidr, v);
	}
	return [...rows].map(([cidr, v]) => {
		const f = v.w / totalW;
		const maxB = Math.round(mx.bps * f);
		const maxP = Math.round(mx.pps * f);
		const avgB = Math.round(maxB * 0.8);
		const avgP = Math.round(maxP * 0.8);
		return {
			asn: v.asn,
			cidr,
			dest_port: a.dest_port,
			protocol: a.protocol,
			router: 'edge-1',
			src_port: a.protocol === 'UDP' && /Amplification|Reflection/.test(a.attack_type) ? 'service' : 'random',
			average: { bps: avgB, pps: avgP },
			max: { bps: maxB, pps: maxP },
			total: { byte: Math.round((avgB / 8) * elapsed), packet: Math.round(avgP * elapsed) },
		};
	});
}
