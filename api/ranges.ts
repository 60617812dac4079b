/**
 * Pure IPv4 range arithmetic shared by the runbooks (deterministic; safe inside workflow code) and the n8n nodes
 * (the trigger's attacking ranges, IP Blacklist › Add with many entries). No imports besides ./catalog/ipv4.
 *
 * - `aggregate` merges addresses / ranges / CIDRs into the fewest start-end ranges that cover exactly the
 *   same addresses (overlapping and adjacent ranges are merged; gaps are never bridged).
 * - `subtract` removes protected ranges (whitelist, configured protected ranges, already-listed entries).
 * - `formatRange` writes a range the way the IP-list operations take it: `a.b.c.d` or `a.b.c.d-e.f.g.h`.
 * - `topThreatSources` picks an event's strongest attacking sources from its threat map.
 */

import { formatIpv4, listEntryRange, parseIpv4Entry, type Ipv4ListEntry, type Ipv4Range } from './catalog/ipv4';

export type Range = Ipv4Range;

/** An address as a dotted quad. */
export const formatIp = formatIpv4;

/** `a.b.c.d`, `a.b.c.d-e.f.g.h` (start ≤ end) or `a.b.c.d/len`; undefined when not valid. */
export const parseEntry = (s: string): Range | undefined => parseIpv4Entry(s);

export function formatRange(r: Range): string {
	return r.start === r.end ? formatIp(r.start) : `${formatIp(r.start)}-${formatIp(r.end)}`;
}

/** Sorted, merged (overlapping or adjacent), exact cover: the fewest start-end ranges for the same address set. */
export function aggregate(ranges: readonly Range[]): Range[] {
	const sorted = ranges
		.filter((r) => r.start <= r.end)
		.map((r) => ({ start: r.start, end: r.end }))
		.sort((a, b) => a.start - b.start || a.end - b.end);
	const out: Range[] = [];
	for (const r of sorted) {
		const last = out[out.length - 1];
		if (last && r.start <= last.end + 1) {
			if (r.end > last.end) last.end = r.end;
		} else out.push(r);
	}
	return out;
}

/** Addresses of `from` that are in none of `minus`, as the fewest ranges. */
export function subtract(from: readonly Range[], minus: readonly Range[]): Range[] {
	const cut = aggregate(minus);
	const out: Range[] = [];
	for (const r of aggregate(from)) {
		let start = r.start;
		for (const c of cut) {
			if (c.end < start) continue;
			if (c.start > r.end) break;
			if (c.start > start) out.push({ start, end: c.start - 1 });
			start = Math.max(start, c.end + 1);
			if (start > r.end) break;
		}
		if (start <= r.end) out.push({ start, end: r.end });
	}
	return aggregate(out);
}

export function covers(outer: Range, inner: Range): boolean {
	return outer.start <= inner.start && inner.end <= outer.end;
}

/** IP-list entry as returned by the service, and the addresses it covers (shared with the worker and the node). */
export type ListEntry = Ipv4ListEntry;
export const entryRange = listEntryRange;

/** Parses many entries; returns the valid ranges and the texts that were not valid. */
export function parseAll(texts: readonly string[]): { ranges: Range[]; invalid: string[] } {
	const ranges: Range[] = [];
	const invalid: string[] = [];
	for (const t of texts) {
		const r = parseEntry(t);
		if (r) ranges.push(r);
		else invalid.push(t);
	}
	return { ranges, invalid };
}

/**
 * Blacklist candidates: the attacking sources (deduplicated), aggregated to the fewest ranges, minus the
 * whitelist, the configured protected ranges and what is already blacklisted. `refuse` (the blast-radius guard,
 * api/blastRadius.ts) names why a source may never be blocked; such a source is skipped with that reason. A merged
 * range wider than `widestPrefix` is written as several ranges of at most that width (the same addresses).
 */
export function blacklistCandidates(input: {
	sources: readonly string[];
	whitelist: readonly Range[];
	protectedRanges: readonly Range[];
	alreadyListed: readonly Range[];
	refuse?: (source: string) => string | undefined;
	widestPrefix?: number;
}): { add: Range[]; skipped: { source: string; reason: string }[] } {
	const skipped: { source: string; reason: string }[] = [];
	const valid: Range[] = [];
	const seen = new Set<string>();
	for (const s of input.sources) {
		const r = parseEntry(s);
		if (!r) {
			skipped.push({ source: s, reason: 'not an IPv4 address, range or CIDR' });
			continue;
		}
		const key = `${r.start}-${r.end}`;
		if (seen.has(key)) continue;
		seen.add(key);
		const refused = input.refuse?.(s);
		if (refused) {
			skipped.push({ source: s, reason: refused });
			continue;
		}
		if (input.whitelist.some((w) => covers(w, r))) skipped.push({ source: s, reason: 'whitelisted' });
		else if (input.protectedRanges.some((p) => covers(p, r))) skipped.push({ source: s, reason: 'protected range' });
		else if (input.alreadyListed.some((p) => covers(p, r))) skipped.push({ source: s, reason: 'already blacklisted' });
		valid.push(r);
	}
	const add = subtract(valid, [...input.whitelist, ...input.protectedRanges, ...input.alreadyListed]);
	const max = input.widestPrefix === undefined ? undefined : 2 ** (32 - input.widestPrefix);
	return { add: max ? add.flatMap((r) => splitWidth(r, max)) : add, skipped };
}

/** A range as consecutive ranges of at most `max` addresses. */
function splitWidth(r: Range, max: number): Range[] {
	const out: Range[] = [];
	for (let start = r.start; start <= r.end; start += max) out.push({ start, end: Math.min(r.end, start + max - 1) });
	return out;
}

/** A threat-map item of a DDoS event's detail (§4.4): the source address, its share and size. */
export interface ThreatItem {
	ip: string;
	percent?: number;
	size?: string;
}

/**
 * The top `topN` sources of a threat map's `metric` list (bps or pps) with at least `minPercent`, strongest first
 * (percent, then size). The module may come wrapped ({threat_map: {bps, pps}}) or bare ({bps, pps}).
 */
export function topThreatSources(detail: unknown, metric: 'bps' | 'pps', topN: number, minPercent = 0): ThreatItem[] {
	const d = (detail ?? {}) as { threat_map?: Record<string, unknown> } & Record<string, unknown>;
	const tm = (d.threat_map ?? d) as Record<string, unknown>;
	const list = Array.isArray(tm[metric]) ? (tm[metric] as ThreatItem[]) : [];
	return list
		.filter((i) => i && typeof i.ip === 'string' && (i.percent ?? 0) >= minPercent)
		.sort((a, b) => (b.percent ?? 0) - (a.percent ?? 0) || Number(b.size) - Number(a.size))
		.slice(0, Math.max(0, topN));
}
