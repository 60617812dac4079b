import { z } from 'zod/v4';
import { ID_ALPHABET, ID_MAX, ID_RE } from '../limits';
import { isSafeInt, withPlain } from './plain';

/** Shared field rules. Each error message states the rule, so `field: message` reads as one. */

/**
 * An integer, given as a number or a string of digits (n8n expressions and form values are strings). Only safe
 * integers (|n| ≤ 2^53 − 1): a larger one cannot be held exactly, so "9007199254740993" would be sent as …992 and a
 * 400-digit string as Infinity — it is refused instead, naming the field.
 */
export const int = (rule = 'must be an integer') => ints.get(rule) ?? ints.set(rule, intSchema(rule)).get(rule)!;

/** One schema per rule text, shared by the fields with that rule (most use the default; zod schemas are immutable). */
const ints = new Map<string, ReturnType<typeof intSchema>>();

function intSchema(rule: string) {
	const unsafe = `${rule} (a safe integer: at most ${Number.MAX_SAFE_INTEGER} in absolute value)`;
	const schema = z
		.union(
			[
				z.number({ error: rule }),
				z
					.string()
					.regex(/^-?\d+$/, { error: rule })
					.transform(Number),
			],
			{ error: rule },
		)
		.pipe(
			z
				// a digit string too long for a double arrives here as Infinity
				.number({ error: (iss) => (Number.isNaN(iss.input) ? rule : unsafe) })
				.refine(Number.isInteger, { error: rule, abort: true })
				.refine(Number.isSafeInteger, { error: unsafe }),
		);
	return withPlain(schema, isSafeInt);
}

export const intIn = (min: number, max: number, what = `an integer from ${min} to ${max}`) =>
	withPlain(
		int(`must be ${what}`).pipe(
			z
				.number()
				.min(min, { error: `must be ${what}` })
				.max(max, { error: `must be ${what}` }),
		),
		(v) => isSafeInt(v) && v >= min && v <= max,
	);

export const intOneOf = (values: readonly number[], rule = `must be one of ${values.join(', ')}`) => {
	return withPlain(
		int(rule).pipe(z.number().refine((v) => values.includes(v), { error: rule })),
		(v) => isSafeInt(v) && values.includes(v),
	);
};

/** 0 or 1, as number or string; sent as given on the wire ("0"/"1"). */
export const flag01 = (what = '0 or 1') => intOneOf([0, 1]).describe(what);

export const nonEmpty = (rule = 'is required and must be a non-empty string') =>
	withPlain(
		z.string({ error: rule }).trim().min(1, { error: rule }),
		(v) => typeof v === 'string' && v.length > 0 && v.trim() === v,
	);

export const oneOf = <T extends string>(values: readonly T[]) =>
	withPlain(z.enum(values as unknown as [T, ...T[]], { error: `must be one of ${values.join(', ')}` }), (v) =>
		(values as readonly unknown[]).includes(v),
	);

/**
 * Ids that travel in the URL path (site_id, customer_id, …): the safe alphabet of api/limits.ts (1–128 characters
 * from A–Z a–z 0–9 . _ ~ -, starting with a letter or a digit), so an id can never change which path is called.
 */
export const idString = (what = 'an identifier') =>
	withPlain(
		z.union([z.string(), z.number().int().nonnegative().transform(String)], { error: `must be ${what} (string)` }).pipe(
			z
				.string()
				.min(1, { error: `must be ${what} (non-empty)` })
				.max(ID_MAX, { error: `must be ${what} of at most ${ID_MAX} characters` })
				.regex(ID_RE, { error: `must be ${what}: ${ID_ALPHABET}` }),
		),
		(v) => typeof v === 'string' && v.length <= ID_MAX && ID_RE.test(v),
	);

// ---------------------------------------------------------------- IPv4

export { formatIpv4, parseIpv4, parseIpv4Entry, rangeSize, toRangeText, type Ipv4Range } from './ipv4';
import { parseIpv4Entry } from './ipv4';

/** A `start-end` IPv4 range (a single address is accepted as `a-a` would be). */
export const ipv4RangeText = (
	rule = 'must be an IPv4 range written start-end (e.g. 1.2.3.0-1.2.3.255) with start ≤ end',
) => z.string({ error: rule }).refine((s) => parseIpv4Entry(s, false) !== undefined, { error: rule });

/** An IP-list entry: address, start-end range or CIDR. */
export const ipv4EntryText = (
	rule = 'must be an IPv4 address, a range written start-end with start ≤ end, or a CIDR a.b.c.d/n',
) => z.string({ error: rule }).refine((s) => parseIpv4Entry(s) !== undefined, { error: rule });

/** A list given as an array or a comma/newline separated string. */
export const listOf = <T extends z.ZodType<unknown, string>>(item: T, rule: string) =>
	z
		.union([z.array(z.string()), z.string()], { error: rule })
		.transform((v) => (Array.isArray(v) ? v : v.split(/[,\n]/)).map((s) => s.trim()).filter((s) => s.length > 0))
		.pipe(z.array(item));

// ---------------------------------------------------------------- thresholds and times

/** Detection threshold: a number, or a number with suffix K, M or G (§4.5, §8). */
export const THRESHOLD_RE = /^\d+(\.\d+)?[KMG]?$/;
export const threshold = (rule = 'must be a number, or a number with suffix K, M or G (e.g. 500, 1.5K, 20M, 1G)') =>
	z
		.union([z.number().nonnegative().transform(String), z.string()], { error: rule })
		.pipe(z.string().trim().regex(THRESHOLD_RE, { error: rule }));

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
