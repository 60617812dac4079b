import { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '../../api/client.ts';
import { redactText, registerSecret } from '../../api/redact.ts';
import { createActivities } from './activities.mts';
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

export interface RunningWorker {
	worker: Worker;
	/** Resolves when the worker has stopped. */
	done: Promise<void>;
	shutdown(): Promise<void>;
}

export async function startWorker(cfg: WorkerConfig, opts: { connection?: NativeConnection; identity?: string } = {}): Promise<RunningWorker> {
	const { client, close } = clientFromConfig(cfg);
	const connection = opts.connection ?? (await NativeConnection.connect(connectionOptions(cfg.temporal)));
	const worker = await Worker.create({
		connection,
		namespace: cfg.temporal.namespace,
		taskQueue: cfg.temporal.taskQueue,
		workflowBundle: await workflowBundle(),
		activities: createActivities(client, {
			retryableApiCodes: cfg.api.retryableApiCodes,
			authInputs: { appId: cfg.api.appId, secret: cfg.api.secret, refreshToken: cfg.api.refreshToken, authCode: cfg.api.authCode },
		}),
		...(opts.identity ? { identity: opts.identity } : {}),
		maxConcurrentActivityTaskExecutions: 20,
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
