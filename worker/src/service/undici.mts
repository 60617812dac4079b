// The undici transport: a keep-alive connection pool per origin, one TOTAL deadline per call (connect, headers and
// the whole body), a bounded body (maxResponseBytes), no redirects followed.
import { Agent, request } from 'undici';
import type { HttpRequest, HttpResponse, Transport } from '../../../api/transport/types.ts';
import { MAX_RESPONSE_BYTES } from '../../../api/limits.ts';
import { multipartBody } from '../../../api/transport/multipart.ts';

export interface UndiciTransportOptions {
	/** Connections per origin (keep-alive pool). */
	connections?: number;
	keepAliveTimeoutMs?: number;
}

export function createUndiciTransport(o: UndiciTransportOptions = {}): Transport & { close(): Promise<void> } {
	const agent = new Agent({
		connections: o.connections ?? 16,
		keepAliveTimeout: o.keepAliveTimeoutMs ?? 10_000,
		pipelining: 1,
	});
	const transport = async (req: HttpRequest): Promise<HttpResponse> => {
		let body: string | undefined;
		// Copied only when a content type is added (the request object belongs to the caller).
		let headers: Record<string, string> = req.headers;
		if (req.body) headers = { ...req.headers };
		if (req.body?.kind === 'json') {
			body = JSON.stringify(req.body.value);
			headers['content-type'] = 'application/json';
		} else if (req.body?.kind === 'form') {
			body = new URLSearchParams(req.body.parts).toString();
			headers['content-type'] = 'application/x-www-form-urlencoded';
		} else if (req.body?.kind === 'multipart') {
			// text, not undici's FormData (a stream per body: ~25 KB allocated per request against ~1 KB)
			const m = multipartBody(req.body.parts);
			body = m.body;
			headers['content-type'] = m.contentType;
		}
		// One deadline for the whole exchange (connect, headers, body): undici's own headers/body timeouts would only
		// repeat it with a timer per request. A plain timer cleared when the body is read, not AbortSignal.timeout:
		// that one's timer lives until the signal is garbage-collected (a weak reference and a finalizer per request).
		const ac = new AbortController();
		const timer = setTimeout(abortOnTimeout, req.timeoutMs, ac);
		try {
			const res = await request(req.url, { method: req.method, headers, body, dispatcher: agent, signal: ac.signal });
			const text = await readBounded(res, req.maxResponseBytes ?? MAX_RESPONSE_BYTES);
			return { status: res.statusCode, headers: textHeaders(res.headers), body: text };
		} catch (err) {
			const e = err as Error & { code?: string; timeout?: boolean; sent?: boolean };
			const code = e.code ?? (e.cause as { code?: string } | undefined)?.code;
			if (e.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
				e.timeout = true;
			// Connection refused / DNS failure: nothing reached the service.
			if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'UND_ERR_CONNECT_TIMEOUT')
				e.sent = false;
			throw e;
		} finally {
			clearTimeout(timer);
		}
	};
	return Object.assign(transport, { close: () => agent.close() });
}

/** The answer's headers as text: undici's own object when every value is one string (the common case), else a copy. */
function textHeaders(rh: Record<string, string | string[] | undefined>): Record<string, string> {
	let plain = true;
	for (const k in rh)
		if (typeof rh[k] !== 'string') {
			plain = false;
			break;
		}
	if (plain) return rh as Record<string, string>;
	const h: Record<string, string> = {};
	for (const k in rh) {
		const v = rh[k];
		if (v !== undefined) h[k] = typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : String(v);
	}
	return h;
}

function abortOnTimeout(ac: AbortController) {
	ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
}

/**
 * The body as text, at most `max` bytes. With a content-length within the bound (the common case), undici's own
 * reader: the HTTP parser ends the body at that length, so it cannot read more. Without one (chunked), chunk by chunk:
 * past the bound the stream is destroyed (the connection is not reused) and the error carries `tooLarge`. The
 * request's abort signal still ends a body that drips in too slowly.
 */
function readBounded(
	res: { headers: Record<string, string | string[] | undefined>; body: BodyStream },
	max: number,
): Promise<string> {
	const declared = res.headers['content-length'];
	const length = typeof declared === 'string' && /^\d{1,15}$/.test(declared) ? Number(declared) : undefined;
	if (length !== undefined && length <= max) return res.body.text();
	if (length !== undefined) throw tooLarge(res.body, max);
	return readChunks(res.body, max);
}

async function readChunks(body: BodyStream, max: number): Promise<string> {
	const chunks: Uint8Array[] = [];
	let size = 0;
	for await (const chunk of body) {
		size += chunk.byteLength;
		if (size > max) throw tooLarge(body, max);
		chunks.push(chunk);
	}
	return Buffer.concat(chunks, size).toString('utf8');
}

type BodyStream = AsyncIterable<Uint8Array> & { destroy(err?: Error): unknown; text(): Promise<string> };

function tooLarge(body: BodyStream, max: number): Error {
	const e = Object.assign(new Error(`response body larger than ${max} bytes`), { tooLarge: true });
	body.destroy(e);
	return e;
}
