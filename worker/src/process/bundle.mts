import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createHash } from 'node:crypto';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, hashInputs } from './buildInfo.mts';
import { DIST, PACKAGED } from './launch.mts';
import { HOST_FILE } from '../../../workflows/playbooks.mts';

/**
 * Workflow bundling, done ONCE per source version and cached on disk, never inside the worker process.
 *
 * The worker starts with `workflowBundle: { codePath }` (a prebuilt file), so webpack never runs in it (bundling
 * in-process cost ~250 MB of worker RSS that was never given back). The bundle file is keyed by a hash of every
 * workflow and api source, this file, and the installed @temporalio/workflow version; a missing bundle is built in
 * a child process (`node --import tsx worker/src/process/bundle.mts`), which is also the `npm run -w worker bundle` command.
 *
 *   SECSVC_WORKFLOW_BUNDLE=path   use this prebuilt bundle as is (deployments that bundle at build time; for
 *                                 SECSVC_WORKER_VERSIONING=0 workers build it with `--unversioned`)
 *   SECSVC_BUNDLE_DIR=dir         cache directory (default ~/.cache/secsvc/bundles, or $XDG_CACHE_HOME/secsvc/bundles)
 *   SECSVC_WORKFLOWS_DIR=dir      bundle this copy of workflows/ instead (tests of a changed build; it must sit at the
 *                                 same depth as workflows/ so that `../api/...` imports resolve, e.g. .tmp/x/workflows
 *                                 next to a .tmp/x/api link)
 *
 * The source hash is also the worker's Worker Deployment build id (deploy.mts): changed workflow code always runs
 * under a new build id, never under the id of runbooks started on the old code.
 *
 * The SDK's webpack config compiles `.ts` with swc-loader but not `.mts` (our workflows are `.mts`, see the house
 * rules), so a hook adds the same swc rule for `.mts`. Used by the worker, the replay tests and the CLI.
 */

// This file's SOURCE path, also when it runs compiled into worker/dist/main.mjs.
const SELF = join(ROOT, 'worker/src/process/bundle.mts');
/** Workflow interceptor module of unversioned workers' bundles (SECSVC_WORKER_VERSIONING=0): clears every workflow type's declared behaviour. */
const UNVERSIONED = join(ROOT, 'worker/src/process/unversioned.mts');

type WebpackConfig = {
	module?: { rules?: unknown[] };
	resolve?: { extensions?: string[] };
	optimization?: Record<string, unknown>;
};

export function webpackConfigHook<C>(config: C): C {
	const c = config as unknown as WebpackConfig;
	c.module ??= {};
	c.module.rules ??= [];
	c.module.rules.push({
		test: /\.mts$/,
		exclude: /node_modules/,
		type: 'javascript/esm',
		use: {
			loader: 'swc-loader',
			options: { sourceMap: true, jsc: { target: 'es2017', parser: { syntax: 'typescript' } } },
		},
	});
	c.resolve ??= {};
	c.resolve.extensions = [...(c.resolve.extensions ?? []), '.mts'];
	// Scope hoisting: our ES modules are joined into a few scopes. Each workflow evaluates the bundle's modules again
	// (reuseV8Context), and every module costs ~1.5 KB of heap (module object, one getter per export) per workflow.
	c.optimization = { ...c.optimization, concatenateModules: true, providedExports: true, usedExports: true };
	return config;
}

function listSources(dir: string, exts: string[], out: string[] = []): string[] {
	for (const name of readdirSync(dir).sort()) {
		if (name === 'node_modules' || name.startsWith('.')) continue;
		const p = join(dir, name);
		if (statSync(p).isDirectory()) listSources(p, exts, out);
		else if (exts.some((e) => name.endsWith(e))) out.push(p);
	}
	return out;
}

