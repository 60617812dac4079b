/**
 * Heap each workflow pays for the bundle's modules: evaluates a workflow bundle in a vm context the way the SDK's
 * reusable V8 context does (modules loaded before any workflow — the SDK's own and PRELOADED — are shared; every
 * other module is evaluated again per workflow) and measures the heap of 300 workflows' module instances.
 *   node --expose-gc bench/moduleCost.mjs ~/.cache/secsvc/bundles/workflows-<build id>.js
 */
import vm from 'node:vm';
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
const file = process.argv[2];
if (!file) throw new Error("usage: node --expose-gc bench/moduleCost.mjs BUNDLE.js");
const code = readFileSync(file, 'utf8');
let cache = new Map();
const ctx = vm.createContext({});
Object.defineProperty(ctx, '__webpack_module_cache__', { value: new Proxy({}, { get: (_, p) => cache.get(p), set: (_, p, v) => { cache.set(p, v); return true; } }) });
ctx.__TEMPORAL_ACTIVATOR__ = undefined;
vm.runInContext(code, ctx);
const lib = ctx.__TEMPORAL__;
lib.preloadModules?.();
const N = 300;
const keep = [];
const used = () => { global.gc(); global.gc(); return v8.getHeapStatistics().used_heap_size; };
// shared modules as the SDK would have (api + preload) loaded before activators
const baseline = new Map(cache);
const u0 = used();
for (let i = 0; i < N; i++) {
	cache = new Map(baseline);
	ctx.__webpack_module_cache__; // no-op
	const wf = lib.importWorkflows();
	keep.push(cache);
}
const u1 = used();
console.log(JSON.stringify({ modulesShared: baseline.size, modulesPerWorkflow: keep[0].size - baseline.size, perWorkflowKB: Math.round((u1 - u0) / N / 1024) }));
const names = [...keep[0].keys()].filter((k) => !baseline.has(k));
console.log(names.length, names.slice(0, 200).join(' '));
