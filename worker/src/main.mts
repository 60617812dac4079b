/** Worker process entry: `node --import tsx worker/src/main.mts` (or `secsvc worker`). Config from env / SECSVC_CONFIG. */
import { loadConfig } from './config.mts';
import { safeMessage, startWorker } from './worker.mts';

export async function main(): Promise<void> {
	const cfg = loadConfig();
	const w = await startWorker(cfg);
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
