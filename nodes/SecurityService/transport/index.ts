import type {
	ICredentialDataDecryptedObject,
	IExecuteFunctions,
	ILoadOptionsFunctions,
	IPollFunctions,
} from 'n8n-workflow';
import { createClient, DEFAULT_AUTH_FAILURE_CODES, DEFAULT_RATE_LIMIT_CODES, type Client } from '../../../api/client';
import type { OwnAddress } from '../../../api/ownAddresses';
import { parseProtectedRanges } from '../../../api/blastRadius';
import { SecurityServiceError, ValidationError } from '../../../api/errors';
import { sleep } from '../../../api/time';
import { tokenRefusal, type TokenRefusal } from '../../../api/tokenRefusal';
import type { HttpRequest, HttpResponse, Transport } from '../../../api/transport/types';
import { askClusterToken, type ClusterGrant } from './clusterToken';
import { CALL_DEADLINE, CREDENTIAL_TYPE, envelopeOf, parseCodes, sendBounded, stripAccessToken } from './request';

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

	// The credential is read and decrypted once per node execution, not once (or twice) per item: n8n's
	// getCredentials is a database read plus a decryption. The same object is handed to every
	// httpRequestWithAuthentication call; when n8n runs preAuthentication it assigns the new token (and a rotated
	// refresh token) into this object and saves them, so later calls of this execution use the new token.
	let cached: ICredentialDataDecryptedObject | undefined;

	async function credential(): Promise<ICredentialDataDecryptedObject> {
		cached ??= { ...(await ctx.getCredentials(CREDENTIAL_TYPE)) };
		return cached;
	}

	async function sendAuthenticated(req: Bounded, url: string, force: boolean): Promise<HttpResponse> {
		if (!force) {
			// Fast path: the token this execution already holds goes straight into the query string. n8n's
			// authenticate step (an expression evaluated per request) is only needed when a token must be obtained.
			const token = String((await credential()).accessToken ?? '');
			if (token)
				return await sendBounded(
					(o) => ctx.helpers.httpRequest({ ...o, qs: { access_token: token } }),
					req.left(),
					url,
				);
		}
		const data = force ? await freshCredentialWithoutToken() : await credential();
		try {
			// n8n may run preAuthentication (the token request) inside this exchange: it is told the deadline and ends
			// before it, so a failing token endpoint surfaces as the token's error (never repeated), not as our timeout.
			data[CALL_DEADLINE] = req.deadline;
			return await sendBounded(
				(o) =>
					ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_TYPE, o, {
						credentialsDecrypted: { id: '', name: '', type: CREDENTIAL_TYPE, data },
					}),
				req.left(),
				url,
			);
		} catch (error) {
			// A refused token call (preAuthentication) reaches us wrapped by n8n: hand the client the service's own
			// answer (an ApiError of the token operation), which it reports as is and never retries.
			throw tokenFailureIn(error) ?? error;
		} finally {
			delete data[CALL_DEADLINE];
			// A renewal filled `data` with the new token: use it from now on, also when the answer then failed (the
			// token was never refused; the client's next attempt must not ask for another).
			if (force && data.accessToken) cached = data;
		}
	}

	async function freshCredentialWithoutToken(): Promise<ICredentialDataDecryptedObject> {
		// Read the credential again: an earlier renewal in this execution may have rotated the refresh token.
		const data = { ...(await ctx.getCredentials(CREDENTIAL_TYPE)) };
		data.accessToken = '';
		return data;
	}

	// Renewals are single-flight: items of one execution may run concurrently, and n8n runs preAuthentication for
	// every request it sees without a token. A rotated refresh token must be used exactly once, so renewals queue
	// here, and a request whose stale token was already replaced by another renewal is simply sent with the new one.
	// A renewal that failed (token endpoint down, refused) is not repeated by the requests queued behind it with the
	// same stale token: they fail with the same error (bounded token requests per execution, not per item).
	let renewals: Promise<unknown> = Promise.resolve();
	let failedRenewal: { stale: string; error: unknown } | undefined;
	function sendRenewing(req: Bounded, url: string, staleToken: string): Promise<HttpResponse> {
		const run = renewals.then(async () => {
			const current = await credential();
			const renewedMeanwhile = Boolean(current.accessToken) && current.accessToken !== staleToken;
			if (!renewedMeanwhile && failedRenewal?.stale === staleToken) throw failedRenewal.error;
			const sent = sendAuthenticated(req, url, !renewedMeanwhile);
			sent.catch((error: unknown) => {
				if (!renewedMeanwhile && error instanceof SecurityServiceError && error.opId.startsWith('authorization.'))
					failedRenewal = { stale: staleToken, error };
			});
			return await sent;
		});
		renewals = run.catch(() => undefined);
		return run;
	}

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

	// Token Source "From the cluster's token owner": the tenant workflow's token (clusterToken.ts), held in this
	// execution's memory only, asked again once its renewAt passed or the service refused it; asks are single-flight
	// (items may run concurrently) and never renew anything here.
	let grant: ClusterGrant | undefined;
	let asking: Promise<ClusterGrant> | undefined;
	function clusterGrant(
		cred: ICredentialDataDecryptedObject,
		deadline: number,
		rejected?: number,
	): Promise<ClusterGrant> {
		const held = grant;
		if (held && (rejected === undefined ? Date.now() < held.renewAt : held.generation > rejected))
			return Promise.resolve(held);
		asking ??= askClusterToken(ctx, cred, deadline, rejected)
			.then((g) => (grant = g))
			.finally(() => (asking = undefined));
		return asking;
	}
	const sendWith = (req: Bounded, url: string, token: string) =>
		sendBounded((o) => ctx.helpers.httpRequest({ ...o, qs: { access_token: token } }), req.left(), url);
	async function sendCluster(req: Bounded, url: string, cred: ICredentialDataDecryptedObject): Promise<HttpResponse> {
		if (stats && grant && Date.now() >= grant.renewAt) stats.expiredRenewals++;
		const g = await clusterGrant(cred, req.deadline);
		const first = await sendWith(req, url, g.accessToken);
		const why = refusal(req, first);
		if (!why) return first;
		// Refused token: the workflow renews unless it already holds a newer generation; one resend.
		if (stats) stats.refusedRenewals[why]++;
		return await sendWith(req, url, (await clusterGrant(cred, req.deadline, g.generation)).accessToken);
	}

	// With a cluster token: the customer's own networks declared at tenant install come with its token grant (asked
	// within the node's default bound when no grant is held yet).
	const declaredRanges = async (): Promise<OwnAddress[]> => {
		const cred = await credential();
		if (cred.source !== 'cluster') return [];
		const source = `tenant ${String(cred.customerId)} --protected`;
		return (await clusterGrant(cred, Date.now() + 30_000)).protectedRanges.map((range) => ({ range, source }));
	};

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

/** A request of the client with its deadline: every exchange made for it gets what is `left()` of `timeoutMs`. */
interface Bounded extends HttpRequest {
	deadline: number;
	left(): HttpRequest;
}

function bounded(req: HttpRequest): Bounded {
	const deadline = Date.now() + req.timeoutMs;
	return { ...req, deadline, left: () => ({ ...req, timeoutMs: Math.max(1, deadline - Date.now()) }) };
}

/** The client's error of a failed token call inside an n8n error (n8n wraps what preAuthentication throws). */
function tokenFailureIn(error: unknown): SecurityServiceError | undefined {
	let e: unknown = error;
	for (let depth = 0; depth < 6 && e !== null && typeof e === 'object'; depth++) {
		if (e instanceof SecurityServiceError) return e;
		e = (e as { cause?: unknown }).cause;
	}
	return undefined;
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
