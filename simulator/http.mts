// The simulator's HTTP plumbing: bodies read within a bound, answers as JSON envelopes, bytes Node's parser refuses
// answered with the envelope too, and secrets masked in the request log.
import type http from 'node:http';
import { CODES } from './codes.mts';
import type { Fields } from './multipart.mts';

const MASKED = new Set(['access_token', 'secret', 'refresh_token', 'code']);

export function maskFields(f: Fields): Record<string, string | string[]> {
	const o: Record<string, string | string[]> = {};
	for (const [k, v] of f) {
		const vv = MASKED.has(k) ? v.map(() => '***') : v;
		o[k] = vv.length === 1 ? vv[0] : vv;
	}
	return o;
}

export function maskJson(v: unknown): unknown {
	if (Array.isArray(v)) return v.map(maskJson);
	if (v && typeof v === 'object') {
		const o: Record<string, unknown> = {};
		for (const [k, x] of Object.entries(v)) o[k] = MASKED.has(k) ? '***' : maskJson(x);
		return o;
	}
	return v;
}

export const EMPTY_BUF = Buffer.alloc(0);
const MAX_BODY = 1 << 20;

export function drain(req: http.IncomingMessage) {
	req.resume();
}

export const HANG_MAX_MS = 600_000;

/** Resolves when the socket closes or after `ms` (at most HANG_MAX_MS), whichever comes first; keeps nothing alive. */
export function holdOpen(socket: import('node:net').Socket, ms: number): Promise<void> {
	return new Promise((resolve) => {
		if (socket.destroyed) return resolve();
		const t = setTimeout(done, Math.min(ms, HANG_MAX_MS));
		t.unref();
		socket.once('close', done);
		function done() {
			clearTimeout(t);
			socket.off('close', done);
			resolve();
		}
	});
}

export function readBody(req: http.IncomingMessage): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		let n = 0;
		req.on('data', (c: Buffer) => {
			n += c.length;
			if (n <= MAX_BODY) chunks.push(c);
		});
		req.on('end', () => (n > MAX_BODY ? reject(new BodyTooLarge()) : resolve(Buffer.concat(chunks))));
		req.on('error', reject);
	});
}

export class BodyTooLarge extends Error {
	constructor() {
		super(`the request body must be at most ${MAX_BODY} bytes`);
	}
}

/**
 * Bytes Node's HTTP parser refuses (not HTTP, a bad header, a negative Content-Length, headers over 16 KB, 0xFF in
 * the URL) still get the envelope, on HTTP/1.1 with the connection closed; a socket that cannot be written is closed.
 */
export function onClientError(err: Error & { code?: string }, socket: import('node:stream').Duplex) {
	if (!socket.writable || err.code === 'ECONNRESET') {
		socket.destroy();
		return;
	}
	const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
	const reason =
		status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
	const msg =
		status === 431
			? 'request line and headers must be at most 16384 bytes'
			: status === 408
				? 'request not received in time'
				: `malformed HTTP request (${err.code ?? 'parse error'})`;
	const body = JSON.stringify({ code: CODES.VALIDATION, msg });
	socket.end(
		`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
	);
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>) {
	const s = JSON.stringify(body);
	res.writeHead(status, {
		'content-type': 'application/json; charset=utf-8',
		'content-length': Buffer.byteLength(s),
		...headers,
	});
	res.end(s);
}
