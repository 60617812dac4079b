import { z } from 'zod/v4';

/** Shared field rules. Each error message states the rule, so `field: message` reads as one. */

/** An integer, given as a number or a string of digits (n8n expressions and form values are strings). */
export const int = (rule = 'must be an integer') =>
	z.union(
		[z.number({ error: rule }).int({ error: rule }), z.string().regex(/^-?\d+$/, { error: rule }).transform(Number)],
		{ error: rule },
	);

export const intIn = (min: number, max: number, what = `an integer from ${min} to ${max}`) =>
	int(`must be ${what}`).pipe(z.number().min(min, { error: `must be ${what}` }).max(max, { error: `must be ${what}` }));

export const intOneOf = (values: readonly number[], rule = `must be one of ${values.join(', ')}`) => {
	return int(rule).pipe(z.number().refine((v) => values.includes(v), { error: rule }));
};

/** 0 or 1, as number or string; sent as given on the wire ("0"/"1"). */
export const flag01 = (what = '0 or 1') => intOneOf([0, 1]).describe(what);

export const nonEmpty = (rule = 'is required and must be a non-empty string') =>
	z.string({ error: rule }).trim().min(1, { error: rule });

export const oneOf = <T extends string>(values: readonly T[]) =>
	z.enum(values as unknown as [T, ...T[]], { error: `must be one of ${values.join(', ')}` });

/** Numeric strings used as identifiers (site_id, customer_id, …): non-empty, no slash. */
export const idString = (what = 'an identifier') =>
	z
		.union([z.string(), z.number().int().transform(String)], { error: `must be ${what} (string)` })
		.pipe(
			z
				.string()
				.min(1, { error: `must be ${what} (non-empty)` })
				.regex(/^[^/?#\s]+$/, { error: `must be ${what} without '/', '?', '#' or spaces` }),
		);

// ---------------------------------------------------------------- IPv4

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

/** A `start-end` IPv4 range (a single address is accepted as `a-a` would be). */
export const ipv4RangeText = (rule = 'must be an IPv4 range written start-end (e.g. 1.2.3.0-1.2.3.255) with start ≤ end') =>
	z.string({ error: rule }).refine((s) => parseIpv4Entry(s, false) !== undefined, { error: rule });

/** An IP-list entry: address, start-end range or CIDR. */
export const ipv4EntryText = (
	rule = 'must be an IPv4 address, a range written start-end with start ≤ end, or a CIDR a.b.c.d/n',
) => z.string({ error: rule }).refine((s) => parseIpv4Entry(s) !== undefined, { error: rule });

/** A list given as an array or a comma/newline separated string. */
export const listOf = <T extends z.ZodType<unknown, string>>(item: T, rule: string) =>
	z
		.union([z.array(z.string()), z.string()], { error: rule })
		.transform((v) =>
			(Array.isArray(v) ? v : v.split(/[,\n]/))
				.map((s) => s.trim())
				.filter((s) => s.length > 0),
		)
		.pipe(z.array(item));

/** `a.b.c.d`, `a.b.c.d/n` or `x-y` → `start-end`. Input must already be valid. */
export function toRangeText(s: string): string {
	const r = parseIpv4Entry(s);
	return r ? `${formatIpv4(r.start)}-${formatIpv4(r.end)}` : s;
}

export const rangeSize = (r: Ipv4Range) => r.end - r.start + 1;

// ---------------------------------------------------------------- thresholds and times

/** Detection threshold: a number, or a number with suffix K, M or G (§4.5, §8). */
export const THRESHOLD_RE = /^\d+(\.\d+)?[KMG]?$/;
export const threshold = (
	rule = 'must be a number, or a number with suffix K, M or G (e.g. 500, 1.5K, 20M, 1G)',
) =>
	z
		.union([z.number().nonnegative().transform(String), z.string()], { error: rule })
		.pipe(z.string().trim().regex(THRESHOLD_RE, { error: rule }));

export function thresholdValue(s: string): number {
	const m = /^(\d+(?:\.\d+)?)([KMG]?)$/.exec(s.trim());
	if (!m) return NaN;
	const mult = m[2] === 'K' ? 1e3 : m[2] === 'M' ? 1e6 : m[2] === 'G' ? 1e9 : 1;
	return Number(m[1]) * mult;
}

/** `Y-m-d H:M:S` as the ddos_events operation wants it (§4.4). */
export const YMDHMS_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Parses `Y-m-d H:M:S` as UTC; undefined when malformed or not a real date. */
export function parseYmdhms(s: string): number | undefined {
	const m = YMDHMS_RE.exec(s);
	if (!m) return undefined;
	const [y, mo, d, h, mi, se] = m.slice(1).map(Number);
	const t = Date.UTC(y, mo - 1, d, h, mi, se);
	const back = new Date(t);
	if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || se > 59) return undefined;
	return t / 1000;
}

export function formatYmdhms(unixSeconds: number): string {
	const d = new Date(unixSeconds * 1000);
	const p = (n: number) => String(n).padStart(2, '0');
	return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
}

export const ymdhms = (rule = "must be a date-time written 'YYYY-MM-DD HH:MM:SS'") =>
	z.string({ error: rule }).refine((s) => parseYmdhms(s) !== undefined, { error: rule });

export const unixSeconds = (rule = 'must be a 10-digit Unix timestamp (seconds)') =>
	z
		.union([z.number().int().transform(String), z.string()], { error: rule })
		.pipe(z.string().regex(/^\d{10}$/, { error: rule }));
