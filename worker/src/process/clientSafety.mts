// What every API client of a worker shares, the app's own and each tenant's (tenant mode): the blast-radius guard of
// `guard.*`, the bound on an answer's size, the audit line of a block sent under the widest-prefix override, and the
// API metrics when /metrics is served. One place, so that no client of the worker is built without them.
import type { ClientOptions } from '../../../api/client.ts';
import { redactText } from '../../../api/redact.ts';
import type { WorkerConfig } from './config.mts';
import { apiMetricsListener } from './metrics.mts';

export function clientSafety(cfg: WorkerConfig): Pick<ClientOptions, 'blastRadius' | 'maxResponseBytes' | 'onEvent'> {
	return {
		maxResponseBytes: cfg.api.maxResponseBytes,
		blastRadius: cfg.guard
			? {
					widestPrefix: cfg.guard.widestPrefix,
					protectedRanges: cfg.guard.protectedRanges,
					ownAddresses: cfg.guard.ownAddressLookup ? 'lookup' : 'off',
				}
			: undefined,
		// API requests, latency, token renewals, retries, rate-limit waits (metrics.mts), only when served; a block sent
		// under the widest-prefix override is always logged (the audit line; the reason is no secret)
		onEvent: auditOverrides(cfg.metrics?.address ? apiMetricsListener() : undefined),
	};
}

/** Logs every entry (block or allow) sent under the widest-prefix override (who, why, what), then hands the event on. */
export function auditOverrides(next?: ClientOptions['onEvent']): NonNullable<ClientOptions['onEvent']> {
	return (e) => {
		if (e.type === 'override')
			console.warn(
				`[secsvc audit] ${e.opId}: entry wider than the widest prefix sent under allowWideBlock — ${e.entries.join(', ')}; reason: ${redactText(e.reason)}${e.by ? `; by ${redactText(e.by)}` : ''}`,
			);
		next?.(e);
	};
}
