import { formatIpv4, parseIpv4Entry, type Ipv4Range } from './catalog/ipv4';
import { uaPatternIssues } from './uaPatterns';

/**
 * The blast-radius guard: what a write that BLOCKS or ALLOWS traffic may never cover. One rule for every write path —
 * the client's validate step (so the n8n node, the node as an AI tool, `secsvc call`, the CLI, the activities and the
 * runbooks), the expiring blocks (api/blockRules.ts) and the runbooks' planning (workflows/pure/ranges.mts).
 *
 * Pure: no zod, no I/O, no globals (safe inside workflow code). The site's own addresses are looked up by the
 * hosts (api/ownAddresses.ts) and passed in.
 *
 * Rules, for one entry (address, start-end range or CIDR):
 *  1. widest prefix: at most 2^(32 − widestPrefix) addresses (default /16) — the only rule an audited override lifts;
 *  2. never a special range (SPECIAL_RANGES);
 *  3. never a configured protected range (plan `blacklist.protectedRanges`, the credential's Protected Ranges, the
 *     worker's `guard.protectedRanges`, a tenant's declared ones: where the site's networks and hosts are declared);
 *  4. never the site's own addresses as the service shows them (api/ownAddresses.ts).
 * Rules 2–4 refuse any overlap: a block that covers a single protected address is refused.
 * An entry on the ALLOW side (whitelist, HTTP filters that accept or pass) obeys rules 1–2 only: a protected range or
 * the site's own address is exactly what may be let through. User-agent patterns: api/uaPatterns.ts.
 */

export const DEFAULT_WIDEST_PREFIX = 16;

export interface SpecialRange {
	cidr: string;
	name: string;
}

/**
 * Ranges no blocking list may touch: blocking them either means nothing (they never appear as a source on the
 * Internet) or blocks far more than meant (0.0.0.0/0 overlaps 0.0.0.0/8). Private ranges (10/8, 172.16/12,
 * 192.168/16, 100.64/10) are not here: behind a proxy or a tunnel they can be real sources.
 */
export const SPECIAL_RANGES: readonly SpecialRange[] = [
	{ cidr: '0.0.0.0/8', name: '"this network" (RFC 1122)' },
	{ cidr: '127.0.0.0/8', name: 'loopback (RFC 1122)' },
	{ cidr: '169.254.0.0/16', name: 'link-local (RFC 3927)' },
	{ cidr: '224.0.0.0/4', name: 'multicast (RFC 5771)' },
	{ cidr: '240.0.0.0/4', name: 'reserved (RFC 1112), incl. the broadcast address 255.255.255.255 (RFC 919)' },
];

const SPECIAL: readonly (Ipv4Range & { text: string })[] = SPECIAL_RANGES.map((s) => ({
	...(parseIpv4Entry(s.cidr) as Ipv4Range),
	text: `${s.cidr}, ${s.name}`,
}));

export interface BlastRadiusPolicy {
	/** Widest prefix a block may have (0–32; default 16). */
	widestPrefix?: number;
	/** Configured protected ranges, each with where it was configured (named in the refusal). */
	protectedRanges?: readonly { range: string; source: string }[];
	/** The site's own addresses or ranges, each with where the service showed it. */
	ownAddresses?: readonly { range: string; source: string }[];
	/** An audited override: lifts the widest-prefix rule only (never special ranges, protected or own addresses). */
	allowWideBlock?: { reason: string };
}

/** A refusal: the field, the rule (one of RULES), and a sentence naming the conflicting range. */
export interface BlastRadiusIssue {
	field: string;
	rule: string;
	kind: 'widest-prefix' | 'special-range' | 'protected-range' | 'own-address' | 'every-user-agent';
	/** The conflicting range (the special / protected / own one; for the width rule, the entry). */
	conflict: string;
}

export const rangeText = (r: Ipv4Range) =>
	r.start === r.end ? formatIpv4(r.start) : `${formatIpv4(r.start)}-${formatIpv4(r.end)}`;
const overlaps = (a: Ipv4Range, b: Ipv4Range) => a.start <= b.end && b.start <= a.end;

/** Which way a guarded entry acts: keeps its sources out, or lets them past the protections. */
export type GuardSide = 'block' | 'allow';

/** The widest-prefix rule's text (also the expiring blocks' message since they first refused wide blocks). */
export function widthRule(entry: string, width: number, widestPrefix: number, side: GuardSide = 'block'): string {
	const what = side === 'block' ? 'the widest block allowed' : 'the widest entry an allow list may take';
	return `${entry} covers ${width} addresses: wider than ${what} (/${widestPrefix}, ${2 ** (32 - widestPrefix)} addresses; maxPrefix)`;
}

/**
 * The rules name two settings by their configuration keys (`maxPrefix`, `allowWideBlock`: what the CLI, the worker and
 * the blocks workflow take). A host with its own words renders them here, so the guard stays one: the n8n node names
 * its field label and has no widest-prefix setting to name.
 */
export function guardRuleIn(rule: string, words: { override: string; widestPrefix?: string }): string {
	return rule
		.replace(/; maxPrefix\)/g, words.widestPrefix ? `; ${words.widestPrefix})` : ')')
		.replace(/an audited override \(allowWideBlock with a reason\) may lift this rule/g, words.override);
}

/** A widest prefix from configuration: an integer 0–32, else the default. */
export function widestPrefixOf(v: unknown): number {
	const n = typeof v === 'string' && v.trim() ? Number(v) : v;
	return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 32 ? n : DEFAULT_WIDEST_PREFIX;
}

/**
 * Every rule one guarded entry breaks (empty = allowed). An entry that is not a valid IPv4 entry gives no issue
 * here: the catalog's own rule reports it. On the allow side only the width and the special ranges count.
 */
