/**
 * Pure IPv4 range arithmetic for the runbooks (deterministic; safe inside workflow code).
 *
 * - `aggregate` merges addresses / ranges / CIDRs into the fewest start-end ranges that cover exactly the
 *   same addresses (overlapping and adjacent ranges are merged; gaps are never bridged).
 * - `subtract` removes protected ranges (whitelist, configured protected ranges, already-listed entries).
 * - `formatRange` writes a range the way the IP-list operations take it: `a.b.c.d` or `a.b.c.d-e.f.g.h`.
 */

export interface Range {
	start: number;
	end: number;
}

export function parseIp(s: string): number | undefined {
	const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s.trim());
	if (!m) return undefined;
	let n = 0;
	for (let i = 1; i <= 4; i++) {
		const part = m[i];
		if (part.length > 1 && part.startsWith('0')) return undefined;
		const o = Number(part);
		if (o > 255) return undefined;
		n = n * 256 + o;
	}
	return n;
}

export function formatIp(n: number): string {
	return [Math.floor(n / 16777216) % 256, Math.floor(n / 65536) % 256, Math.floor(n / 256) % 256, n % 256].join('.');
}

/** `a.b.c.d`, `a.b.c.d-e.f.g.h` (start ≤ end) or `a.b.c.d/len`; undefined when not valid. */
export function parseEntry(s: string): Range | undefined {
	const t = s.trim();
	const dash = t.indexOf('-');
	if (dash >= 0) {
		const a = parseIp(t.slice(0, dash));
		const b = parseIp(t.slice(dash + 1));
		if (a === undefined || b === undefined || a > b) return undefined;
		return { start: a, end: b };
	}
	const slash = t.indexOf('/');
	if (slash >= 0) {
		const a = parseIp(t.slice(0, slash));
		const lenText = t.slice(slash + 1);
		if (a === undefined || !/^\d{1,2}$/.test(lenText)) return undefined;
		const len = Number(lenText);
		if (len > 32) return undefined;
		const size = 2 ** (32 - len);
		const start = a - (a % size);
		return { start, end: start + size - 1 };
	}
	const a = parseIp(t);
	return a === undefined ? undefined : { start: a, end: a };
}

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

export function size(ranges: readonly Range[]): number {
	return ranges.reduce((n, r) => n + (r.end - r.start + 1), 0);
}

export function overlaps(a: Range, b: Range): boolean {
	return a.start <= b.end && b.start <= a.end;
}

export function covers(outer: Range, inner: Range): boolean {
	return outer.start <= inner.start && inner.end <= outer.end;
}

/** IP-list entry as returned by the service (`type` 'range' → start_ip/end_ip; 'network' → ip). */
export interface ListEntry {
	type?: string;
	ip?: string;
	start_ip?: string;
	end_ip?: string;
}

export function entryRange(e: ListEntry): Range | undefined {
	if (e.start_ip && e.end_ip) return parseEntry(`${e.start_ip}-${e.end_ip}`);
	if (e.ip) return parseEntry(e.ip);
	if (e.start_ip) return parseEntry(e.start_ip);
	return undefined;
}

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
 * whitelist, the configured protected ranges and what is already blacklisted.
 */
export function blacklistCandidates(input: {
	sources: readonly string[];
	whitelist: readonly Range[];
	protectedRanges: readonly Range[];
	alreadyListed: readonly Range[];
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
		if (input.whitelist.some((w) => covers(w, r))) skipped.push({ source: s, reason: 'whitelisted' });
		else if (input.protectedRanges.some((p) => covers(p, r))) skipped.push({ source: s, reason: 'protected range' });
		else if (input.alreadyListed.some((p) => covers(p, r))) skipped.push({ source: s, reason: 'already blacklisted' });
		valid.push(r);
	}
	const add = subtract(valid, [...input.whitelist, ...input.protectedRanges, ...input.alreadyListed]);
	return { add, skipped };
}
