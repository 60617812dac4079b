// The client's derived methods are typed from the catalog's ids: a real operation compiles, a typo does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

function compile(body: string): { ok: boolean; out: string } {
	const dir = mkdtempSync(join(tmpdir(), 'types-'));
	const file = join(dir, 'probe.ts');
	writeFileSync(file, `import type { Client } from ${JSON.stringify(join(root, 'api/client'))};\nimport type { OperationId } from ${JSON.stringify(join(root, 'api/catalog/index'))};\nexport async function probe(c: Client) {\n${body}\n}\n`);
	try {
		const out = execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'commonjs', '--moduleResolution', 'node10', '--lib', 'es2022,dom', file], { encoding: 'utf8' });
		return { ok: true, out };
	} catch (e) {
		return { ok: false, out: String((e as { stdout?: string }).stdout ?? e) };
	}
}

test('ops tree and OperationId are typed from the catalog ids', () => {
	const good = compile(`await c.ops.dashboard.isUnderAttack({ site_id: '1' });\nawait c.ops.applicationProtection.ipBlacklist.add({});\nconst id: OperationId = 'overview.getSwitch';\nawait c.call(id, {});`);
	assert.ok(good.ok, good.out);
	const typo = compile(`await c.ops.applicationProtection.ipBlacklist.ad({});`);
	assert.equal(typo.ok, false);
	assert.match(typo.out, /Property 'ad' does not exist/);
	const badId = compile(`const id: OperationId = 'dashboard.isUnderAtack'; void id;`);
	assert.equal(badId.ok, false);
	assert.match(badId.out, /not assignable to type/);
});
