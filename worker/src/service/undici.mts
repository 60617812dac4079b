// The undici transport: a keep-alive connection pool per origin, one TOTAL deadline per call (connect, headers and
// the whole body), a bounded body (maxResponseBytes), no redirects followed.
import { Agent, FormData, request } from 'undici';
import type { HttpRequest, HttpResponse, Transport } from '../../../api/transport/types.ts';
import { MAX_RESPONSE_BYTES } from '../../../api/limits.ts';

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
		let body: string | FormData | undefined;
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
			const fd = new FormData();
			for (const [k, v] of req.body.parts) fd.append(k, v);
			body = fd;
		}
		try {
			const res = await request(req.url, {
				method: req.method,
				headers,
				body,
				dispatcher: agent,
				// One deadline for the whole exchange (connect, headers, body): undici's own headers/body timeouts
				// would only repeat it with a timer per request.
				signal: AbortSignal.timeout(req.timeoutMs),
			});
			const text = await readBounded(res, req.maxResponseBytes ?? MAX_RESPONSE_BYTES);
			const h: Record<string, string> = {};
			const rh = res.headers;
			for (const k in rh) {
				const v = rh[k];
				if (v !== undefined) h[k] = typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : String(v);
			}
			return { status: res.statusCode, headers: h, body: text };
		} catch (err) {
			const e = err as Error & { code?: string; timeout?: boolean; sent?: boolean };
			const code = e.code ?? (e.cause as { code?: string } | undefined)?.code;
			if (e.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
				e.timeout = true;
			// Connection refused / DNS failure: nothing reached the service.
			if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'UND_ERR_CONNECT_TIMEOUT')
				e.sent = false;
			throw e;
		}
	};
	return Object.assign(transport, { close: () => agent.close() });
}

/**
 * The body as text, at most `max` bytes. With a content-length within the bound (the common case), undici's own
 * reader: the HTTP parser ends the body at that length, so it cannot read more. Without one (chunked), chunk by chunk:
 * past the bound the stream is destroyed (the connection is not reused) and the error carries `tooLarge`. The
 * request's abort signal still ends a body that drips in too slowly.
 */
async function readBounded(
	res: { headers: Record<string, string | string[] | undefined>; body: BodyStream },
	max: number,
): Promise<string> {
	const declared = res.headers['content-length'];
	const length = typeof declared === 'string' && /^\d{1,15}$/.test(declared) ? Number(declared) : undefined;
	if (length !== undefined && length <= max) return res.body.text();
	if (length !== undefined) throw tooLarge(res.body, max);
	const chunks: Uint8Array[] = [];
	let size = 0;
	for await (const chunk of res.body) {
		size += chunk.byteLength;
		if (size > max) throw tooLarge(res.body, max);
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
