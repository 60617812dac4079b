/**
 * Attacks from specs (control API, scenarios): validated, sources expanded into concrete IPs, waves included
 * (simulator/waves.mts reads them).
 */
import { ATTACK_TYPES, COUNTRIES, PROFILES, type Attack, type AttackSource, type Curve, type World } from './state.mts';
import { Rng, intToIp, ipToInt } from './util.mts';

export interface SourceSpec {
	ip?: string;
	cidr?: string;
	asn?: number | string;
	country?: string;
	weight?: number;
}

export interface AttackSpec {
	site_id: string;
	attack_type?: string;
	start: number;
	duration?: number;
	curve?: Partial<Curve>;
	sources?: SourceSpec[];
	autoMitigate?: boolean;
	protocol?: string;
	dest_port?: string | number;
	/** Later waves: from `at` seconds after the start the attack comes from these sources instead. */
	waves?: WaveSpec[];
}

/** One wave of an attack: shifting sources (new ones), returning ones (an earlier wave's ip again), or both. */
export interface WaveSpec {
	at: number;
	sources: SourceSpec[];
}

/** Waves in time order; each needs `at` > 0 seconds and at least one source. */
function expandWaves(rng: Rng, waves: WaveSpec[] | undefined): Attack['waves'] {
	if (waves === undefined) return undefined;
	const out = waves.map((wv, i) => {
		if (!(Number.isFinite(wv?.at) && wv.at > 0)) throw new Error(`waves.${i}.at must be a number of seconds > 0`);
		if (!Array.isArray(wv.sources) || !wv.sources.length)
			throw new Error(`waves.${i}.sources must be a non-empty list of sources`);
		return { at: Number(wv.at), sources: wv.sources.flatMap((s) => expandSource(rng, s)) };
	});
	return out.sort((a, b) => a.at - b.at);
}

/** Validates an attack spec (control API / scenario) and expands its sources into concrete IPs. */
export function makeAttack(w: World, rng: Rng, spec: AttackSpec): Attack {
	if (!w.sites.has(spec.site_id)) throw new Error(`site_id '${spec.site_id}' does not exist`);
	const type = spec.attack_type ?? 'UDP Total';
	if (!(ATTACK_TYPES as readonly string[]).includes(type))
		throw new Error(`attack_type must be one of ${ATTACK_TYPES.join(', ')}`);
	const c = spec.curve ?? {};
	const shape = c.shape ?? (c.points ? 'points' : 'constant');
	if (!['constant', 'ramp', 'points'].includes(shape)) throw new Error('curve.shape must be constant, ramp or points');
	const peakBps = Number(c.peakBps ?? (c.points ? Math.max(...c.points.map((p) => p[1])) : 2_000_000_000));
	const peakPps = Number(
		c.peakPps ?? (c.points ? Math.max(...c.points.map((p) => p[2] ?? 0)) : Math.round(peakBps / 800)),
	);
	if (!(peakBps >= 0) || !(peakPps >= 0))
		throw new Error('curve.peakBps and curve.peakPps must be non-negative numbers');
	if (shape === 'points' && (!Array.isArray(c.points) || c.points.length === 0))
		throw new Error('curve.points must be a non-empty array of [offsetSeconds, bps, pps]');
	const duration = Number(spec.duration ?? 0);
	if (!(duration >= 0)) throw new Error('duration must be ≥ 0 seconds (0 = until stopped)');
	const specs = spec.sources && spec.sources.length ? spec.sources : [{ country: 'CN' }, { country: 'US' }];
	const sources: AttackSource[] = [];
	for (const s of specs) sources.push(...expandSource(rng, s));
	const profile = PROFILES[0];
	return {
		id: `A${++w.counters.alert}`,
		site_id: spec.site_id,
		attack_type: type,
		start: Math.floor(spec.start),
		duration,
		curve: { shape: shape as Curve['shape'], peakBps, peakPps, rampSeconds: c.rampSeconds ?? 60, points: c.points },
		sources,
		...(spec.waves ? { waves: expandWaves(rng, spec.waves) } : {}),
		autoMitigate: spec.autoMitigate ?? false,
		profile_name: profile.name,
		profile_desc: profile.desc,
		protocol: spec.protocol ?? (/TCP|HTTP/.test(type) ? 'TCP' : /ICMP/.test(type) ? 'ICMP' : 'UDP'),
		dest_port: String(
			spec.dest_port ?? (/HTTPS/.test(type) ? 443 : /HTTP/.test(type) ? 80 : /DNS/.test(type) ? 53 : 0),
		),
	};
}

function expandSource(rng: Rng, s: SourceSpec): AttackSource[] {
	const weight = s.weight === undefined ? 1 : Number(s.weight);
	if (!(weight > 0)) throw new Error('source weight must be > 0');
	const geo = (code?: string) => COUNTRIES.find((c) => c.code === code) ?? rng.pick(COUNTRIES);
	const mk = (ip: string, from: string, g = geo(), asn = rng.int(64512, 65534)): AttackSource => ({
		ip,
		country: g.country,
		code: g.code,
		asn,
		org: `AS${asn} ${rng.pick(['Transit', 'Hosting', 'Broadband', 'Mobile'])} Ltd`,
		latitude: Math.round((g.lat + (rng.next() - 0.5)) * 100) / 100,
		longitude: Math.round((g.lon + (rng.next() - 0.5)) * 100) / 100,
		weight: 0,
		from,
	});
	let out: AttackSource[];
	if (s.ip !== undefined) {
		if (ipToInt(s.ip) === undefined) throw new Error(`source ip '${s.ip}' is not an IPv4 address`);
		out = [mk(s.ip, s.ip)];
	} else if (s.cidr !== undefined) {
		const slash = s.cidr.indexOf('/');
		const base = slash > 0 ? ipToInt(s.cidr.slice(0, slash)) : undefined;
		const len = Number(s.cidr.slice(slash + 1));
		if (base === undefined || !(len >= 0 && len <= 32)) throw new Error(`source cidr '${s.cidr}' is not a.b.c.d/len`);
		const size = 2 ** (32 - len);
		const start = base - (base % size);
		const n = Math.min(4, size);
		const g = geo();
		const step = Math.floor(size / n);
		out = Array.from({ length: n }, (_, i) =>
			mk(intToIp(Math.min(start + i * step + (size > 2 ? 1 : 0), start + size - 1)), s.cidr as string, g),
		);
	} else if (s.asn !== undefined) {
		const asn = Number(String(s.asn).replace(/^AS/i, ''));
		if (!Number.isInteger(asn) || asn <= 0) throw new Error(`source asn '${s.asn}' is not an AS number`);
		const base = (ipToInt('100.64.0.0') as number) + (asn % 4096) * 256;
		const g = geo();
		out = [1, 2, 3].map((i) => mk(intToIp(base + i * 17), `AS${asn}`, g, asn));
	} else if (s.country !== undefined) {
		const g = COUNTRIES.find((c) => c.code === String(s.country).toUpperCase());
		if (!g) throw new Error(`source country must be one of ${COUNTRIES.map((c) => c.code).join(', ')}`);
		const base = (ipToInt('45.0.0.0') as number) + (COUNTRIES.indexOf(g) * 65536 + rng.int(0, 255) * 256);
		out = [1, 2, 3].map((i) => mk(intToIp(base + i * 29), `country:${g.code}`, g));
	} else {
		throw new Error('each source needs one of ip, cidr, asn, country');
	}
	for (const o of out) o.weight = weight / out.length;
	return out;
}
