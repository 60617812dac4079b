import type { ICredentialDataDecryptedObject, INodeCredentialTestResult } from 'n8n-workflow';
import { createClient } from '../../../api/client';
import { credentialTestText as T } from '../../../api/catalog/labels';
import { ApiError, TransportError, ValidationError } from '../../../api/errors';
import type { TokenResult } from '../../../api/tokens';
import type { Transport } from '../../../api/transport/types';

/**
 * What the credential's Test button checks, with the values the user entered (never the cached access token):
 *
 * - App token: a NEW token is requested with the entered App ID and Secret (POST /oauth/credit/token); a refusal
 *   fails with the service's own message. The new token then reads the customer list (GET /api/spe/customers).
 * - User token: the refresh token is never used (the service replaces it on every renewal, so a test would burn
 *   the stored one). A stored access token that has not expired reads the customer list; otherwise only the
 *   service's address is checked. The message says which of the two happened.
 *
 * The token obtained here is thrown away: the credential's stored token is neither read for app tokens nor
 * overwritten.
 */
export async function checkCredential(
	data: ICredentialDataDecryptedObject,
	transport: Transport,
	now: () => number = Date.now,
): Promise<INodeCredentialTestResult> {
	const baseUrl = String(data.baseUrl ?? '')
		.trim()
		.replace(/\/+$/, '');
	if (!/^https?:\/\/[^\s/]+/i.test(baseUrl)) return { status: 'Error', message: T.badBaseUrl };
	const appId = String(data.appId ?? '').trim();
	const client = createClient({ baseUrl, transport, retries: 0, timeoutMs: 15_000 });
	try {
		// Token Source "cluster": the token is the tenant workflow's, reached through the node's Temporal credential,
		// which a credential test cannot see: only the service's address is checked.
		if (data.source === 'cluster')
			return await checkUserToken(client, baseUrl, { baseUrl }, transport, now, T.clusterTokenUnchecked);
		if (data.grantType === 'user') return await checkUserToken(client, baseUrl, data, transport, now);
		let token: TokenResult;
		try {
			token = await client.call('authorization.appToken', { app_id: appId, secret: String(data.secret ?? '') });
		} catch (e) {
			if (e instanceof ApiError) return { status: 'Error', message: T.appTokenRefused(appId, e.msg, e.code) };
			return { status: 'Error', message: failureText(baseUrl, e) };
		}
		try {
			const page = await client.call('customer.list', {}, { accessToken: token.access_token });
			return { status: 'OK', message: T.appTokenOk(appId, page.customer.length) };
		} catch (e) {
			if (e instanceof ApiError) return { status: 'Error', message: T.newTokenRefused(e.msg, e.code) };
			return { status: 'Error', message: failureText(baseUrl, e) };
		}
	} catch (e) {
		return { status: 'Error', message: failureText(baseUrl, e) };
	}
}

async function checkUserToken(
	client: ReturnType<typeof createClient>,
	baseUrl: string,
	data: ICredentialDataDecryptedObject,
	transport: Transport,
	now: () => number,
	unchecked: string = T.userTokenUnchecked,
): Promise<INodeCredentialTestResult> {
	const stored = String(data.accessToken ?? '');
	const expiresAt = Number(data.expiresAt ?? 0);
	if (stored && expiresAt > now() + 5_000) {
		try {
			await client.call('customer.list', {}, { accessToken: stored });
			return { status: 'OK', message: T.userTokenOk };
		} catch (e) {
			if (e instanceof ApiError) return { status: 'OK', message: T.userTokenRejected(e.msg, e.code) };
			return { status: 'Error', message: failureText(baseUrl, e) };
		}
	}
	// No usable stored token: check that the address answers like the service (an envelope), nothing more.
	const res = await transport({ method: 'GET', url: `${baseUrl}/api/spe/customers`, headers: {}, timeoutMs: 15_000 });
	let envelope = false;
	try {
		envelope = typeof (JSON.parse(res.body) as { code?: unknown }).code === 'number';
	} catch {
		envelope = false;
	}
	if (!envelope) return { status: 'Error', message: T.notTheService(baseUrl, res.status) };
	return { status: 'OK', message: unchecked };
}

function failureText(baseUrl: string, e: unknown): string {
	if (e instanceof ValidationError) return T.invalid(e.issues.map((i) => `${i.field}: ${i.rule}`).join('; '));
	if (e instanceof TransportError) return T.unreachable(baseUrl, e.message.replace(/^[\w.]+: /, ''));
	return T.unreachable(baseUrl, e instanceof Error ? e.message : String(e));
}
