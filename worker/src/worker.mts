import { Client as TemporalClient } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '../../api/client.ts';
import { redactText, registerSecret } from '../../api/redact.ts';
import { createActivities } from './activities.mts';
import { createCoordinationActivities } from './coordination.mts';
import { createBlocksActivities } from './blocks.mts';
import { workflowBundle } from './bundle.mts';
import { connectionOptions, type WorkerConfig } from './config.mts';
import { createApiClient } from './client.mts';

/** Builds the API client from the worker configuration (the only place credentials enter). */
export function clientFromConfig(cfg: WorkerConfig): { client: Client; close: () => Promise<void> } {
	registerSecret(cfg.api.secret);
	registerSecret(cfg.api.refreshToken);
	registerSecret(cfg.api.authCode);
	const client = createApiClient({
		baseUrl: cfg.api.baseUrl,
		credentials: { appId: cfg.api.appId, secret: cfg.api.secret, tokenKind: cfg.api.tokenKind, refreshToken: cfg.api.refreshToken },
		tokenStoreFile: cfg.api.tokenStoreFile,
		timeoutMs: cfg.api.timeoutMs ?? 10_000,
		// Temporal retries activities; the client's own retries stay small so one attempt stays short.
		retries: cfg.api.retries ?? 1,
		authFailureCodes: cfg.api.authFailureCodes,
		rateLimitCodes: cfg.api.rateLimitCodes,
		connections: 8,
	});
	return { client, close: () => client.close() };
}

/**
 * Worker sizing (env; defaults chosen on the bench of 500 concurrent runbooks on one worker, see bench/README.md):
 *   SECSVC_MAX_CACHED_WORKFLOWS            sticky cache size (default 1000). Smaller bounds the cache, but an evicted
 *                                          runbook replays its whole history on its next poll: at 100 with 500
 *                                          polling runbooks completion took 2.6× longer and peak RSS did not drop
 *   SECSVC_MAX_CONCURRENT_WORKFLOW_TASKS   workflow tasks run at once (default 40, the SDK's; ≤ cache size)
 *   SECSVC_MAX_CONCURRENT_ACTIVITIES       activities run at once (default 50)
 *   SECSVC_MAX_CONCURRENT_LOCAL_ACTIVITIES local activities (the runbooks' reads) run at once (default 50)
 *   SECSVC_REUSE_V8_CONTEXT                1/0 (default 1: one V8 context shared by all workflows)
 *
 * Memory is sized by the process, not by these options: the worker runs compiled (worker/dist/main.mjs, no tsx) with
 * node flags from SECSVC_WORKER_NODE_FLAGS (default --max-old-space-size=512 --max-semi-space-size=2) and
 * MALLOC_ARENA_MAX=2 in its environment, both set by the launchers (build.mts workerCommand), see worker/README.md
 * "Memory". At 500 concurrent runbooks the LIVE heaps are small (main isolate ~57 MB, workflow thread ~34 MB after a
 * full GC); without the flags V8's default heap growth let garbage pile up to ~200 MB + ~110 MB before collecting
 * (V8 grows the old generation up to 4× the live size when the machine has memory, whatever the process needs).
 * The SDK's other memory options stay at their defaults: workflowThreadPoolSize 1 (with reuseV8Context more threads
 * only add isolates), maxCachedWorkflows as above (smaller made it worse: replays).
 */
export function workerTuning(env: Record<string, string | undefined> = process.env) {
	const int = (name: string, def: number, min: number) => {
		const v = env[name];
		if (v === undefined || v === '') return def;
		const n = Number(v);
		if (!Number.isInteger(n) || n < min) throw new Error(`${name}: must be an integer ≥ ${min} (got ${JSON.stringify(v)})`);
		return n;
	};
	const reuse = env.SECSVC_REUSE_V8_CONTEXT;
	if (reuse !== undefined && reuse !== '' && reuse !== '0' && reuse !== '1') throw new Error(`SECSVC_REUSE_V8_CONTEXT: must be 0 or 1 (got ${JSON.stringify(reuse)})`);
	const maxCachedWorkflows = int('SECSVC_MAX_CACHED_WORKFLOWS', 1000, 2);
	return {
		maxCachedWorkflows,
		maxConcurrentWorkflowTaskExecutions: Math.min(maxCachedWorkflows, int('SECSVC_MAX_CONCURRENT_WORKFLOW_TASKS', 40, 2)),
		maxConcurrentActivityTaskExecutions: int('SECSVC_MAX_CONCURRENT_ACTIVITIES', 50, 1),
		maxConcurrentLocalActivityExecutions: int('SECSVC_MAX_CONCURRENT_LOCAL_ACTIVITIES', 50, 1),
		reuseV8Context: reuse !== '0',
	};
}

export interface RunningWorker {
	worker: Worker;
	/** Resolves when the worker has stopped. */
	done: Promise<void>;
	shutdown(): Promise<void>;
}

export async function startWorker(cfg: WorkerConfig, opts: { connection?: NativeConnection; identity?: string } = {}): Promise<RunningWorker> {
	const { client, close } = clientFromConfig(cfg);
	const connection = opts.connection ?? (await NativeConnection.connect(connectionOptions(cfg.temporal)));
	// The playbooks reach the site coordinator (one owner per setting) through this worker's own connection.
	let temporal: TemporalClient | undefined;
	const temporalClient = () => (temporal ??= new TemporalClient({ connection, namespace: cfg.temporal.namespace }));
	const worker = await Worker.create({
		connection,
		namespace: cfg.temporal.namespace,
		taskQueue: cfg.temporal.taskQueue,
		workflowBundle: await workflowBundle(),
		activities: {
			...createActivities(client, {
				retryableApiCodes: cfg.api.retryableApiCodes,
				authInputs: { appId: cfg.api.appId, secret: cfg.api.secret, refreshToken: cfg.api.refreshToken, authCode: cfg.api.authCode },
				coordination: temporalClient,
			}),
			...createCoordinationActivities(temporalClient),
			...createBlocksActivities(client, temporalClient),
		},
		...(opts.identity ? { identity: opts.identity } : {}),
		...workerTuning(),
	});
	const done = worker.run().finally(async () => {
		await close().catch(() => {});
		if (!opts.connection) await connection.close().catch(() => {});
	});
	return {
		worker,
		done,
		async shutdown() {
			if (worker.getState() === 'RUNNING') worker.shutdown();
			await done;
		},
	};
}

export const safeMessage = (e: unknown) => redactText(e instanceof Error ? e.message : String(e));