export function blastRadiusIssues(
	entry: string,
	field: string,
	policy: BlastRadiusPolicy = {},
	shownAs?: string,
	side: GuardSide = 'block',
): BlastRadiusIssue[] {
	const r = parseIpv4Entry(String(entry).trim());
	if (!r) return [];
	const out: BlastRadiusIssue[] = [];
	const shown = (shownAs ?? String(entry)).trim();
	const prefix = widestPrefixOf(policy.widestPrefix ?? DEFAULT_WIDEST_PREFIX);
	const width = r.end - r.start + 1;
	if (width > 2 ** (32 - prefix) && !policy.allowWideBlock?.reason?.trim())
		out.push({
			field,
			kind: 'widest-prefix',
			conflict: shown,
			rule: `${widthRule(shown, width, prefix, side)}; an audited override (allowWideBlock with a reason) may lift this rule`,
		});
	for (const s of SPECIAL)
		if (overlaps(r, s))
			out.push({
				field,
				kind: 'special-range',
				conflict: s.text,
				rule: `${shown} overlaps the special range ${s.text}: never ${side === 'block' ? 'blocked' : 'allowed'}`,
			});
	if (side === 'allow') return out;
	for (const p of policy.protectedRanges ?? []) {
		const pr = parseIpv4Entry(p.range);
		if (pr && overlaps(r, pr))
			out.push({
				field,
				kind: 'protected-range',
				conflict: p.range,
				rule: `${shown} overlaps the protected range ${p.range} (${p.source}): never blocked`,
			});
	}
	for (const o of policy.ownAddresses ?? []) {
		const or = parseIpv4Entry(o.range);
		if (or && overlaps(r, or))
			out.push({
				field,
				kind: 'own-address',
				conflict: o.range,
				rule: `${shown} overlaps the site's own address ${o.range} (${o.source}): never blocked`,
			});
	}
	return out;
}

/**
 * Which fields of which operation carry guarded address entries, and on which side. The decision (api/README.md
 * "Blast-radius guard"):
 * - block: IP blacklist add (`ip_black_list`); HTTP filter create / update (`other_iprange`, the sources the policy
 *   acts on) when the action keeps them from the site — every action but ACCEPT and PASS;
 * - allow: IP whitelist add (`ip_white_list`); HTTP filter create / update with ACCEPT or PASS;
 * - not guarded: removes, switches, thresholds, IP authentication and authentication bypass (no address lists); the
 *   UA blacklist has its own rule (api/uaPatterns.ts).
 */
export const GUARDED_FIELDS: Readonly<
	Record<string, { field: string; side: (p: Record<string, unknown>) => GuardSide }>
> = {
	'applicationProtection.ipBlacklist.add': { field: 'ip_black_list', side: () => 'block' },
	'applicationProtection.ipWhitelist.add': { field: 'ip_white_list', side: () => 'allow' },
	'applicationProtection.httpFilter.create': { field: 'other_iprange', side: (p) => filterSide(p) },
	'applicationProtection.httpFilter.update': { field: 'other_iprange', side: (p) => filterSide(p) },
};
const filterSide = (p: Record<string, unknown>): GuardSide =>
	['ACCEPT', 'PASS'].includes(String(p.action)) ? 'allow' : 'block';

/**
 * The guarded entries of a call (field path → entry text, the text the caller wrote when `given` holds it, and the
 * side); empty when the operation carries none. `params` are the parsed parameters (the catalog's normalized entries).
 */
export function guardedEntries(
	opId: string,
	params: Record<string, unknown>,
	given?: Record<string, unknown>,
): { field: string; entry: string; shown: string; side: GuardSide }[] {
	const b = GUARDED_FIELDS[opId];
	if (!b) return [];
	const side = b.side(params);
	const v = params[b.field];
	const g = given?.[b.field];
	if (v === undefined || v === null) return [];
	const raw = (x: unknown, e: string) => (typeof x === 'string' && parseIpv4Entry(x.trim()) ? x.trim() : e);
	if (Array.isArray(v))
		return v.map((e, i) => ({
			field: `${b.field}.${i}`,
			entry: String(e),
			shown: raw(Array.isArray(g) ? g[i] : undefined, String(e)),
			side,
		}));
	return [{ field: b.field, entry: String(v), shown: raw(g, String(v)), side }];
}

/**
 * Every issue of a call's guarded entries under a policy (entries named as the caller wrote them, with `given`),
 * and of its user-agent patterns.
 */
export function callIssues(
	opId: string,
	params: Record<string, unknown>,
	policy: BlastRadiusPolicy,
	given?: Record<string, unknown>,
): readonly BlastRadiusIssue[] {
	const ua = uaPatternIssues(opId, params);
	if (!GUARDED_FIELDS[opId]) return ua; // most operations carry no address entry: nothing more to build
	return [
		...guardedEntries(opId, params, given).flatMap((e) => blastRadiusIssues(e.entry, e.field, policy, e.shown, e.side)),
		...ua,
	];
}

/** Protected-range texts (configuration: a list or one comma/space/newline-separated text) → policy entries; invalid ones named. */
export function parseProtectedRanges(
	v: unknown,
	source: string,
): { ranges: { range: string; source: string }[]; invalid: string[] } {
	const texts = Array.isArray(v) ? v.map(String) : typeof v === 'string' ? v.split(/[\s,;]+/) : [];
	const ranges: { range: string; source: string }[] = [];
	const invalid: string[] = [];
	for (const t of texts.map((x) => x.trim()).filter(Boolean)) {
		if (parseIpv4Entry(t)) ranges.push({ range: t, source });
		else invalid.push(t);
	}
	return { ranges, invalid };
}
