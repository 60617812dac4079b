import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How a worker process is launched, and where the worker package's files are. Plain node, no esbuild, no tsx:
 * compiled into dist/launch.mjs, which `secsvc worker` of the installed package (bin/secsvc.mjs) loads before it
 * replaces itself with the worker.
 *
 * PACKAGE_DIR is the worker package's folder: `worker/` of the repository, or node_modules/@security-service/worker
 * of an installation. PACKAGED: installed from the npm tarball (worker/src/process/pack.mts): no sources next to
 * dist/, so everything runs from dist/ — the CLI (cli.mjs), the worker (main.mjs), the workflow bundles built at pack
 * time (workflows.js, workflows-unversioned.js; build id in workflows.json), the simulator (simulator.mjs).
 */
const HERE = fileURLToPath(import.meta.url);
export const PACKAGE_DIR = HERE.endsWith('.mts') ? join(dirname(HERE), '..', '..') : join(dirname(HERE), '..');
export const DIST = join(PACKAGE_DIR, 'dist');
export const PACKAGED = !existsSync(join(PACKAGE_DIR, 'src'));

/**
 * Node/V8 options of the worker process (SECSVC_WORKER_NODE_FLAGS, space-separated, `none` for none), placed before
 * the entry by every launcher. V8 flags are process-wide, so they size the main isolate AND the workflow thread's
 * isolate (the SDK creates that thread without resourceLimits). Default:
 *   --max-old-space-size=512  caps each isolate's old generation at 512 MB, which also lowers V8's heap growing
 *                             factor: garbage is collected at a small multiple of the live heap instead of piling up
 *                             to 4× it; raise it for far more cached workflows per worker.
 *   --max-semi-space-size=2   young generation of 2 MB semi-spaces instead of 16 (less idle memory per isolate).
 *   --heap-growing-percent=20 the next full GC at 1.2× the live old generation instead of V8's ~1.5×.
 * What each flag saves, measured: docs/worker/production.md "Memory". `--optimize-for-size` gets lower still for more worker
 * CPU. The first two default flags are also accepted in NODE_OPTIONS (--heap-growing-percent is not: put it on the
 * command line, as deploy/ does), for deployments that start `node worker/dist/main.mjs` themselves.
 */
export const DEFAULT_WORKER_NODE_FLAGS = [
	'--max-old-space-size=512',
	'--max-semi-space-size=2',
	'--heap-growing-percent=20',
];

export function workerNodeFlags(env: Record<string, string | undefined> = process.env): string[] {
	const v = env.SECSVC_WORKER_NODE_FLAGS;
	if (v === undefined || v.trim() === '') return [...DEFAULT_WORKER_NODE_FLAGS];
	if (v.trim() === 'none') return [];
	const flags = v.trim().split(/\s+/);
	const bad = flags.find((f) => !/^--[a-z0-9][a-z0-9_-]*(=\S+)?$/i.test(f));
	if (bad)
		throw new Error(
			`SECSVC_WORKER_NODE_FLAGS: every entry must be a node/V8 option like --max-semi-space-size=4 (got ${JSON.stringify(bad)})`,
		);
	return flags;
}

/**
 * Environment the worker process needs on top of the caller's. MALLOC_ARENA_MAX=2 (unless already set): glibc
 * otherwise gives each of the many native threads (Rust core's tokio runtime, V8 and libuv helpers) its own malloc
 * arena, up to 8 per core, and freed memory stays spread over them; 2 keeps the worker's native memory smaller at
 * the same CPU time (docs/worker/production.md "Memory"). glibc reads it at process start, so it must be
 * in the environment of the exec, not set by the worker itself. Ignored by other C libraries.
 */
export function workerEnv(env: Record<string, string | undefined> = process.env): Record<string, string> {
	return { MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX || '2' };
}

/** The worker process: `node <flags> <entry>` and the environment to add. Default entry: the installed dist/main.mjs. */
export function workerLaunch(
	entry = join(DIST, 'main.mjs'),
	env: Record<string, string | undefined> = process.env,
	flags = workerNodeFlags(env),
): { command: string; args: string[]; env: Record<string, string> } {
	return { command: process.execPath, args: [...flags, entry], env: workerEnv(env) };
}
