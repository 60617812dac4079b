import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { catalog } from '../../api/catalog/index.ts';
import { OPERATIONS, RESOURCES, fieldWords } from '../../api/catalog/labels.ts';
import { samples, unsampled } from '../helpers/samples.mts';
import { specOperationCount, specOperationsPerSection } from '../helpers/spec.mts';

test('the catalog holds the operations of the spec, per section (counted in the spec)', () => {
	const per: Record<string, number> = {};
	for (const op of catalog) per[op.section] = (per[op.section] ?? 0) + 1;
	assert.deepEqual(per, specOperationsPerSection());
	assert.equal(new Set(catalog.map((o) => o.id)).size, catalog.length, 'ids are unique');
	assert.equal(
		new Set(catalog.map((o) => `${o.method} ${o.path}`)).size,
		catalog.length,
		'method+path pairs are unique',
	);
});

test('every operation, its resource and each field it takes have words in api/catalog/labels.ts', () => {
	for (const op of catalog) {
		assert.ok(OPERATIONS[op.id], `${op.id}: no entry in OPERATIONS (api/catalog/labels.ts)`);
		const resource = op.group ? `${op.resource}.${op.group}` : op.resource;
		assert.ok(
			RESOURCES.some((r) => r.value === resource),
			`${op.id}: resource ${resource} has no label in RESOURCES`,
		);
		for (const f of op.fields)
			if (f.constant === undefined)
				assert.notEqual(fieldWords(op.id, f.name).label, f.name, `${op.id}: field ${f.name} has no label in FIELDS`);
	}
});

test('every path placeholder is a path field and every path field has a placeholder', () => {
	for (const op of catalog) {
		const placeholders = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
		const pathFields = op.fields
			.filter((f) => f.in === 'path')
			.map((f) => f.name)
			.sort();
		assert.deepEqual(placeholders, pathFields, op.id);
	}
});

test('encodings follow the spec: JSON for IP authentication, form for /oauth, query for GET and DELETE', () => {
	for (const op of catalog) {
		if (op.id === 'applicationProtection.authIp.set') assert.equal(op.encoding, 'json');
		else if (op.path.startsWith('/oauth/')) assert.equal(op.encoding, op.method === 'GET' ? 'redirect' : 'form', op.id);
		else if (op.method === 'GET' || op.method === 'DELETE') assert.equal(op.encoding, 'query', op.id);
		else assert.equal(op.encoding, 'multipart', op.id);
		assert.equal(op.auth, op.path.startsWith('/api/') ? 'access_token' : 'none', op.id);
	}
});

test('every operation has a valid sample input that its request schema accepts', () => {
	assert.deepEqual(unsampled, [], 'operations whose field rules give no sample: write one in test/helpers/samples.mts');
	for (const op of catalog) {
		assert.ok(samples[op.id], `sample for ${op.id}`);
		const r = op.request.safeParse(samples[op.id]);
		assert.ok(r.success, `${op.id}: ${r.success ? '' : JSON.stringify(r.error.issues)}`);
	}
});

test('npm run -s catalog prints one JSON object per operation with id, method, path, section', () => {
	const out = execFileSync('npm', ['run', '-s', 'catalog'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
	const rows = out
		.trim()
		.split('\n')
		.map((l) => JSON.parse(l));
	assert.equal(rows.length, specOperationCount());
	for (const r of rows)
		for (const k of ['id', 'method', 'path', 'section']) assert.equal(typeof r[k], 'string', `${r.id}.${k}`);
	assert.ok(
		rows.some(
			(r) =>
				r.path === '/api/specp/policy/appshield/site/{site_id}/domain-port/{domain_port_id}/http-filter/{p_flag_id}' &&
				r.method === 'PUT',
		),
	);
});
