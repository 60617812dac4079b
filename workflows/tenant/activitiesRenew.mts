// The tenant workflow's renewal activity (docs/worker/tenants.md): one POST to the token endpoint with the worker's
// app credential. A user token's refresh rotates the refresh token (the simulator: the old one dies at once, spec
// silent), so a refresh whose answer is lost strands the tenant until it is installed again. The activity therefore
// never lets a retry run beside a live attempt: it is kept alive by heartbeats (a dead worker's attempt is retried
// after the heartbeat timeout) instead of a start-to-close bound that expired while its POST was in flight.
import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '../../api/client.ts';
import { redactText } from '../../api/redact.ts';
import { RENEW_ACTIVITY, sealed, type RenewInput, type RenewResult } from './shared.mts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { writeAttempt } from '../../worker/src/activities/writeRecord.mts';

export const RENEW_METRIC = { lockouts: 'secsvc_tenant_lockouts', renewals: 'secsvc_tenant_renewals' } as const;

/** Refresh codes that mean "this refresh token is gone" (spec silent; the simulator's 40103): the tenant needs a re-install. */
export const DEFAULT_REFRESH_REJECTED_CODES: readonly number[] = [40103];

/** A live attempt's beat (its record stored again): a tenth of RENEW_HEARTBEAT_TIMEOUT (shared.mts). */
const RENEW_BEAT_MS = 3_000;

const count = (name: string, tags: Record<string, string>) => {
	try {
		Context.current().metricMeter.createCounter(name, '1').add(1, tags);
	} catch {
		/* outside an activity (unit tests) */
	}
};

/** Runs `fn` while `beat` stores the attempt's record again every RENEW_BEAT_MS (its liveness). */
async function alive<T>(beat: () => Promise<void>, fn: () => Promise<T>): Promise<T> {
	const t = setInterval(() => beat().catch(() => undefined), RENEW_BEAT_MS);
	try {
		return await fn();
	} finally {
		clearInterval(t);
	}
}

export function createTenantActivities(
	app: Client,
	cfg: { appId: string; secret: string; refreshRejectedCodes?: readonly number[] },
	temporal?: () => TemporalClient,
) {
	const rejected = new Set(cfg.refreshRejectedCodes ?? DEFAULT_REFRESH_REJECTED_CODES);
	const send = (i: RenewInput) =>
		(i.kind === 'app'
			? app.call('authorization.appToken', { app_id: cfg.appId, secret: cfg.secret })
			: app.call('authorization.refreshToken', {
					app_id: cfg.appId,
					refresh_token: i.refreshToken as string,
				})) as Promise<{ access_token: string; expires_in: number; refresh_token?: string }>;
	return {
		[RENEW_ACTIVITY]: async (i: RenewInput): Promise<RenewResult> => {
			const opId = i.kind === 'app' ? 'authorization.appToken' : 'authorization.refreshToken';
			const a = writeAttempt(temporal);
			// an earlier attempt sent this refresh token and its answer never reached the workflow (its worker stopped)
			const lost = i.kind === 'user' && a.earlier?.sending === 'refresh';
			// stored before the token leaves; throws (nothing sent) when this attempt is no longer the activity's
			const d = i.kind === 'user' ? { sending: 'refresh' } : {};
			if (i.kind === 'user') await a.record(d);
			const sentAt = Date.now();
			try {
				const r = await alive(
					() => a.record(d),
					() => send(i),
				);
				const answeredAt = Date.now();
				count(RENEW_METRIC.renewals, { kind: i.kind });
				return sealed({
					accessToken: r.access_token,
					expiresIn: r.expires_in,
					...(r.refresh_token ? { refreshToken: r.refresh_token } : {}),
					sentAt,
					answeredAt,
				});
			} catch (e) {
				const err = e as Error & { code?: number };
				if (i.kind === 'user' && err.name === 'ApiError' && typeof err.code === 'number' && rejected.has(err.code)) {
					count(RENEW_METRIC.lockouts, {});
					const why = `${redactText(err.message)}${lost ? '; an earlier attempt sent this refresh token and its answer was lost (its worker stopped)' : ''}`;
					console.error(
						`secsvc worker: tenant ${i.customerId} needs re-install: the service refused its refresh token (${why})`,
					);
					throw ApplicationFailure.nonRetryable(why, 'RefreshRejected', { customerId: i.customerId, code: err.code });
				}
				throw toFailure(opId, e);
			}
		},
	};
}
