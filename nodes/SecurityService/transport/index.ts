import type { IExecuteFunctions, ILoadOptionsFunctions, IPollFunctions } from 'n8n-workflow';
import { createClient, DEFAULT_AUTH_FAILURE_CODES, DEFAULT_RATE_LIMIT_CODES, type Client } from '../../../api/client';
import type { OwnAddress } from '../../../api/ownAddresses';
import { parseProtectedRanges } from '../../../api/blastRadius';
import { ValidationError } from '../../../api/errors';
import { sleep } from '../../../api/time';
import { tokenRefusal, type TokenRefusal } from '../../../api/tokenRefusal';
import type { HttpRequest, HttpResponse, Transport } from '../../../api/transport/types';
import { clusterTokenSender } from './clusterSend';
import { bounded, userTokenSender } from './renewing';
import { CREDENTIAL_TYPE, envelopeOf, parseCodes, sendBounded, stripAccessToken } from './request';

export { CREDENTIAL_TYPE, CLIENT_AUTH_STANDIN } from './request';

export type SecurityServiceContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

/** Renew this long before the stored expiry (the service's tokens live 7200 s). */
const EXPIRY_SKEW_MS = 60_000;
/** Codes known to mean "rate limited", never a token refusal. */
const RATE_CODES: ReadonlySet<number> = new Set(DEFAULT_RATE_LIMIT_CODES);

export interface TransportStats {
	/** Tokens forced because the stored expiry passed. */
	expiredRenewals: number;
	/** Tokens forced because the service refused the token, by reason (api/tokenRefusal.ts). */
	refusedRenewals: Record<TokenRefusal, number>;
}

/**
 * The api/ Transport over n8n's request helpers.
 *
 * Requests that carry an access token go through `httpRequestWithAuthentication`, so n8n runs the credential's
 * `preAuthentication` (and saves what it returns, a rotated refresh token included) whenever the stored access
 * token is empty, and the credential's `authenticate` adds access_token to the query string.
 *
 * n8n itself only refreshes after an HTTP 401 and never resends multipart bodies, while this API answers HTTP 200
 * with a non-zero code. So this transport renews the token itself: before sending when the stored expiry has
 * passed, and once after an answer api/tokenRefusal.ts reads as a refused token (the same rule as the worker's
 * client: HTTP 401, an auth-failure code, or a token message): it hands n8n a copy of the credential with an empty access
 * token (n8n then runs preAuthentication and persists the new token), rebuilds the body and sends once more.
 * Every answer is bounded in size and total time (bounded.ts), and everything one request of the client needs (a
 * token request, the answer, a resend after a refused token) within that request's `timeoutMs`: the client cuts it to
 * what is left of the call's bound (`callTimeoutMs`), so the bound is what the user waits.
 */
export function createN8nTransport(
	ctx: SecurityServiceContext,
	stats?: TransportStats,
): Transport & { declaredRanges: () => Promise<OwnAddress[]> } {
	let authCodes: number[] | undefined;
	const { holder, sendAuthenticated, sendRenewing } = userTokenSender(ctx);
	const credential = holder.get;

	// Every execution starts from the token stored in the credential, so "any code on a stored token's first use"
	// (the worker's refused_unverified) would renew on every execution that fails validation: n8n uses codes and
	// messages only.
	function refusal(req: HttpRequest, res: HttpResponse): TokenRefusal | undefined {
		const env = res.status === 401 ? undefined : envelopeOf(res.body);
		return tokenRefusal({
			status: res.status,
			code: env?.code,
			msg: env?.msg,
			authFailureCodes: new Set(authCodes),
			otherCodes: RATE_CODES,
			safety: req.safety ?? 'unsafe',
			unverified: false,
		});
	}

	const { sendCluster, declaredRanges } = clusterTokenSender(ctx, holder, refusal, stats);

	const transport = async (request: HttpRequest): Promise<HttpResponse> => {
		const req = bounded(request);
		const { url, hadToken } = stripAccessToken(req.url);
		if (!hadToken) {
			// Token operations (§4.1) authenticate with app_id/secret in the body.
			return await sendBounded((o) => ctx.helpers.httpRequest(o), req, url);
		}
		const cred = await credential();
		authCodes ??= parseCodes(cred.authFailureCodes, DEFAULT_AUTH_FAILURE_CODES);
		if (cred.source === 'cluster') return await sendCluster(req, url, cred);
		const used = String(cred.accessToken ?? '');
		const expiresAt = Number(cred.expiresAt ?? 0);
		const expired = Boolean(used) && expiresAt > 0 && Date.now() >= expiresAt - EXPIRY_SKEW_MS;
		if (expired && stats) stats.expiredRenewals++;
		const first = !used || expired ? await sendRenewing(req, url, used) : await sendAuthenticated(req, url, false);
		// The token this answer was sent with: a renewal above replaced `used`.
		const sentWith = !used || expired ? String((await credential()).accessToken ?? '') : used;
		const why = refusal(req, first);
		if (!why) return first;
		// Refused token: one fresh token (unless another item already renewed it) and one resend.
		if (stats) stats.refusedRenewals[why]++;
		const tokenNow = String((await credential()).accessToken ?? '');
		return await sendRenewing(req, url, tokenNow === sentWith ? sentWith : '\u0000');
	};
	return Object.assign(transport, { declaredRanges });
}

export interface ClientSettings {
	retries?: number;
	timeoutMs?: number;
}

/**
 * The shared api/ client bound to this n8n context. Validation, encoding, envelope and errors come from api/.
 * Blocks pass the blast-radius guard with the credential's Protected Ranges, the site's own addresses, read from
 * the service once per site and execution (api/ownAddresses.ts), and with a cluster token the ranges the operator
 * declared at tenant install (they come with the token grant).
 */
export async function getClient(ctx: SecurityServiceContext, settings: ClientSettings = {}): Promise<Client> {
	const cred = await ctx.getCredentials(CREDENTIAL_TYPE);
	const baseUrl = String(cred.baseUrl ?? '').trim();
	const guarded = parseProtectedRanges(cred.protectedRanges ?? '', 'credential Protected Ranges');
	if (guarded.invalid.length)
		throw new ValidationError('credential', [
			{
				field: 'Protected Ranges (credential)',
				rule: `${guarded.invalid
					.slice(0, 3)
					.map((x) => JSON.stringify(x.slice(0, 40)))
					.join(', ')} must be IPv4 addresses, start-end ranges or CIDRs; nothing was sent`,
			},
		]);
	const transport = createN8nTransport(ctx);
	return createClient({
		baseUrl,
		transport,
		// The node's bound is what the user waits for one call: every attempt and token request within it.
		timeoutMs: settings.timeoutMs ?? 30_000,
		callTimeoutMs: settings.timeoutMs ?? 30_000,
		retries: settings.retries ?? 2,
		sleep: (ms) => sleep(ms),
		blastRadius: {
			protectedRanges: guarded.ranges,
			ownAddresses: 'lookup',
			...(cred.source === 'cluster' ? { declaredRanges: transport.declaredRanges } : {}),
		},
	});
}