function sdkVersion(): string {
	try {
		let d = dirname(fileURLToPath(import.meta.resolve('@temporalio/workflow')));
		for (let i = 0; i < 4 && !existsSync(join(d, 'package.json')); i++) d = dirname(d);
		return String(JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')).version);
	} catch {
		return 'unknown';
	}
}

/** The workflow sources to bundle: SECSVC_WORKFLOWS_DIR, else workflows/. */
export function workflowsDir(env: Record<string, string | undefined> = process.env): string {
	return env.SECSVC_WORKFLOWS_DIR ? resolve(env.SECSVC_WORKFLOWS_DIR) : join(ROOT, 'workflows');
}

/** Hash of everything that goes into the bundle (same scheme as the compiled worker's build record). */
export function sourceHash(dir = workflowsDir()): string {
	const bundled = listSources(dir, ['.mts', '.ts']).filter((f) => !HOST_FILE.test(f)); // host side: never bundled
	const files = [...bundled, ...listSources(join(ROOT, 'api'), ['.ts']), SELF, UNVERSIONED];
	return (
		hashInputs(
			files.map((f) => relative(ROOT, f)),
			`sdk ${sdkVersion()}`,
		) ?? 'missing'
	);
}

/**
 * Modules evaluated once per worker and shared by every workflow (the SDK's `preloadModules`). With reuseV8Context
 * each workflow otherwise evaluates every module of the bundle again (~75 KB of heap per cached workflow; see
 * docs/worker/production.md "Memory"); these pure ones (~30 KB of it) hold no state and never import
 * `@temporalio/workflow`, not even indirectly — test/unit/bundle.test.mts checks that rule, so a later edit that
 * breaks it fails the tests instead of leaking one workflow's state into another.
 */
export const PRELOADED = [
	'api/catalog/detectionGroups.ts',
	'api/catalog/ipv4.ts',
	'api/ranges.ts',
	'api/report/model.ts',
	'api/report/style.ts',
	'api/report/html.ts',
	'workflows/pure/ranges.mts',
	'workflows/pure/thresholds.mts',
	'workflows/pure/activityNames.mts',
	'api/runbook/planItems.ts',
	'workflows/attackResponse/searchAttributes.mts',
	'workflows/report/report.mts',
	'workflows/attackResponse/settings.mts',
	'workflows/pure/stackTraces.mts',
] as const;

/**
 * The workflow entry module, also evaluated once per worker and shared (after PRELOADED): every workflow module of
 * the bundle is then ONE instance for all workflows instead of one per cached workflow (43 KB of heap each, and the
 * CPU of evaluating them at every workflow start and every replay after an eviction; docs/worker/production.md "Memory").
 * Safe because workflow state lives in the workflow function's own scope and in the SDK's per-workflow activator,
 * which every @temporalio/workflow API looks up when called (the SDK's own modules are shared the same way);
 * test/unit/bundle.test.mts checks that no workflow module keeps module-level mutable state. The SDK deep-freezes
 * shared modules' exports, so an exported object mutated at run time fails loudly instead of leaking state.
 */
export const SHARED_ENTRY = 'workflows/index.mts';

/** PRELOADED + SHARED_ENTRY as absolute paths inside the bundled copy of workflows/ (SECSVC_WORKFLOWS_DIR) and its sibling api/. */
export function preloadModules(): string[] {
	const base = dirname(workflowsDir());
	return [...PRELOADED, SHARED_ENTRY].map((f) => join(base, f));
}

export function bundleDir(): string {
	return (
		process.env.SECSVC_BUNDLE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'secsvc', 'bundles')
	);
}

/** Bundles with webpack in THIS process and writes the file (used by the child process / `npm run -w worker bundle`). */
export async function buildBundleFile(out: string, o: { unversioned?: boolean } = {}): Promise<string> {
	const { bundleWorkflowCode } = await import('@temporalio/worker');
	// unversioned.mts clears the options on workflows/index.mts's types, not on a copy's.
	if (o.unversioned && workflowsDir() !== join(ROOT, 'workflows'))
		throw new Error('SECSVC_WORKFLOWS_DIR: cannot be combined with SECSVC_WORKER_VERSIONING=0');
	const { code } = await bundleWorkflowCode({
		workflowsPath: join(workflowsDir(), 'index.mts'),
		// unversioned.mts rewrites the shared workflow functions' options: it must run before the SDK freezes them
		preloadModules: [...preloadModules(), ...(o.unversioned ? [UNVERSIONED] : [])],
		workflowInterceptorModules: o.unversioned ? [UNVERSIONED] : undefined,
		webpackConfigHook: webpackConfigHook as never,
		logger: quietLogger,
	});
	mkdirSync(dirname(out), { recursive: true });
	const tmp = `${out}.${process.pid}.tmp`;
	writeFileSync(tmp, withEmptySourceMap(code));
	renameSync(tmp, out); // atomic: concurrent builders of the same hash write the same content
	return out;
}

/**
 * The bundle with an empty inline source map instead of webpack's. The SDK requires an inline map and keeps the bundle
 * text (map included) and the parsed map in every workflow isolate, only to map workflow stack traces, which are off
 * in workflows (workflows/pure/stackTraces.mts); webpack's map with every source's text is about two thirds of the
 * bundle, held again as a string and parsed, in each isolate.
 */
