// The cheaper parses of the client's common case must answer exactly as the catalog's zod schemas: validateParams'
// (api/catalog/define.ts parseRequest: plain checks, or zod without the "is required" wrappers when every required
// field has a value) the same data (same keys in the same order) and the same issues (field and rule) as the request
// schema; parseResult's plain checks of bare result records (api/catalog/plain.ts) the same data as the result schema.
import assert from 'node:assert/strict';
import test from 'node:test';
import { catalog } from '../../api/catalog/index.ts';
import { parseRequest, requestGiven } from '../../api/catalog/define.ts';
import type { CatalogEntry } from '../../api/catalog/types.ts';
import { encodeRequest } from '../../api/encode.ts';
import { parseResult } from '../../api/envelope.ts';
import { pathSegment } from '../../api/limits.ts';
import { ValidationError } from '../../api/errors.ts';
import { validateParams } from '../../api/validate.ts';
import { samples } from '../helpers/samples.mts';

const ODD: unknown[] = [
	'x',
	'12',
	'-3',
	' ',
	' x',
	'x ',
	'.x',
	'a~b',
	'A_b-1.2',
	0,
	-0,
	-1,
	1,
	2,
	1.5,
	65535,
	2 ** 53,
	2 ** 60,
	Infinity,
	NaN,
	true,
	[],
	['a'],
	{},
	'a'.repeat(128),
	'a'.repeat(129),
	'1.2.3.0/8',
];

function outcome(r: {
	success: boolean;
	data?: unknown;
	error?: { issues: { path: PropertyKey[]; message: string }[] };
}) {
	return r.success
		? { data: JSON.stringify(r.data) }
		: { issues: r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
}

function variants(op: CatalogEntry): Record<string, unknown>[] {
	const base = samples[op.id];
	const out: Record<string, unknown>[] = [base, { ...base, not_a_field: 1 }];
	for (const f of op.fields) for (const v of ODD) out.push({ ...base, [f.name]: v });
	return out;
}

test('requestGiven: same data and issues as the request schema whenever every required field has a value', () => {
	let compared = 0;
	for (const op of catalog) {
		const g = requestGiven(op);
		for (const v of variants(op)) {
			if (g.required.some((k) => v[k] === undefined || v[k] === null || v[k] === '')) continue;
			assert.deepEqual(
				outcome(g.schema.safeParse(v)),
				outcome(op.request.safeParse(v)),
				`${op.id} ${JSON.stringify(v)}`,
			);
			compared++;
		}
	}
	assert.ok(compared > 1000, `compared ${compared}`);
});

test('parseRequest: the same data and issues as the request schema, plain checks or not', () => {
	for (const op of catalog)
		for (const v of variants(op)) {
			const given = Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined && x !== null));
			const r = parseRequest(op, given);
			assert.deepEqual(outcome(r), outcome(op.request.safeParse(given)), `${op.id} ${JSON.stringify(given)}`);
		}
});

test('parseRequest: ids, integers, options and texts that pass their plain checks are not parsed by zod', () => {
	const ops = ['dashboard.isUnderAttack', 'applicationProtection.authBase.set', 'applicationProtection.authBypass.add'];
	for (const op of catalog.filter((o) => ops.includes(o.id))) {
		const { schema } = requestGiven(op);
		const own = Object.getOwnPropertyDescriptor(schema, 'safeParse');
		Object.defineProperty(schema, 'safeParse', { configurable: true, value: () => assert.fail(`${op.id}: zod ran`) });
		try {
			assert.deepEqual(parseRequest(op, samples[op.id]), { success: true, data: samples[op.id] });
		} finally {
			if (own) Object.defineProperty(schema, 'safeParse', own);
			else delete (schema as { safeParse?: unknown }).safeParse;
		}
	}
});

test('validateParams: a missing or empty required field is still named "is required"', () => {
	const op = catalog.find((o) => o.id === 'applicationProtection.authBase.set')!;
	for (const v of [undefined, null, '']) {
		const err = (() => {
			try {
				validateParams(op, { ...samples[op.id], duration: v });
			} catch (e) {
				return e;
			}
		})();
		assert.ok(err instanceof ValidationError, String(v));
		assert.deepEqual(err.issues, [{ field: 'duration', rule: 'is required' }]);
	}
});

