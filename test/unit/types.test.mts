// The client is typed from the catalog: operation ids (a typo fails to compile), and parameters and results
// generated from the catalog's zod schemas into api/types.generated.ts (scripts/gen-types.mts). The committed file
// must equal a fresh generation; compile probes show what the types accept and refuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { catalog } from '../../api/catalog/index.ts';
import { validateParams } from '../../api/client.ts';
import { GENERATED_PATH, generateTypes } from '../../scripts/gen-types.mts';
import { samples } from '../helpers/samples.mts';

const root = resolve(import.meta.dirname, '../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** Compiles each probe as its own file in one tsc run (strict, like the build); returns each file's errors. */
function compile(probes: Record<string, string>): Record<string, string> {
	const dir = mkdtempSync(join(tmpdir(), 'types-'));
	const header =
		`import type { Client } from ${JSON.stringify(join(root, 'api/client'))};\n` +
		`import type { OperationId } from ${JSON.stringify(join(root, 'api/catalog/index'))};\n` +
		`import type { OperationParams, OperationResults } from ${JSON.stringify(join(root, 'api/types.generated'))};\n`;
	const files = Object.keys(probes).map((name) => {
		const file = join(dir, `${name}.ts`);
		writeFileSync(
			file,
			`${header}export async function probe(c: Client, loose: Record<string, unknown>, anyId: string) {\n${probes[name]}\n}\nexport type Unused = [OperationId, OperationParams, OperationResults];\n`,
		);
		return file;
	});
	let out = '';
	try {
		execFileSync(
			process.execPath,
			[
				tsc,
				'--noEmit',
				'--strict',
				'--noUnusedLocals',
				'false',
				'--skipLibCheck',
				'--target',
				'es2022',
				'--module',
				'commonjs',
				'--moduleResolution',
				'node10',
				'--lib',
				'es2022,dom',
				'--pretty',
				'true',
				...files,
			],
			{ encoding: 'utf8' },
		);
	} catch (e) {
		// --pretty adds each error's related information ("The expected type comes from property 'site_id' …").
		out = String((e as { stdout?: string }).stdout ?? e).replace(/\x1b\[[0-9;]*m/g, '');
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
	// tsc prints `<file>:line:col - error …` followed by the source excerpt and related information.
	const errors: Record<string, string> = Object.fromEntries(Object.keys(probes).map((n) => [n, '']));
	let current = '';
	for (const line of out.split('\n')) {
		const m = /^\S*?([\w-]+)\.ts:\d+:\d+ - error/.exec(line);
		if (m) current = m[1];
		else if (/^Found \d+ error/.test(line)) current = '';
		if (current in errors) errors[current] += `${line}\n`;
	}
	return errors;
}

test('api/types.generated.ts is what the catalog generates', () => {
	const committed = readFileSync(GENERATED_PATH, 'utf8');
	assert.ok(committed === generateTypes(), 'api/types.generated.ts is stale: run npm run gen:types');
	for (const op of catalog) {
		assert.ok(committed.includes(`\t'${op.id}': `), `${op.id} has a params and a result type`);
		assert.equal(committed.split(`\t'${op.id}': `).length, 3, `${op.id}: one entry in each interface`);
	}
});

test('parameters and results are typed from the catalog; ids and loose calls still work', () => {
	const errors = compile({
		good: [
			`const under = await c.ops.dashboard.isUnderAttack({ site_id: '1' });`,
			`const status: number = under.status;`,
			`await c.ops.applicationProtection.ipBlacklist.add({ site_id: 1, domain_port_id: '2', ip_black_list: '10.0.0.0/24' });`,
			`await c.ops.applicationProtection.ipBlacklist.remove({ site_id: 1, domain_port_id: '2', ip_black_list: ['10.0.0.1', '10.0.0.2'] });`,
			`await c.ops.customer.list();`, // every field optional: params may be omitted
			`const id: OperationId = 'overview.getSwitch';`,
			`await c.call(id, { customer_id: 'c', site_id: 's', network_id: '0', host_id: '0' });`,
			`const events = await c.call('dashboard.ddosEvents', { site_id: 's', status: 'ongoing', start: 0, num: 100 });`,
			`const firstType: string | undefined = events.events[0]?.attack_type;`,
			`c.validate('dashboard.isUnderAttack', { site_id: 1 });`,
			// ids only known at run time, and deliberately loose parameter objects, take the untyped form
			`const r: unknown = await c.call(anyId, { whatever: 1 });`,
			`await c.call('dashboard.isUnderAttack', loose);`,
			`c.validate(anyId, loose);`,
			`return [status, firstType, r];`,
		].join('\n'),
		typo: `await c.ops.applicationProtection.ipBlacklist.ad({});`,
		listForOne: `await c.ops.applicationProtection.ipBlacklist.add({ site_id: 1, domain_port_id: '2', ip_black_list: ['10.0.0.1'] });`,
		badId: `const id: OperationId = 'dashboard.isUnderAtack'; return id;`,
		wrongType: `await c.ops.dashboard.isUnderAttack({ site_id: {} });`,
		wrongTypeCall: `await c.call('dashboard.isUnderAttack', { site_id: {} });`,
		wrongEnum: `await c.call('dashboard.ddosEvents', { site_id: '1', status: 'running' });`,
		unknownParam: `await c.ops.dashboard.isUnderAttack({ site_id: '1', site: 'x' });`,
		missing: `await c.ops.dashboard.isUnderAttack({});`,
		missingCall: `await c.call('dashboard.isUnderAttack', {});`,
		missingValidate: `c.validate('applicationProtection.authBypass.add', { site_id: '1', domain_port_id: '2', host: 'h', uri: '/' });`,
		noParams: `await c.ops.dashboard.isUnderAttack();`,
		resultType: `const s: string = (await c.ops.dashboard.isUnderAttack({ site_id: '1' })).status; return s;`,
		resultProp: `return (await c.ops.dashboard.isUnderAttack({ site_id: '1' })).statuss;`,
	});
	assert.equal(errors.good, '', errors.good);
	const fails = (name: string, ...patterns: RegExp[]) => {
		assert.notEqual(errors[name], '', `${name} should not compile`);
		for (const p of patterns) assert.match(errors[name], p, `${name}: ${errors[name]}`);
	};
	fails('typo', /Property 'ad' does not exist/);
	fails('badId', /not assignable to type/);
	fails('listForOne', /Type 'string\[\]' is not assignable to type 'string'/);
	fails('wrongType', /property 'site_id'/, /not assignable to type 'string \| number'/);
	fails('wrongTypeCall', /property 'site_id'/, /not assignable to type 'string \| number'/);
	fails('wrongEnum', /property 'status'/, /"running"/);
	fails('unknownParam', /'site' does not exist in type/);
	fails('missing', /Property 'site_id' is missing/);
	fails('missingCall', /Property 'site_id' is missing/);
	fails('missingValidate', /Property 'scheme' is missing/);
	fails('noParams', /Expected 1-2 arguments, but got 0/);
	fails('resultType', /Type 'number' is not assignable to type 'string'/);
	fails('resultProp', /Property 'statuss' does not exist/);
});

test('every valid sample the runtime accepts also compiles against the generated parameter types', () => {
	const ids = catalog.map((op) => op.id).filter((id) => samples[id]);
	assert.ok(ids.length >= 45, `samples cover ${ids.length} operations`);
	for (const id of ids) validateParams(catalog.find((op) => op.id === id)!, samples[id]);
	const body = ids
		.map((id, i) => `const p${i}: OperationParams[${JSON.stringify(id)}] = ${JSON.stringify(samples[id])};`)
		.join('\n');
	const errors = compile({ samples: `${body}\nreturn [${ids.map((_, i) => `p${i}`).join(', ')}];` });
	assert.equal(errors.samples, '', errors.samples);
});
