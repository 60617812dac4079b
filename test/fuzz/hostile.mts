/**
 * Hostile values for the fuzz suite: wrong types, huge, empty, unicode, path tricks, 10⁴-element lists, deep
 * nesting. Plus a tally that every fuzz test reports (cases tried, entry points, failures) in the test output.
 */
import fc from 'fast-check';
import { ID_RE } from '../../api/limits.ts';

export const MB = 'x'.repeat(1 << 20);
export const THREE_MB = 'y'.repeat(3 << 20);
export const TEN_K_BAD_IPS = Array.from({ length: 10_000 }, (_, i) => `999.${i % 256}.0.1`);
export const TEN_K_GOOD_IPS = Array.from({ length: 10_000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.1`);

/** Strings that try to change which path is called, or to smuggle bytes into a URL or a log. */
export const PATH_TRICKS = [
	'..',
	'.',
	'...',
	'%2e%2e',
	'%2E',
	'a/b',
	'../admin',
	'..%2Fadmin',
	'%2F',
	'a%2Fb',
	'?x=1',
	'#frag',
	'a b',
	' 1',
	'1\u0000',
	'1\n2',
	'1\r\nX-Injected: 1',
	'\\..\\',
	'é',
	'🙂',
	'',
	'   ',
	'-1',
	'_x',
	'~',
	'x'.repeat(129),
	'1'.repeat(4096),
];

const deep = (n: number): unknown => (n === 0 ? 'leaf' : { a: deep(n - 1) });

/** Any hostile value (some may happen to be valid somewhere: tests use an oracle where that matters). */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
	{ weight: 4, arbitrary: fc.constantFrom(...PATH_TRICKS) },
	{ weight: 1, arbitrary: fc.constantFrom(MB, THREE_MB) },
	{ weight: 1, arbitrary: fc.constantFrom(TEN_K_BAD_IPS, TEN_K_GOOD_IPS) },
	{ weight: 1, arbitrary: fc.constantFrom(deep(40), [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]) },
	{
		weight: 2,
		arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constantFrom(1e308, -1, 0, 3.5, 2 ** 53)),
	},
	{ weight: 1, arbitrary: fc.constantFrom(true, false, null, {}, [], [null], { toString: 'x' }) },
	{ weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
	{ weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
	{ weight: 1, arbitrary: fc.array(fc.string({ maxLength: 5 }), { maxLength: 5 }) },
);

/** A path id that the safe alphabet accepts (these must reach exactly their path). */
export const safeId: fc.Arbitrary<string> = fc
	.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._~-]{0,40}$/)
	.filter((s) => ID_RE.test(s));

/** Deep-set (copy) `value` at a dotted path of a JSON object. */
export function setAt(obj: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
	const out = structuredClone(obj);
	const parts = path.split('.');
	let o: Record<string, unknown> = out;
	for (const p of parts.slice(0, -1)) {
		if (typeof o[p] !== 'object' || o[p] === null) o[p] = {};
		o = o[p] as Record<string, unknown>;
	}
	o[parts[parts.length - 1]] = value;
	return out;
}

export const describeValue = (v: unknown): string => {
	if (typeof v === 'string') return v.length > 40 ? `string(${v.length})` : JSON.stringify(v);
	if (Array.isArray(v)) return `array(${v.length})`;
	try {
		const s = JSON.stringify(v);
		return s === undefined ? String(v) : s.length > 40 ? `${s.slice(0, 40)}…` : s;
	} catch {
		return String(v);
	}
};

/** Counts per entry point; printed as one line per suite (`fuzz: N cases, M entry points, 0 failures`). */
export class Tally {
	private readonly counts = new Map<string, number>();
	failures: string[] = [];
	constructor(readonly suite: string) {}
	hit(entry: string, n = 1) {
		this.counts.set(entry, (this.counts.get(entry) ?? 0) + n);
	}
	fail(entry: string, what: string) {
		this.failures.push(`${entry}: ${what}`);
	}
	/** Wraps a test body: a failing test counts as a failure in the report line. */
	wrap(fn: () => Promise<void> | void): () => Promise<void> {
		return async () => {
			try {
				await fn();
			} catch (e) {
				this.fail('test', String((e as Error)?.message ?? e).slice(0, 200));
				throw e;
			}
		};
	}
	get cases() {
		return [...this.counts.values()].reduce((a, b) => a + b, 0);
	}
	report(log: (s: string) => void = (s) => process.stdout.write(`${s}\n`)) {
		const per = [...this.counts.entries()].map(([k, v]) => `${k} ${v}`).join(', ');
		log(
			`fuzz ${this.suite}: ${this.cases} cases tried, ${this.counts.size} entry points, ${this.failures.length} failures (${per})`,
		);
	}
}

/** Runs `fn` and returns its outcome and duration (ms). */
export async function timed<T>(
	fn: () => T | Promise<T>,
): Promise<{ ok: true; value: T; ms: number } | { ok: false; error: unknown; ms: number }> {
	const t0 = performance.now();
	try {
		const value = await fn();
		return { ok: true, value, ms: performance.now() - t0 };
	} catch (error) {
		return { ok: false, error, ms: performance.now() - t0 };
	}
}

/** fc.assert with a compact failure report (counterexamples hold megabyte strings and zod schemas). */
export async function check<Ts extends unknown[]>(
	prop: fc.IAsyncProperty<Ts> | fc.IProperty<Ts>,
	opts: fc.Parameters<Ts>,
): Promise<number> {
	const d = await fc.check(prop as fc.IAsyncProperty<Ts>, opts);
	if (d.failed) {
		const ce = (d.counterexample ?? []).map((v) =>
			v && typeof v === 'object' && 'id' in (v as object) ? `op ${(v as { id: string }).id}` : describeCase(v),
		);
		const err = d.errorInstance as Error | undefined;
		throw new Error(
			`property failed after ${d.numRuns} runs (seed ${d.seed}, path ${d.counterexamplePath}): ${ce.join(' | ')}\n${String(err?.message ?? (d as { error?: unknown }).error).slice(0, 1500)}`,
		);
	}
	return d.numRuns;
}

function describeCase(v: unknown): string {
	if (v && typeof v === 'object' && !Array.isArray(v))
		return `{${Object.entries(v as Record<string, unknown>)
			.map(
				([k, x]) =>
					`${k}: ${x && typeof x === 'object' && 'id' in (x as object) ? (x as { id: string }).id : describeValue(x)}`,
			)
			.join(', ')}}`;
	return describeValue(v);
}
