/** Small helpers of the simulator: seeded PRNG, errors, input readers, IPv4 and time formats. */
import { CODES } from './codes.mts';

// ---------------------------------------------------------------- errors

export class SimError extends Error {
	code: number;
	constructor(code: number, msg: string) {
		super(msg);
		this.code = code;
	}
}

export const notFound = (what: string) => new SimError(CODES.NOT_FOUND, what);

// ---------------------------------------------------------------- bounded JSON

/** How deep a request's JSON may nest: the spec's bodies nest 3 levels; 64 leaves room and keeps every walk safe. */
export const MAX_JSON_DEPTH = 64;

/**
 * JSON.parse after a linear scan of the nesting depth (strings skipped), so a body nested deeper than `maxDepth`
 * is a request error (`body: …`), not a stack overflow in whatever walks the parsed value afterwards.
 */
export function parseBoundedJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
	let depth = 0;
	let inString = false;
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		if (inString) {
			if (c === 0x5c) i++;
			else if (c === 0x22) inString = false;
		} else if (c === 0x22) inString = true;
		else if (c === 0x5b || c === 0x7b) {
			if (++depth > maxDepth) throw new JsonBoundError(`must not be nested more than ${maxDepth} levels deep`);
		} else if (c === 0x5d || c === 0x7d) depth--;
	}
	try {
		return JSON.parse(text) as unknown;
	} catch {
		throw new JsonBoundError('must be valid JSON');
	}
}

export class JsonBoundError extends Error {}

// ---------------------------------------------------------------- PRNG (mulberry32)

export class Rng {
	private s: number;
	constructor(seed: number) {
		this.s = seed >>> 0 || 0x9e3779b9;
	}
	next(): number {
		let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	}
	int(min: number, max: number): number {
		return min + Math.floor(this.next() * (max - min + 1));
	}
	pick<T>(a: readonly T[]): T {
		return a[Math.floor(this.next() * a.length)];
	}
	hex(n: number): string {
		let s = '';
		while (s.length < n)
			s += Math.floor(this.next() * 0x100000000)
				.toString(16)
				.padStart(8, '0');
		return s.slice(0, n);
	}
}

// ---------------------------------------------------------------- input readers

export interface Issue {
	field: string;
	rule: string;
}

export const INT_RE = /^-?\d+$/;

/**
 * Reads named values from a decoded multipart / urlencoded body or a query string (name -> values).
 * Every read marks the name as known; `finish()` reports unknown names (when strict) and all issues.
 */
export class Input {
	issues: Issue[] = [];
	private used = new Set<string>();
	constructor(
		private src: Map<string, string[]>,
		private ignore: readonly string[] = [],
	) {}
	issue(field: string, rule: string) {
		this.issues.push({ field, rule });
	}
	has(name: string): boolean {
		this.used.add(name);
		const v = this.src.get(name);
		return v !== undefined && v.length > 0 && !(v.length === 1 && v[0] === '');
	}
	/** One value (the field must not repeat). Empty string counts as missing. */
	str(name: string, required = false): string | undefined {
		this.used.add(name);
		const v = this.src.get(name);
		if (!v || v.length === 0 || (v.length === 1 && v[0] === '')) {
			if (required) this.issue(name, 'is required');
			return undefined;
		}
		if (v.length > 1) {
			this.issue(name, 'must be given once (it was repeated)');
			return undefined;
		}
		return v[0];
	}
	/** All values of a repeated field (empty values dropped). */
	list(name: string, required = false): string[] | undefined {
		this.used.add(name);
		const v = (this.src.get(name) ?? []).filter((s) => s !== '');
		if (v.length === 0) {
			if (required) this.issue(name, 'is required (at least one value)');
			return undefined;
		}
		return v;
	}
	int(name: string, required = false, min?: number, max?: number): number | undefined {
		const s = this.str(name, required);
		if (s === undefined) return undefined;
		if (!INT_RE.test(s.trim())) {
			this.issue(name, 'must be an integer');
			return undefined;
		}
		const n = Number(s.trim());
		if ((min !== undefined && n < min) || (max !== undefined && n > max)) {
			this.issue(name, max === undefined ? `must be an integer ≥ ${min}` : `must be an integer from ${min} to ${max}`);
			return undefined;
		}
		return n;
	}
	intOneOf(name: string, values: readonly number[], required = false): number | undefined {
		const s = this.str(name, required);
		if (s === undefined) return undefined;
		const n = INT_RE.test(s.trim()) ? Number(s.trim()) : NaN;
		if (!values.includes(n)) {
			this.issue(name, `must be one of ${values.join(', ')}`);
			return undefined;
		}
		return n;
	}
	oneOf<T extends string>(name: string, values: readonly T[], required = false): T | undefined {
		const s = this.str(name, required);
		if (s === undefined) return undefined;
		if (!(values as readonly string[]).includes(s)) {
			this.issue(name, `must be one of ${values.join(', ')}`);
			return undefined;
		}
		return s as T;
	}
	/** Throws the validation error (all issues in one msg) and, when strict, rejects unknown names. */
	finish(strict: boolean) {
		if (strict) {
			for (const k of this.src.keys())
				if (!this.used.has(k) && !this.ignore.includes(k)) this.issue(k, 'is not a field of this operation');
		}
		if (this.issues.length) throw validationError(this.issues);
	}
}

