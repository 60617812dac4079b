import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PRELOADED, preloadModules } from '../../worker/src/bundle.mts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Value imports of a source file (type-only imports are erased by the compiler and do not load anything). */
function valueImports(file: string): string[] {
	const src = readFileSync(file, 'utf8');
	const out: string[] = [];
	for (const m of src.matchAll(/^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)'/gm)) {
		if (m[2]) continue; // import type / export type
		const names = m[3].replace(/^\{|\}$/g, '').split(',').map((s) => s.trim()).filter(Boolean);
		if (m[3].startsWith('{') && names.length && names.every((n) => n.startsWith('type '))) continue;
		out.push(m[4]);
	}
	for (const m of src.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]);
	return out;
}

test('preloaded workflow modules (shared by every workflow) are pure: no @temporalio/workflow, no module state, nothing else pulled in', () => {
	assert.deepEqual(preloadModules(), PRELOADED.map((f) => join(ROOT, f)));
	const pre = new Set(PRELOADED.map((f) => resolve(ROOT, f)));
	for (const f of pre) {
		const rel = relative(ROOT, f);
		for (const spec of valueImports(f)) {
			assert.notEqual(spec, '@temporalio/workflow', `${rel} imports @temporalio/workflow: a preloaded module would share one workflow's state with all`);
			if (spec.startsWith('.')) {
				const dep = resolve(dirname(f), /\.m?ts$/.test(spec) ? spec : `${spec}.ts`);
				assert.ok(pre.has(dep), `${rel} imports ${relative(ROOT, dep)}, which is not preloaded (it would be evaluated per workflow anyway, and may hold state)`);
			} else assert.equal(spec, '@temporalio/common', `${rel} imports ${spec}: only @temporalio/common (already shared by the SDK) is allowed`);
		}
		const src = readFileSync(f, 'utf8');
		assert.doesNotMatch(src, /^(export\s+)?(let|var)\s/m, `${rel} has module-level mutable state (let/var)`);
	}
});
