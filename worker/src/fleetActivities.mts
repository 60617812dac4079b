import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '../../api/client.ts';
import { redactText } from '../../api/redact.ts';
import { FLEET_CHECK_ACTIVITY, type CheckBatchInput, type CheckBatchResult } from '../../workflows/fleetShared.mts';

/**
 * The fleet watchers' batch activity (workflows/fleetWatch.mts): `dashboard.isUnderAttack` for each site of a batch,
 * at most `concurrency` calls in flight, one call per site. A rate-limited answer (HTTP 429 or a rate-limit code,
 * after the client's own retry) stops the batch: that site and every site not yet sent come back as `deferred`, and
 * the watcher checks them first in its next tick. Other failures are reported per site; the activity itself fails
 * only on bad input.
 */
export function createFleetActivities(client: Client, opts: { rateLimitCodes?: readonly number[] } = {}) {
	const rateCodes = new Set(opts.rateLimitCodes ?? [42901]);
	const isRateLimited = (e: unknown) => {
		const x = e as { name?: string; code?: number; rateLimited?: boolean };
		return (x?.name === 'ApiError' && typeof x.code === 'number' && rateCodes.has(x.code)) || (x?.name === 'TransportError' && x.rateLimited === true);
	};
	return {
		async [FLEET_CHECK_ACTIVITY](input: CheckBatchInput): Promise<CheckBatchResult> {
			const ids = input?.site_ids;
			if (!Array.isArray(ids) || ids.some((s) => typeof s !== 'string' || s === ''))
				throw ApplicationFailure.nonRetryable(`${FLEET_CHECK_ACTIVITY}: site_ids: must be a list of site ids`, 'ValidationError');
			const concurrency = Math.max(1, Math.min(64, Math.floor(Number(input.concurrency) || 1)));
			const attacked: string[] = [];
			const deferred: string[] = [];
			const failed: [string, string][] = [];
			let limited = false;
			let next = 0;
			const lane = async () => {
				while (!limited && next < ids.length) {
					const site_id = ids[next++];
					try {
						const r = (await client.call('dashboard.isUnderAttack', { site_id })) as { status?: unknown };
						if (Number(r?.status) === 1) attacked.push(site_id);
					} catch (e) {
						if (isRateLimited(e)) {
							limited = true;
							deferred.push(site_id);
						} else failed.push([site_id, redactText((e as Error)?.message ?? String(e)).slice(0, 300)]);
					}
				}
			};
			await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, lane));
			deferred.push(...ids.slice(next));
			return { attacked, deferred, failed, rateLimited: limited };
		},
	};
}