const SAMPLE_OF: Record<string, unknown> = { number: 1, string: 'x', boolean: true };
const ODD_RESULT: unknown[] = [0, -0, 2.5, 2 ** 53, -1, '1', '', false, null, undefined, [], {}, Infinity];
type Shape = Record<string, { _zod: { def: { type: string } } }>;

const outcomeOf = (f: () => unknown) => {
	try {
		return { data: JSON.stringify(f()) };
	} catch {
		return { refused: true };
	}
};

test('parseResult: every result record of bare fields answers as its schema (same keys in the same order)', () => {
	let compared = 0;
	for (const op of catalog) {
		const def = (op.result as unknown as { _zod: { def: { type: string; shape?: Shape } } })._zod.def;
		if (def.type !== 'object' || !def.shape) continue;
		const entries = Object.entries(def.shape);
		if (!entries.every(([, f]) => f._zod.def.type in SAMPLE_OF)) continue;
		const valid = Object.fromEntries(entries.map(([k, f]) => [k, SAMPLE_OF[f._zod.def.type]]));
		const values: unknown[] = [valid, { extra: [1], ...valid }, { ...valid, z: 'y' }, null, [], 'x', 1];
		values.push(
			{ ...valid, toString: 'x', constructor: 1 },
			JSON.parse(`{"__proto__":{"a":1},${JSON.stringify(valid).slice(1)}`),
		);
		for (const [k] of entries) for (const v of ODD_RESULT) values.push({ ...valid, [k]: v });
		for (const v of values) {
			const zod = op.result.safeParse(v);
			const expected = zod.success ? { data: JSON.stringify(zod.data) } : { refused: true };
			assert.deepEqual(
				outcomeOf(() => parseResult(op, v)),
				expected,
				`${op.id} ${JSON.stringify(v)}`,
			);
			compared++;
		}
	}
	assert.ok(compared > 100, `compared ${compared}`);
});

test('parseResult: a bare record that passes the plain checks is not parsed by zod', () => {
	const op = catalog.find((o) => o.id === 'dashboard.isUnderAttack')!;
	const own = Object.getOwnPropertyDescriptor(op.result, 'safeParse');
	Object.defineProperty(op.result, 'safeParse', { configurable: true, value: () => assert.fail('zod ran') });
	try {
		assert.equal(
			JSON.stringify(parseResult(op, { x: 1, bps_size: 2.5, status: 1 })),
			'{"status":1,"bps_size":2.5,"x":1}',
		);
	} finally {
		if (own) Object.defineProperty(op.result, 'safeParse', own);
		else delete (op.result as { safeParse?: unknown }).safeParse;
	}
	assert.throws(() => parseResult(op, { status: 1.5, bps_size: 0 }), /status/);
	// an answer already in zod's order is passed on as it is (no copy); another order is copied into zod's
	const inOrder = { status: 1, bps_size: 2.5, x: 1 };
	assert.equal(parseResult(op, inOrder), inOrder);
	const reordered = { bps_size: 2.5, status: 1 };
	assert.notEqual(parseResult(op, reordered), reordered);
});

test('encodeRequest: the path cut once per operation gives the URL that filling each placeholder in turn gave', () => {
	const opts = { baseUrl: 'http://127.0.0.1:1/', accessToken: 'a+b/c=', timeoutMs: 1000 };
	for (const op of catalog)
		for (const v of [
			samples[op.id],
			...op.fields.filter((f) => f.in === 'path').map((f) => ({ ...samples[op.id], [f.name]: undefined })),
		]) {
			let path = op.path; // what encode did before: each given path field's placeholder replaced
			for (const f of op.fields)
				if (f.in === 'path' && !f.local && v[f.name] !== undefined)
					path = path.replace(`{${f.name}}`, pathSegment(String(v[f.name])));
			const { url } = encodeRequest(op, v, opts);
			assert.equal(url.slice(0, url.indexOf('?') >>> 0), `http://127.0.0.1:1${path}`, op.id);
			if (op.auth === 'access_token') assert.ok(url.endsWith('access_token=a%2Bb%2Fc%3D'), url);
		}
});
