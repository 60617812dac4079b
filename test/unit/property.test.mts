// Property-based: for every operation, generated invalid inputs get a ValidationError naming the field and
// send nothing; generated valid inputs (sample + valid optional variations) are accepted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { catalog } from '../../api/catalog/index.ts';
import type { Field } from '../../api/catalog/types.ts';
import { ValidationError } from '../../api/errors.ts';
import { offlineClient } from '../helpers/offlineClient.mts';
import { samples } from '../helpers/samples.mts';

const { client, sent } = offlineClient('secret-prop');
const ops = catalog.filter((o) => o.encoding !== 'redirect');

/** Values that break a field's own rule, by kind. */
function badValues(f: Field): fc.Arbitrary<unknown> {
	const common = [fc.constant({ nested: true }), fc.constant([[1]])];
	switch (f.kind) {
		case 'integer':
			return fc.oneof(
				fc.constant('abc'),
				fc.double({ min: 0.1, max: 0.9 }),
				fc.constant('12.5'),
				fc.constant(true),
				...common,
			);
		case 'boolean01':
			return fc.oneof(fc.integer({ min: 2, max: 1000 }), fc.constant('yes'), fc.constant(-1));
		case 'options':
			return fc.oneof(fc.constant('not-an-option'), fc.constant(99999), ...common);
		case 'object':
			return fc.oneof(fc.constant('string'), fc.constant({ unexpected: 1 }), fc.constant(42));
		case 'stringList':
			return fc.oneof(fc.constant([{}]), fc.constant(42), fc.constant([['x']]));
		default:
			return f.in === 'path'
				? fc.oneof(fc.constant('a/b'), fc.constant(''), fc.constant('a b'), ...common)
				: fc.oneof(fc.constant(42.5), ...common);
	}
}

test('invalid generated inputs: ValidationError naming the field, nothing sent', () => {
	const gen = fc.constantFrom(...ops).chain((op) => {
		const fields = op.fields.filter(
			(f) => !f.local && f.constant === undefined && !(f.kind === 'string' && f.in !== 'path' && !f.required),
		);
		return fc
			.record({
				op: fc.constant(op),
				field: fc.constantFrom(...fields),
				mode: fc.constantFrom('bad', 'missing', 'unknown'),
			})
			.chain((x) => fc.record({ x: fc.constant(x), bad: badValues(x.field) }));
	});
	fc.assert(
		fc.property(gen, ({ x, bad }) => {
			const params: Record<string, unknown> = { ...samples[x.op.id] };
			let expectField = x.field.name;
			if (x.mode === 'missing') {
				if (!x.field.required) return; // optional: missing is fine
				delete params[x.field.name];
			} else if (x.mode === 'unknown') {
				params['not_a_field'] = 'x';
				expectField = '(request)';
			} else params[x.field.name] = bad;
			const before = sent();
			try {
				client.validate(x.op.id, params);
			} catch (e) {
				assert.ok(e instanceof ValidationError, String(e));
				assert.ok(
					e.issues.some((i) => i.field === expectField || i.field.startsWith(`${expectField}.`)),
					`${x.op.id} ${x.mode} ${x.field.name}=${JSON.stringify(bad)} → ${JSON.stringify(e.issues)}`,
				);
				assert.equal(sent(), before);
				return;
			}
			assert.fail(`${x.op.id}: ${x.mode} ${x.field.name}=${JSON.stringify(bad)} was accepted`);
		}),
		{ numRuns: 1500, seed: 42 },
	);
	assert.equal(sent(), 0);
});

test('invalid inputs through call() never reach the transport', async () => {
	await fc.assert(
		fc.asyncProperty(fc.constantFrom(...ops), fc.string(), async (op, junk) => {
			const params: Record<string, unknown> = { ...samples[op.id], [`x_${junk}`]: 1 };
			await assert.rejects(client.call(op.id, params), ValidationError);
		}),
		{ numRuns: 300, seed: 7 },
	);
	assert.equal(sent(), 0);
});

test('valid generated inputs are accepted: samples with optional fields varied within their rules', () => {
	const ipOctet = fc.integer({ min: 0, max: 255 });
	// a blocking entry outside the guard's special ranges (api/blastRadius.ts): 1–223 without 127 and 169.254
	const ip = fc
		.tuple(
			fc.integer({ min: 1, max: 223 }).filter((o) => o !== 127),
			ipOctet,
			ipOctet,
			ipOctet,
		)
		.filter(([a, b]) => !(a === 169 && b === 254))
		.map((o) => o.join('.'));
	const threshold = fc
		.tuple(fc.integer({ min: 0, max: 99999 }), fc.constantFrom('', 'K', 'M', 'G'))
		.map(([n, s]) => `${n}${s}`);
	const gen = fc.constantFrom(...ops).chain((op) => {
		const opt: Record<string, fc.Arbitrary<unknown>> = {};
		for (const f of op.fields) {
			if (f.required || f.local || f.constant !== undefined || f.showWhen) continue;
			if (f.options && f.kind === 'options') opt[f.name] = fc.constantFrom(...f.options);
			else if (f.kind === 'boolean01') opt[f.name] = fc.constantFrom(0, 1, '0', '1');
		}
		return fc.record({ op: fc.constant(op), extra: fc.record(opt, { requiredKeys: [] }), th: threshold, ip });
	});
	fc.assert(
		fc.property(gen, ({ op, extra, th, ip }) => {
			const params: Record<string, unknown> = { ...samples[op.id], ...extra };
			if (op.id === 'detection.setPolicy') Object.assign(params, { high_pps: th, low_pps: th });
			if (op.id === 'applicationProtection.ipBlacklist.add') params.ip_black_list = ip;
			client.validate(op.id, params);
		}),
		{ numRuns: 1000, seed: 1 },
	);
});
