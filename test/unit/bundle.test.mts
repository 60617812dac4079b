import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PRELOADED, SHARED_ENTRY, preloadModules } from '../../worker/src/process/bundle.mts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Value imports of a source file (type-only imports are erased by the compiler and do not load anything). */
function valueImports(file: string): string[] {
	const src = readFileSync(file, 'utf8');
	const out: string[] = [];
	for (const m of src.matchAll(/^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)'/gm)) {
		if (m[2]) continue; // import type / export type
		const names = m[3]
			.replace(/^\{|\}$/g, '')
			.split(',')
			.map((s) => s.trim())
			.filter(Boolean);
		if (m[3].startsWith('{') && names.length && names.every((n) => n.startsWith('type '))) continue;
		out.push(m[4]);
	}
	for (const m of src.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]);
	return out;
}

test('preloaded workflow modules (shared by every workflow) are pure: no @temporalio/workflow, no module state, nothing else pulled in', () => {
	assert.deepEqual(
		preloadModules(),
		[...PRELOADED, SHARED_ENTRY].map((f) => join(ROOT, f)),
	);
	const pre = new Set(PRELOADED.map((f) => resolve(ROOT, f)));
	for (const f of pre) {
		const rel = relative(ROOT, f);
		for (const spec of valueImports(f)) {
			assert.notEqual(
				spec,
				'@temporalio/workflow',
				`${rel} imports @temporalio/workflow: a preloaded module would share one workflow's state with all`,
			);
			if (spec.startsWith('.')) {
				const dep = resolve(dirname(f), /\.m?ts$/.test(spec) ? spec : `${spec}.ts`);
				assert.ok(
					pre.has(dep),
					`${rel} imports ${relative(ROOT, dep)}, which is not preloaded (it would be evaluated per workflow anyway, and may hold state)`,
				);
			} else
				assert.equal(
					spec,
					'@temporalio/common',
					`${rel} imports ${spec}: only @temporalio/common (already shared by the SDK) is allowed`,
				);
		}
		const src = readFileSync(f, 'utf8');
		assert.doesNotMatch(src, /^(export\s+)?(let|var)\s/m, `${rel} has module-level mutable state (let/var)`);
	}
});

/** Every repository module the workflow entry loads (relative value imports, followed). */
function bundled(entry: string, seen = new Set<string>()): Set<string> {
	if (seen.has(entry)) return seen;
	seen.add(entry);
	for (const spec of valueImports(entry)) {
		if (!spec.startsWith('.')) continue;
		bundled(resolve(dirname(entry), /\.m?ts$/.test(spec) ? spec : `${spec}.ts`), seen);
	}
	return seen;
}

test('the shared workflow modules (SHARED_ENTRY: one instance for every workflow) keep no module-level mutable state', () => {
	const files = [...bundled(join(ROOT, SHARED_ENTRY))];
	assert.ok(files.length > 20, `${files.length} modules found from ${SHARED_ENTRY}`);
	for (const f of files) {
		const rel = relative(ROOT, f);
		const src = readFileSync(f, 'utf8');
		// State at module level would be shared by every workflow of the worker (and survive from one run to the next):
		// a `let`/`var`, or a collection created once and filled later.
		assert.doesNotMatch(src, /^(export\s+)?(let|var)\s/m, `${rel} has module-level mutable state (let/var)`);
		assert.doesNotMatch(
			src,
			/^(export\s+)?const\s+\w+(\s*:[^=]+)?\s*=\s*new\s+(Map|Set|WeakMap|WeakSet|Array)\b/m,
			`${rel} keeps a module-level collection`,
		);
		assert.doesNotMatch(
			src,
			/^(export\s+)?const\s+\w+(\s*:[^=]+)?\s*=\s*(\[\]|\{\})\s*;/m,
			`${rel} keeps a module-level empty object or array (filled later?)`,
		);
	}
});
