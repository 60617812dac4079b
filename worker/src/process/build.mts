import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { BUILD_MARK, ROOT, hashInputs, readBuildInfo, type BuildInfo } from './buildInfo.mts';
import { workerEnv, workerLaunch, workerNodeFlags } from './launch.mts';

/**
 * The worker process runs COMPILED, from plain JavaScript: `node <flags> worker/dist/main.mjs` (flags below).
 *
 * esbuild (the one tsx ships) bundles worker/src/process/main.mts and every repository file it imports (worker/src, api,
 * workflows) into one ESM file; packages stay external and load from node_modules. Running the sources through
 * `--import tsx` instead costs the worker ~30 MB of RSS for nothing at run time (tsx's module-hooks thread with its
 * own V8 isolate, the transform cache, inline source maps), see docs/bench/memory.md.
 *
 * A stale build is impossible by construction: the file's first line records the hash of its inputs (from
 * esbuild's metafile) and of the esbuild version and this script; `ensureWorkerBuild()` (used by demo/stack.mts,
 * hence the demo, the benchmarks and the tests, and by `secsvc worker`) rebuilds when anything differs (~0.3 s),
 * and the compiled worker itself refuses to start when its sources changed since (buildInfo.mts).
 *
 *   node --import tsx worker/src/process/build.mts              build if stale, print the entry path (npm run -w worker build)
 *   node --import tsx worker/src/process/build.mts --command    same, then print {"command","args"} to start the worker
 */

export const WORKER_ENTRY = join(ROOT, 'worker/dist/main.mjs');
const SOURCE_ENTRY = join(ROOT, 'worker/src/process/main.mts');
/** The `secsvc` command compiled the same way, as the npm package ships it (pack.mts); `node worker/dist/cli.mjs …` runs it. */
export const CLI_ENTRY = join(ROOT, 'worker/dist/cli.mjs');
const CLI_SOURCE = join(ROOT, 'worker/src/commands/cli.mts');
const SELF = join(ROOT, 'worker/src/process/build.mts');

export { DEFAULT_WORKER_NODE_FLAGS, workerEnv, workerNodeFlags } from './launch.mts';

interface Esbuild {
	buildSync: (o: object) => {
		metafile?: { inputs: Record<string, unknown> };
		outputFiles?: { path: string; text: string }[];
	};
	version: string;
}

export function esbuildModule(): Esbuild {
	// tsx's own esbuild (a dependency of tsx, hoisted or not).
	const req = createRequire(fileURLToPath(import.meta.resolve('tsx')));
	return req('esbuild') as Esbuild;
}

function salt(version: string): string {
	return `esbuild ${version} build ${createHash('sha256').update(readFileSync(SELF)).digest('hex').slice(0, 16)}`;
}

/** Compiles the worker (or another entry) into `out` (atomic write; ~0.3 s) and returns its build record. */
export function buildWorker(out = WORKER_ENTRY, source = SOURCE_ENTRY): BuildInfo {
	const esbuild = esbuildModule();
	const r = esbuild.buildSync({
		absWorkingDir: ROOT,
		entryPoints: [source],
		bundle: true,
		platform: 'node',
		format: 'esm',
		target: 'node20',
		packages: 'external',
		write: false,
		metafile: true,
		outfile: out,
		logLevel: 'silent',
		legalComments: 'none',
	});
	const inputs = Object.keys(r.metafile?.inputs ?? {}).sort();
	const s = salt(esbuild.version);
	const hash = hashInputs(inputs, s);
	if (!hash) throw new Error('worker build: an input vanished while building');
	const info: BuildInfo = { hash, salt: s, inputs };
	const code = r.outputFiles?.find((f) => f.path === out)?.text;
	if (code === undefined) throw new Error('worker build: esbuild produced no output');
	mkdirSync(dirname(out), { recursive: true });
	const tmp = `${out}.${process.pid}.tmp`;
	writeFileSync(tmp, `${BUILD_MARK}${JSON.stringify(info)}\n${code}`);
	renameSync(tmp, out); // atomic: concurrent builders write equivalent files
	return info;
}

/** True when `file` is a build of the current sources with the current esbuild and build script. */
export function isFresh(file = WORKER_ENTRY): boolean {
	const info = readBuildInfo(file);
	if (!info) return false;
	return info.salt === salt(esbuildModule().version) && hashInputs(info.inputs, info.salt) === info.hash;
}

/** Path of an up-to-date compiled worker, building it when missing or stale (checked on every call: ~ms). */
export function ensureWorkerBuild(): string {
	if (!isFresh()) buildWorker();
	return WORKER_ENTRY;
}

/**
 * Path of an up-to-date compiled `secsvc` command (worker/dist/cli.mjs), built when missing or stale like the worker.
 * The tests run their `secsvc` children from it: what the npm package runs, ~0.6 instead of ~1.3 CPU-s a command
 * through tsx, and never a build older than the checkout's sources.
 */
export function ensureCliBuild(): string {
	if (!isFresh(CLI_ENTRY)) buildWorker(CLI_ENTRY, CLI_SOURCE);
	return CLI_ENTRY;
}

/**
 * How to start the worker process: `process.execPath` with the node flags and the compiled entry (built first when
 * stale), and `env` to add to the process environment. SECSVC_WORKER_FROM_SOURCE=1 runs the sources through tsx
 * instead (debugging; costs ~30 MB RSS).
 */
export function workerCommand(
	env: Record<string, string | undefined> = process.env,
	flags = workerNodeFlags(env),
): { command: string; args: string[]; env: Record<string, string> } {
	if (env.SECSVC_WORKER_FROM_SOURCE === '1')
		return { command: process.execPath, args: [...flags, '--import', 'tsx', SOURCE_ENTRY], env: workerEnv(env) };
	return workerLaunch(ensureWorkerBuild(), env, flags);
}

if (process.argv[1] && process.argv[1] === SELF) {
	const main = async () => {
		if (process.argv.includes('--command')) console.log(JSON.stringify(workerCommand()));
		else console.log(ensureWorkerBuild());
	};
	main().catch((e) => {
		console.error(`worker build: ${e instanceof Error ? e.message : String(e)}`);
		process.exit(1);
	});
}