export function validationError(issues: Issue[]): SimError {
	const e = new SimError(CODES.VALIDATION, issues.map((i) => `${i.field}: ${i.rule}`).join('; '));
	(e as SimError & { issues: Issue[] }).issues = issues;
	return e;
}

// ---------------------------------------------------------------- IPv4

export function ipToInt(s: string): number | undefined {
	const parts = s.split('.');
	if (parts.length !== 4) return undefined;
	let n = 0;
	for (const p of parts) {
		if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return undefined;
		const o = Number(p);
		if (o > 255) return undefined;
		n = n * 256 + o;
	}
	return n;
}

export function intToIp(n: number): string {
	return `${Math.floor(n / 16777216) % 256}.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;
}

export interface IpRange {
	start: number;
	end: number;
}

/** `a.b.c.d-e.f.g.h` (start ≤ end). */
export function parseRange(s: string): IpRange | undefined {
	const i = s.indexOf('-');
	if (i < 0) return undefined;
	const a = ipToInt(s.slice(0, i).trim());
	const b = ipToInt(s.slice(i + 1).trim());
	if (a === undefined || b === undefined || a > b) return undefined;
	return { start: a, end: b };
}

/** `a.b.c.d/len`. */
export function parseCidr(s: string): IpRange | undefined {
	const i = s.indexOf('/');
	if (i < 0) return undefined;
	const a = ipToInt(s.slice(0, i).trim());
	const lenText = s.slice(i + 1).trim();
	if (a === undefined || !/^\d{1,2}$/.test(lenText) || Number(lenText) > 32) return undefined;
	const size = 2 ** (32 - Number(lenText));
	const start = a - (a % size);
	return { start, end: start + size - 1 };
}

// ---------------------------------------------------------------- time

export const YMDHMS = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** `Y-m-d H:M:S` (UTC) -> unix seconds, or undefined when malformed / not a real date. */
export function parseYmdhms(s: string): number | undefined {
	const m = YMDHMS.exec(s);
	if (!m) return undefined;
	const [y, mo, d, h, mi, se] = m.slice(1).map(Number);
	if (h > 23 || mi > 59 || se > 59) return undefined;
	const t = Date.UTC(y, mo - 1, d, h, mi, se);
	const back = new Date(t);
	if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return undefined;
	return t / 1000;
}

export function formatYmdhms(sec: number): string {
	const d = new Date(sec * 1000);
	const p = (n: number) => String(n).padStart(2, '0');
	return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
}

/** Threshold notation of §4.5 / §8: a number, or a number with suffix K, M or G. */
export const THRESHOLD = /^(\d+(?:\.\d+)?)([KMG]?)$/;
export function thresholdValue(s: string): number | undefined {
	const m = THRESHOLD.exec(s.trim());
	if (!m) return undefined;
	return Number(m[1]) * (m[2] === 'K' ? 1e3 : m[2] === 'M' ? 1e6 : m[2] === 'G' ? 1e9 : 1);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
