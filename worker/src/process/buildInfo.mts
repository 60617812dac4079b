import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Freshness of the compiled worker (worker/dist/main.mjs, see build.mts), without esbuild: the compiled file's
 * first line records the hash of every repository source esbuild put into it (the list comes from esbuild's
 * metafile), so both the launcher (rebuild when stale) and the compiled worker itself (refuse to start when stale)
 * can check it. Paths are relative to the repository root.
 */

/** The repository root, from this module's URL: the folder above `worker/`, from source (worker/src/process/) and compiled (worker/dist/). */
const HERE = fileURLToPath(import.meta.url);
export const ROOT = HERE.slice(0, HERE.lastIndexOf('/worker/') + 1);
export const BUILD_MARK = '// secsvc-worker-build ';

export interface BuildInfo {
	/** Hash of `salt` and every input (path + content). */
	hash: string;
	/** esbuild version and build-script hash: a new esbuild or build script changes the hash too. */
	salt: string;
	/** Repository sources in the build, relative to the repository root. */
	inputs: string[];
}

/** Hash of the inputs as they are on disk now; undefined when one of them is missing. */
export function hashInputs(inputs: string[], salt: string): string | undefined {
	const h = createHash('sha256');
	h.update(`${salt}\n`);
	for (const f of inputs) {
		const p = join(ROOT, f);
		if (!existsSync(p)) return undefined;
		h.update(`${f}\n`);
		h.update(readFileSync(p));
	}
	return h.digest('hex').slice(0, 16);
}

/** The build record on the first line of a compiled worker; undefined for anything else (e.g. a .mts source). */
export function readBuildInfo(file: string): BuildInfo | undefined {
	let fd: number | undefined;
	try {
		fd = openSync(file, 'r');
		const buf = Buffer.alloc(64 * 1024);
		const n = readSync(fd, buf, 0, buf.length, 0);
		const line = buf.subarray(0, n).toString('utf8').split('\n', 1)[0];
		if (!line.startsWith(BUILD_MARK)) return undefined;
		const info = JSON.parse(line.slice(BUILD_MARK.length)) as BuildInfo;
		return typeof info.hash === 'string' && typeof info.salt === 'string' && Array.isArray(info.inputs)
			? info
			: undefined;
	} catch {
		return undefined;
	} finally {
		if (fd !== undefined) closeSync(fd);
	}
}

export class StaleBuildError extends Error {}

/**
 * Called by the worker entry at start: when `file` is a compiled worker and its sources are on disk, they must
 * hash to what was built (a deployment that ships only dist/ has no sources to compare with and is not checked).
 */
export function assertFreshBuild(file: string): void {
	const info = readBuildInfo(file);
	if (!info) return;
	const present = info.inputs.filter((f) => existsSync(join(ROOT, f)));
	if (present.length === 0) return;
	if (present.length === info.inputs.length && hashInputs(info.inputs, info.salt) === info.hash) return;
	throw new StaleBuildError(
		`${file} is older than its sources (built from hash ${info.hash}); rebuild with \`npm run -w worker build\` (the demo, tests and \`secsvc worker\` rebuild it themselves)`,
	);
}
