import type { IDataObject, IHttpRequestMethods, IHttpRequestOptions } from 'n8n-workflow';
import { MAX_RESPONSE_BYTES } from '../../../api/limits';
import { multipartBody } from '../../../api/transport/multipart';
import type { HttpRequest, HttpResponse } from '../../../api/transport/types';
import { boundedExchange } from './bounded';

/** Total time of one token request made by the credential's preAuthentication (2 attempts at most). */
export const PRE_AUTH_TIMEOUT_MS = 15_000;

/**
 * The credential field by which the transport tells preAuthentication when the call it gets a token for must end (ms
 * since epoch): set on the transport's own copy of the credential for one exchange, never stored (n8n saves only what
 * preAuthentication returns).
 */
export const CALL_DEADLINE = 'callDeadline';

/** preAuthentication's limits: its own, or what is left of the call's deadline (`CALL_DEADLINE`) if less. */
export function preAuthLimits(deadline: unknown): { timeoutMs: number; callTimeoutMs: number } {
	// Ends a little before the exchange's deadline, so that the token step's own error is the one reported.
	const left = typeof deadline === 'number' ? Math.max(1, deadline - Date.now() - 250) : Infinity;
	const callTimeoutMs = Math.min(left, 2 * PRE_AUTH_TIMEOUT_MS + 1_000);
	return { timeoutMs: Math.min(PRE_AUTH_TIMEOUT_MS, callTimeoutMs), callTimeoutMs };
}

/** Name of the credential type every node of this package uses. */
export const CREDENTIAL_TYPE = 'securityServiceApi';

/**
 * The client needs *some* access token to build a request; in n8n the real one is added by the credential's
 * `authenticate` (query parameter access_token), so the client is given this placeholder and the transport
 * strips it again before sending.
 */
export const CLIENT_AUTH_STANDIN = ['n8n', 'managed'].join('-');

function formUrlEncoded(parts: Array<[string, string]>): string {
	return parts.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}

/** Removes the access_token query parameter (the placeholder); returns the URL without it and whether it was there. */
export function stripAccessToken(url: string): { url: string; hadToken: boolean } {
	const q = url.indexOf('?');
	if (q < 0) return { url, hadToken: false };
	const kept: string[] = [];
	let hadToken = false;
	for (const pair of url.slice(q + 1).split('&')) {
		if (pair === '') continue;
		if (pair.split('=')[0] === 'access_token') hadToken = true;
		else kept.push(pair);
	}
	return { url: url.slice(0, q) + (kept.length ? `?${kept.join('&')}` : ''), hadToken };
}

/**
 * Converts the client's transport-neutral request into n8n request options. A fresh body is built on every
 * call, so a retried multipart request is never a consumed stream.
 */
export function toN8nRequest(req: HttpRequest, url = req.url): IHttpRequestOptions {
	const headers: IDataObject = { ...req.headers };
	let body: string | undefined;
	if (req.body?.kind === 'multipart') {
		const m = multipartBody(req.body.parts);
		body = m.body;
		headers['content-type'] = m.contentType;
	} else if (req.body?.kind === 'form') {
		body = formUrlEncoded(req.body.parts);
		headers['content-type'] = 'application/x-www-form-urlencoded';
	} else if (req.body?.kind === 'json') {
		body = JSON.stringify(req.body.value);
		headers['content-type'] = 'application/json';
	}
	return {
		method: req.method as IHttpRequestMethods,
		url,
		headers,
		body,
		timeout: req.timeoutMs,
		json: false,
		encoding: 'text',
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: true,
	};
}

/** Sends the client's request with an n8n request helper, the answer bounded in size and total time (bounded.ts). */
export async function sendBounded(
	send: (o: IHttpRequestOptions) => Promise<unknown>,
	req: HttpRequest,
	url = req.url,
): Promise<HttpResponse> {
	const options = toN8nRequest(req, url);
	return fromN8nResponse(
		await boundedExchange(send, options, {
			timeoutMs: req.timeoutMs,
			maxBytes: req.maxResponseBytes ?? MAX_RESPONSE_BYTES,
		}),
	);
}

interface FullResponse {
	body: unknown;
	headers: Record<string, unknown>;
	statusCode: number;
}

export function fromN8nResponse(raw: unknown): HttpResponse {
	const r = raw as FullResponse;
	const headers: Record<string, string> = {};
	for (const [k, v] of Object.entries(r.headers ?? {})) {
		if (v !== undefined && v !== null) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
	}
	let body = '';
	if (typeof r.body === 'string') body = r.body;
	else if (r.body !== undefined && r.body !== null) {
		const b = r.body as { toString(enc?: string): string };
		body =
			typeof r.body === 'object' && 'byteLength' in (r.body as object) ? b.toString('utf8') : JSON.stringify(r.body);
	}
	return { status: r.statusCode, headers, body };
}

/** The envelope's code and msg of a response body, if it is an envelope. */
export function envelopeOf(body: string): { code: number; msg: string } | undefined {
	try {
		const v = JSON.parse(body) as { code?: unknown; msg?: unknown };
		return typeof v?.code === 'number' ? { code: v.code, msg: typeof v.msg === 'string' ? v.msg : '' } : undefined;
	} catch {
		return undefined;
	}
}

/** Parses the credential's "Auth Failure Codes" field: comma/space separated integers. */
export function parseCodes(text: unknown, fallback: readonly number[]): number[] {
	if (typeof text !== 'string' || text.trim() === '') return [...fallback];
	const codes = text
		.split(/[\s,;]+/)
		.filter((s) => /^-?\d+$/.test(s))
		.map(Number);
	return codes.length ? codes : [...fallback];
}
