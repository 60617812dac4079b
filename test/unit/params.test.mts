// The n8n node's per-item parameter reader (nodes/SecurityService/actions/params.ts): which raw parameter values it
// may answer itself (constants, `={{ $json.path }}`) and which it must leave to n8n's expression evaluator.
// The equivalence with n8n's real evaluator is tested in test/n8n/inprocess.test.mts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { createParamReader, hasExpression, trivialJsonPath } from '../../nodes/SecurityService/actions/params.ts';

test('trivialJsonPath: only a lone {{ $json… }} property path is recognised', () => {
	assert.deepEqual(trivialJsonPath('={{ $json.site_id }}'), ['site_id']);
	assert.deepEqual(trivialJsonPath('={{$json.a.b}}'), ['a', 'b']);
	assert.deepEqual(trivialJsonPath(`={{ $json["my key"]['x'][2] }}`), ['my key', 'x', 2]);
	for (const raw of [
		'={{ $json.site_id + 1 }}',
		'={{ ($json.site_id) }}',
		'=id-{{ $json.site_id }}',
		'={{ $json.site_id }} ',
		'={{ $json }}',
		'={{ $json.a }}{{ $json.b }}',
		'={{ $json.a() }}',
		'={{ $json.a.constructor }}',
		'={{ $json["__proto__"] }}',
		'={{ $json[a] }}',
		'={{ $json["a\\"b"] }}',
		'={{ $input.item.json.a }}',
		'={{ $("Node").item.json.a }}',
		'$json.a',
	])
		assert.equal(trivialJsonPath(raw), undefined, raw);
});

test('hasExpression: any string starting with = at any depth', () => {
	assert.equal(hasExpression('dashboard'), false);
	assert.equal(hasExpression(12), false);
	assert.equal(hasExpression({ a: [{ b: 'x' }], c: null }), false);
	assert.equal(hasExpression({ a: [{ b: '={{ 1 }}' }] }), true);
	assert.equal(hasExpression('={{ 1 }}'), true);
});

/** A stand-in for n8n's getNodeParameter that records what was evaluated (the real one is exercised in test/n8n). */
function fakeExec(parameters: Record<string, unknown>, items: INodeExecutionData[]) {
	const evaluated: string[] = [];
	const exec = {
		getNodeParameter(name: string, i: number, fallback?: unknown, options?: { rawExpressions?: boolean }) {
			if (!(name in parameters)) return fallback;
			const raw = parameters[name];
			if (options?.rawExpressions) return raw;
			evaluated.push(`${name}#${i}`);
			if (typeof raw === 'string' && raw.startsWith('=')) {
				const path = trivialJsonPath(raw);
				// Evaluate like n8n would for these simple cases ($json.a.b); other forms are not used below.
				let v: unknown = items[i].json;
				for (const k of path ?? []) v = (v as Record<string | number, unknown> | undefined)?.[k];
				return v;
			}
			return structuredClone(raw);
		},
	} as unknown as IExecuteFunctions;
	return { exec, evaluated };
}

test('createParamReader: constants read once, mapped values from the item, missing steps left to n8n', () => {
	const items: INodeExecutionData[] = [
		{ json: { s: { id: '1' } } },
		{ json: { s: { id: 2 } } },
		{ json: { other: true } },
	];
	const { exec, evaluated } = fakeExec(
		{ resource: 'dashboard', extra: { a: [1] }, site_id: '={{ $json.s.id }}' },
		items,
	);
	const read = createParamReader(exec, items);
	assert.deepEqual(
		[0, 1, 2].map((i) => read('resource', i)),
		['dashboard', 'dashboard', 'dashboard'],
	);
	assert.deepEqual(evaluated, ['resource#0'], 'a constant is read from n8n once');
	const extra = read('extra', 1) as { a: number[] };
	extra.a.push(2);
	assert.deepEqual(read('extra', 2), { a: [1] }, 'each item gets its own copy');
	assert.equal(read('absent', 1, 'fb'), 'fb');
	evaluated.length = 0;
	assert.deepEqual(
		[0, 1, 2].map((i) => read('site_id', i)),
		['1', 2, undefined],
	);
	assert.deepEqual(evaluated, ['site_id#2'], 'only the item without the path went to n8n');
});
