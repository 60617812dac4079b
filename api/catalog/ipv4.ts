/**
 * IPv4 arithmetic without zod: shared by the catalog's rules and by the Temporal workflows, whose bundle must stay
 * small (every running workflow evaluates its own copy of the modules it imports).
 */

export function parseIpv4(s: string): number | undefined {
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

export function formatIpv4(n: number): string {
	return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface Ipv4Range {
	start: number;
	end: number;
}

/**
 * Parses one entry: `a.b.c.d`, `a.b.c.d-e.f.g.h` or `a.b.c.d/len`.
 * Returns undefined when it is not a valid IPv4 address, range (start ≤ end) or CIDR.
 */
export function parseIpv4Entry(s: string, allowCidr = true): Ipv4Range | undefined {
	const t = s.trim();
	const dash = t.indexOf('-');
	if (dash >= 0) {
		const a = parseIpv4(t.slice(0, dash));
		const b = parseIpv4(t.slice(dash + 1));
		if (a === undefined || b === undefined || a > b) return undefined;
		return { start: a, end: b };
	}
	const slash = t.indexOf('/');
	if (slash >= 0) {
		if (!allowCidr) return undefined;
		const a = parseIpv4(t.slice(0, slash));
		const lenText = t.slice(slash + 1);
		if (a === undefined || !/^\d{1,2}$/.test(lenText)) return undefined;
		const len = Number(lenText);
		if (len > 32) return undefined;
		const size = 2 ** (32 - len);
		const start = a - (a % size);
		return { start, end: start + size - 1 };
	}
	const a = parseIpv4(t);
	return a === undefined ? undefined : { start: a, end: a };
}

/** `a.b.c.d`, `a.b.c.d/n` or `x-y` → `start-end`. Input must already be valid. */
export function toRangeText(s: string): string {
	const r = parseIpv4Entry(s);
	return r ? `${formatIpv4(r.start)}-${formatIpv4(r.end)}` : s;
}

export const rangeSize = (r: Ipv4Range) => r.end - r.start + 1;

/** An IP-list entry as the service lists it (§4.3: `type` 'range' → start_ip/end_ip; 'network' → ip). */
export interface Ipv4ListEntry {
	type?: string;
	ip?: string;
	start_ip?: string;
	end_ip?: string;
}

/** The text the service knows a listed entry by (what a remove must name): `start-end`, or the address / CIDR. */
export function listEntryText(e: Ipv4ListEntry): string {
	return e.start_ip && e.end_ip ? `${e.start_ip}-${e.end_ip}` : String(e.ip ?? e.start_ip ?? '');
}

/** The addresses a listed entry covers; undefined when it names none validly. */
export function listEntryRange(e: Ipv4ListEntry): Ipv4Range | undefined {
	if (e.start_ip && e.end_ip) return parseIpv4Entry(`${e.start_ip}-${e.end_ip}`);
	if (e.ip) return parseIpv4Entry(e.ip);
	if (e.start_ip) return parseIpv4Entry(e.start_ip);
	return undefined;
}

/** One key per address set, whatever the notation (`a.b.c.d/30` and `a.b.c.0-a.b.c.3` meet): `start-end` as numbers. */
export const rangeKeyOf = (r: Ipv4Range) => `${r.start}-${r.end}`;

export function entryRangeKey(text: string): string | undefined {
	const r = parseIpv4Entry(text);
	return r ? rangeKeyOf(r) : undefined;
}

/**
 * A list as the service shows it: each entry's key → its text (what a remove must name, found from any notation).
 * The service keeps `a` and `a-a` as two entries; of several notations of one range the `start-end` one is kept, the
 * one our adds POST (the catalog sends adds as `start-end`); an owner's remove names only that one (`ownListed`).
 */
export function listedByKey(entries: readonly Ipv4ListEntry[]): Map<string, string> {
	const out = new Map<string, string>();
	for (const e of entries) {
		const r = listEntryRange(e);
		if (!r) continue;
		const text = listEntryText(e);
		if (!out.has(rangeKeyOf(r)) || text === `${formatIpv4(r.start)}-${formatIpv4(r.end)}`) out.set(rangeKeyOf(r), text);
	}
	return out;
}

/**
 * An owner's entry as listed: `entry`'s listed text when it is in the notation our adds POST (`start-end`), else
 * undefined. The same range listed only as an address or CIDR is another actor's add (a person's, from the console):
 * a playbook's remove (revert, expiry, allow-list) never names it (interleave seed 138: a retried revert DELETEd it).
 */
export function ownListed(listed: ReadonlyMap<string, string>, entry: string): string | undefined {
	const k = entryRangeKey(entry);
	const text = k === undefined ? undefined : listed.get(k);
	return text !== undefined && text === toRangeText(entry) ? text : undefined;
}
