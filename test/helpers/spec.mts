// The spec as the tests' source of truth for what the catalog must hold: the endpoint rows of its §4 tables,
// counted per section (4.1 … 4.6), so adding an operation needs no hand-edited counts in tests.
// Found at $SECSVC_SPEC, else ../shared/spec/ next to the checkout (where the project keeps it), else next to the
// checkout this one was cloned from when that is a local path (a check clone in /tmp of a working copy). A missing
// spec fails the test that needs it, naming the places looked at.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NAME = 'security-service-open-api.md';

/** The directory this checkout was cloned from, when its origin is a local path. */
function localOrigin(): string | undefined {
	try {
		const url = execFileSync('git', ['-C', ROOT, 'remote', 'get-url', 'origin'], { encoding: 'utf8' }).trim();
		const path = url.replace(/^file:\/\//, '');
		return isAbsolute(path) ? path : undefined;
	} catch {
		return undefined;
	}
}

export function specFile(): string {
	const origin = localOrigin();
	const places = [
		process.env.SECSVC_SPEC,
		join(ROOT, '..', 'shared', 'spec', NAME),
		origin && join(origin, '..', 'shared', 'spec', NAME),
	];
	const found = places.find((p): p is string => !!p && existsSync(p));
	if (!found)
		throw new Error(`the spec is not found: set SECSVC_SPEC or put it at ${places.filter(Boolean).join(' or ')}`);
	return found;
}

/** Endpoint rows (`| METHOD | path | …`) of §4, per `### 4.N` section (its `####` subsections included). */
export function specOperationsPerSection(): Record<string, number> {
	const per: Record<string, number> = {};
	let section: string | undefined;
	for (const line of readFileSync(specFile(), 'utf8').split('\n')) {
		const h = /^(#{2,3}) (\d+(?:\.\d+)?)[. ]/.exec(line);
		if (h) section = h[2].startsWith('4.') ? h[2] : undefined;
		else if (section && /^\| (GET|POST|PUT|DELETE) \|/.test(line)) per[section] = (per[section] ?? 0) + 1;
	}
	return per;
}

/** How many operations the spec lists. */
export function specOperationCount(): number {
	return Object.values(specOperationsPerSection()).reduce((a, b) => a + b, 0);
}
