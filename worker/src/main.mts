/**
 * Worker process entry. Runs compiled: `MALLOC_ARENA_MAX=2 node --max-old-space-size=512 --max-semi-space-size=2 worker/dist/main.mjs` (build.mts; `secsvc worker`
 * and demo/stack.mts build and start it), or from source: `node --import tsx worker/src/main.mts`.
 * Config from env / SECSVC_CONFIG.
 */
import { fileURLToPath } from 'node:url';
import { assertFreshBuild } from './buildInfo.mts';
import { loadConfig } from './config.mts';
import { safeMessage, startWorker } from './worker.mts';

export async function main(): Promise<void> {
	assertFreshBuild(fileURLToPath(import.meta.url)); // compiled worker older than its sources: refuse
	const cfg = loadConfig();
	const w = await startWorker(cfg);
	if (cfg.metrics?.address) console.log(`secsvc worker: metrics on http://${cfg.metrics.address}/metrics`);
	console.log(`secsvc worker: task queue ${cfg.temporal.taskQueue} on ${cfg.temporal.address} (${cfg.temporal.namespace})`);
	for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void w.shutdown());
	await w.done;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	main().catch((e) => {
		console.error(`secsvc worker: ${safeMessage(e)}`);
		process.exit(1);
	});
}