export function withEmptySourceMap(code: string): string {
	const at = code.lastIndexOf('//# sourceMappingURL=data:');
	if (at < 0) return code;
	const map = { version: 3, file: 'workflow-bundle.js', sources: [], names: [], mappings: '' };
	return `${code.slice(0, at)}//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

function buildInChild(out: string, unversioned: boolean): Promise<void> {
	return new Promise((resolve, reject) => {
		const child = spawn(
			process.execPath,
			['--import', 'tsx', SELF, '--out', out, ...(unversioned ? ['--unversioned'] : [])],
			{ cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
		);
		let err = '';
		child.stderr?.on('data', (d: Buffer) => {
			if (err.length < 20_000) err += d.toString();
		});
		child.once('error', reject);
		child.once('exit', (code) =>
			code === 0 && existsSync(out)
				? resolve()
				: reject(new Error(`workflow bundling failed (exit ${code}): ${err.slice(0, 4000)}`)),
		);
	});
}

const cached = new Map<boolean, Promise<{ codePath: string; buildId: string }>>();

/**
 * The prebuilt workflow bundle as `{ codePath }` (for `Worker.create({ workflowBundle })` and
 * `Worker.runReplayHistories`) and its `buildId`: SECSVC_WORKFLOW_BUNDLE (build id = hash of the file), else the
 * installed package's own (shippedBundle), else the cached file for the current sources (build id = their source hash), else built once in a child process.
 * Resolved once per process. `unversioned`: the variant for workers without deployment versioning (unversioned.mts).
 */
export function workflowBundle(o: { unversioned?: boolean } = {}): Promise<{ codePath: string; buildId: string }> {
	const unversioned = o.unversioned === true;
	let p = cached.get(unversioned);
	if (p) return p;
	p = (async () => {
		const fixed = process.env.SECSVC_WORKFLOW_BUNDLE;
		if (fixed) {
			if (!existsSync(fixed)) throw new Error(`SECSVC_WORKFLOW_BUNDLE: file not found: ${fixed}`);
			return { codePath: fixed, buildId: createHash('sha256').update(readFileSync(fixed)).digest('hex').slice(0, 16) };
		}
		if (PACKAGED) return shippedBundle(unversioned);
		const buildId = sourceHash();
		const out = join(bundleDir(), `workflows-${buildId}${unversioned ? '-unversioned' : ''}.js`);
		if (!existsSync(out)) await buildInChild(out, unversioned);
		return { codePath: out, buildId };
	})();
	cached.set(unversioned, p);
	p.catch(() => cached.delete(unversioned));
	return p;
}

/** File names of the bundles the npm package ships (built by pack.mts) and of their build record. */
export const SHIPPED = { versioned: 'workflows.js', unversioned: 'workflows-unversioned.js', record: 'workflows.json' };

/**
 * The installed package's bundle (launch.mts PACKAGED), built at pack time: there are no sources to hash, so the build
 * id is the source hash recorded then — the same id a worker run from the repository at that commit has.
 */
function shippedBundle(unversioned: boolean): { codePath: string; buildId: string } {
	const codePath = join(DIST, unversioned ? SHIPPED.unversioned : SHIPPED.versioned);
	const { buildId } = JSON.parse(readFileSync(join(DIST, SHIPPED.record), 'utf8')) as { buildId: string };
	return { codePath, buildId };
}

const noop = () => {};
const quietLogger = {
	log: noop,
	trace: noop,
	debug: noop,
	info: noop,
	warn: (m: string) => console.warn(m),
	error: (m: string) => console.error(m),
};

// `node --import tsx worker/src/process/bundle.mts [--out FILE] [--unversioned]`: builds the bundle (default: the cache path)
// and prints it; --unversioned for workers run with SECSVC_WORKER_VERSIONING=0.
if (process.argv[1] && process.argv[1] === SELF) {
	const i = process.argv.indexOf('--out');
	const unversioned = process.argv.includes('--unversioned');
	const out =
		i > 0 ? process.argv[i + 1] : join(bundleDir(), `workflows-${sourceHash()}${unversioned ? '-unversioned' : ''}.js`);
	buildBundleFile(out, { unversioned }).then(
		(p) => console.log(p),
		(e) => {
			console.error(e instanceof Error ? e.message : String(e));
			process.exit(1);
		},
	);
}
