// The tenant workflow's renewal activity (docs/worker/tenants.md): one POST to the token endpoint with the worker's
// app credential. A user token's refresh rotates the refresh token (the simulator: the old one dies at once, spec
// silent), so a refresh whose answer is lost strands the tenant until it is installed again (by a person, or here
// from the install's kept connect parameters: SECSVC_TENANT_REINSTALL). The activity therefore
// never lets a retry run beside a live attempt: it is kept alive by heartbeats (a dead worker's attempt is retried
// after the heartbeat timeout) instead of a start-to-close bound that expired while its POST was in flight.
import { Context } from '@temporalio/activity';
import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '../../api/client.ts';
import { redactText } from '../../api/redact.ts';
import {
	RENEW_ACTIVITY,
	sealed,
	type ConnectParams,
	type ReinstallPolicy,
	type RenewInput,
	type RenewResult,
} from './shared.mts';
import { connectForCode, exchangeCode, TenantInputError } from './client.mts';
import { toFailure } from '../../worker/src/activities/operations.mts';
import { writeAttempt, type WriteAttempt } from '../../worker/src/activities/writeRecord.mts';

export const RENEW_METRIC = {
	lockouts: 'secsvc_tenant_lockouts',
	renewals: 'secsvc_tenant_renewals',
	reinstalls: 'secsvc_tenant_auto_reinstalls',
} as const;

/** SECSVC_TENANT_REINSTALL's default (docs/worker/tenants.md "Durable before use; the one window"). */
export const DEFAULT_REINSTALL_POLICY: ReinstallPolicy = 'lost-answer';

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

type RenewConfig = {
	appId: string;
	secret: string;
	refreshRejectedCodes?: readonly number[];
	reinstall?: ReinstallPolicy;
};

/** The refusal as the workflow takes it: the tenant needs re-install, loudly. */
function lockedOut(i: RenewInput, why: string, code?: number) {
	console.error(
		`secsvc worker: tenant ${i.customerId} needs re-install: the service refused its refresh token (${why})`,
	);
	return ApplicationFailure.nonRetryable(why, 'RefreshRejected', { customerId: i.customerId, code });
}

/**
 * The install flow again (§5.3: connect with the kept redirect_uri and xspe and a fresh state, the code exchanged) for
 * a tenant whose refresh token the service refused: the customer approved the app when it was installed under their
 * name and §5.3 shows no screen, so no person is needed. Recorded first (a retry after a kill goes on with it), kept
 * alive like the refresh; the result is a renewal's. The service refusing the flow leaves the tenant needs-reinstall.
 */
async function reinstall(app: Client, cfg: RenewConfig, i: RenewInput, why: string, a: WriteAttempt) {
	const d = { sending: 'reinstall', why };
	await a.record(d);
	const connect = i.connect as ConnectParams;
	try {
		const t = await alive(
			() => a.record(d),
			async () => {
				const code = await connectForCode(
					app,
					{ appId: cfg.appId, redirectUri: connect.redirectUri },
					{
						customerId: i.customerId,
						xspe: connect.xspe,
					},
				);
				return exchangeCode(app, cfg, code);
			},
		);
		count(RENEW_METRIC.reinstalls, {});
		console.error(
			`secsvc worker: tenant ${i.customerId} was locked out (${why}); re-installed automatically from its install parameters (SECSVC_TENANT_REINSTALL=${cfg.reinstall ?? DEFAULT_REINSTALL_POLICY})`,
		);
		const { accessToken, refreshToken, expiresIn, issuedAt } = t;
		return sealed({ accessToken, refreshToken, expiresIn, sentAt: issuedAt, answeredAt: Date.now(), reinstalled: why });
	} catch (e) {
		const refusal = e instanceof TenantInputError ? e.message.replace(/^(\w+): \1: /, '$1: ') : undefined;
		if (refusal) throw lockedOut(i, `${why}; the automatic re-install was refused: ${refusal}`);
		throw e; // no answer (transport): retried, and the retry goes on with the re-install
	}
}

export function createTenantActivities(app: Client, cfg: RenewConfig, temporal?: () => TemporalClient) {
	const rejected = new Set(cfg.refreshRejectedCodes ?? DEFAULT_REFRESH_REJECTED_CODES);
	const policy = cfg.reinstall ?? DEFAULT_REINSTALL_POLICY;
	/** Whether this refusal is re-installed here: `lost` = an earlier attempt's answer to this refresh was lost. */
	const reinstalls = (i: RenewInput, lost: boolean) =>
		i.connect !== undefined && (policy === 'always' || (policy === 'lost-answer' && lost));
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
			// an earlier attempt was refused and began the re-install (its worker stopped): the token is long gone
			if (i.kind === 'user' && a.earlier?.sending === 'reinstall')
				return reinstall(app, cfg, i, String(a.earlier.why), a);
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
					if (reinstalls(i, lost)) return reinstall(app, cfg, i, why, a);
					throw lockedOut(i, why, err.code);
				}
				const f = toFailure(opId, e) as ApplicationFailure;
				// a refresh with no answer (timeout): the same activity tries again, so a refusal then is known as our
				// own lost answer (`lost`); a new renewal would not know it (its own first attempt: no earlier record)
				if (i.kind === 'user' && f.type === 'OutcomeUnknown')
					throw ApplicationFailure.retryable(f.message, 'RefreshOutcomeUnknown', { customerId: i.customerId });
				throw f;
			}
		},
	};
}
