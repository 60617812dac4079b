import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import { SecurityServiceError } from '../../../api/errors';
import type { HttpRequest, HttpResponse } from '../../../api/transport/types';
import { CALL_DEADLINE, CREDENTIAL_TYPE, sendBounded } from './request';
import type { SecurityServiceContext } from './index';

/**
 * The credential of one node execution and the requests that carry its token: read and decrypted once (n8n's
 * getCredentials is a database read plus a decryption), renewed through n8n's preAuthentication when the token is
 * missing, expired or refused, one renewal at a time (transport/index.ts says when).
 */
export interface CredentialHolder {
	get(): Promise<ICredentialDataDecryptedObject>;
}

/** A request of the client with its deadline: every exchange made for it gets what is `left()` of `timeoutMs`. */
export interface Bounded extends HttpRequest {
	deadline: number;
	left(): HttpRequest;
}

export function bounded(req: HttpRequest): Bounded {
	const deadline = Date.now() + req.timeoutMs;
	return { ...req, deadline, left: () => ({ ...req, timeoutMs: Math.max(1, deadline - Date.now()) }) };
}

export function userTokenSender(ctx: SecurityServiceContext) {
	// The same object is handed to every httpRequestWithAuthentication call; when n8n runs preAuthentication it
	// assigns the new token (and a rotated refresh token) into this object and saves them, so later calls of this
	// execution use the new token.
	let cached: ICredentialDataDecryptedObject | undefined;
	const holder: CredentialHolder = {
		get: async () => (cached ??= { ...(await ctx.getCredentials(CREDENTIAL_TYPE)) }),
	};
	const credential = holder.get;

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

	return { holder, sendAuthenticated, sendRenewing };
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
