import type { IHttpRequestOptions } from 'n8n-workflow';

/**
 * Every HTTP exchange of the nodes is bounded in size and TOTAL time. n8n's `timeout` only ends a connection that
 * goes idle (a service sending one byte a second keeps it alive for ever) and n8n reads any body in full, so the
 * body is taken as a stream and read here: at most `maxBytes`, and everything (headers and body) within
 * `timeoutMs`. Timers come from AbortSignal.timeout (no timer globals in n8n packages).
 */
export interface Bounds {
	timeoutMs: number;
	maxBytes: number;
}

export interface BoundedResponse {
	statusCode: number;
	headers: Record<string, unknown>;
	body: string;
}

type Stream = AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown };

/** The error thrown when the deadline passes (`timeout`: the client reports "no answer within … ms"). */
const timeoutError = (b: Bounds) =>
	Object.assign(new Error(`no complete answer within ${b.timeoutMs} ms`), { name: 'TimeoutError', timeout: true });
const tooLargeError = (b: Bounds) =>
	Object.assign(new Error(`the answer is larger than ${b.maxBytes} bytes`), { tooLarge: true });

/** Sends `options` with `send` (an n8n request helper) and reads the answer within `bounds`. */
export async function boundedExchange(
	send: (o: IHttpRequestOptions) => Promise<unknown>,
	options: IHttpRequestOptions,
	bounds: Bounds,
): Promise<BoundedResponse> {
	const deadline = AbortSignal.timeout(bounds.timeoutMs);
	const expired = new Promise<never>((_, reject) =>
		deadline.addEventListener('abort', () => reject(timeoutError(bounds)), { once: true }),
	);
	const sent = send({ ...options, encoding: 'stream', json: false, returnFullResponse: true, abortSignal: deadline });
	// The loser of the race must not surface as an unhandled rejection.
	sent.catch(() => undefined);
	expired.catch(() => undefined);
	const raw = (await Promise.race([sent, expired])) as {
		statusCode?: number;
		headers?: Record<string, unknown>;
		body?: unknown;
	};
	const body = await readBody(raw.body, bounds, deadline);
	return { statusCode: Number(raw.statusCode ?? 0), headers: raw.headers ?? {}, body };
}

function isStream(v: unknown): v is Stream {
	return (
		typeof v === 'object' &&
		v !== null &&
		typeof (v as Stream)[Symbol.asyncIterator] === 'function' &&
		typeof (v as Stream).destroy === 'function'
	);
}

async function readBody(body: unknown, bounds: Bounds, deadline: AbortSignal): Promise<string> {
	if (!isStream(body)) {
		// A helper that already read the body (never with encoding 'stream' in n8n 1.x–2.x): still bounded in size.
		const text =
			typeof body === 'string'
				? body
				: body === undefined || body === null
					? ''
					: Buffer.isBuffer(body)
						? body.toString('utf8')
						: JSON.stringify(body);
		if (Buffer.byteLength(text) > bounds.maxBytes) throw tooLargeError(bounds);
		return text;
	}
	const stop = () => body.destroy(timeoutError(bounds));
	if (deadline.aborted) stop();
	deadline.addEventListener('abort', stop, { once: true });
	const chunks: Buffer[] = [];
	let size = 0;
	try {
		for await (const chunk of body) {
			size += chunk.byteLength;
			if (size > bounds.maxBytes) {
				const e = tooLargeError(bounds);
				body.destroy(e);
				throw e;
			}
			chunks.push(Buffer.from(chunk));
		}
	} catch (error) {
		throw deadline.aborted ? timeoutError(bounds) : error;
	} finally {
		deadline.removeEventListener('abort', stop);
	}
	return Buffer.concat(chunks, size).toString('utf8');
}
