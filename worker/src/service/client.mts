// The API client as the worker, CLI and benchmarks use it: undici keep-alive transport, node timers, and a
// token store (file when configured, so a rotated refresh token survives restarts).
import { setTimeout as delay } from 'node:timers/promises';
import { createClient, type Client, type ClientOptions } from '../../../api/client.ts';
import type { Credentials } from '../../../api/tokens.ts';
import { createUndiciTransport } from './undici.mts';
import { FileTokenStore } from './tokenStore.mts';

export interface ApiClientConfig {
	baseUrl: string;
	credentials: Credentials;
	tokenStoreFile?: string;
	timeoutMs?: number;
	retries?: number;
	authFailureCodes?: number[];
	rateLimitCodes?: number[];
	connections?: number;
	maxResponseBytes?: number;
	onEvent?: ClientOptions['onEvent'];
	/** The blast-radius guard's settings; own-address lookup on unless `ownAddresses: 'off'`. */
	blastRadius?: ClientOptions['blastRadius'];
	/** The request budget and how calls find their class (worker/src/process/budget.mts); none when unset. */
	rateBudget?: ClientOptions['rateBudget'];
	priorityOf?: ClientOptions['priorityOf'];
	onRetryHint?: ClientOptions['onRetryHint'];
}

export function createApiClient(cfg: ApiClientConfig): Client & { close(): Promise<void> } {
	const transport = createUndiciTransport({ connections: cfg.connections });
	const client = createClient({
		baseUrl: cfg.baseUrl,
		transport,
		credentials: cfg.credentials,
		tokenStore: cfg.tokenStoreFile ? new FileTokenStore(cfg.tokenStoreFile) : undefined,
		timeoutMs: cfg.timeoutMs,
		retries: cfg.retries,
		authFailureCodes: cfg.authFailureCodes,
		rateLimitCodes: cfg.rateLimitCodes,
		maxResponseBytes: cfg.maxResponseBytes,
		// node timers keep the process alive while a retry waits (AbortSignal.timeout does not)
		sleep: (ms) => delay(ms),
		onEvent: cfg.onEvent,
		blastRadius: { ownAddresses: 'lookup', ...cfg.blastRadius },
		rateBudget: cfg.rateBudget,
		priorityOf: cfg.priorityOf,
		onRetryHint: cfg.onRetryHint,
	});
	return Object.assign(client, { close: () => transport.close() });
}
