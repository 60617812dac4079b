import { noResult } from './catalog/define';
import { plainResult } from './catalog/plain';
import type { CatalogEntry } from './catalog/types';
import { ApiError, SecurityServiceError, TransportError } from './errors';
import type { HttpResponse } from './transport/types';

/** The service's answer: HTTP status → the documented envelope {code, msg, result} → the result the catalog describes. */

export interface Envelope {
	code: number;
	msg: string;
	result?: unknown;
}

/** HTTP 4xx other than 408 (timeout) and 429 (rate limited): the service refused the request as such. */
export const isClientRefusal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429;

export const NOT_JSON = Symbol('not-json');
export function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return NOT_JSON;
	}
}

export function decode(op: CatalogEntry, res: HttpResponse): Envelope {
	if (res.status === 429)
		throw Object.assign(
			new TransportError(op.id, 'http', 'HTTP 429 (rate limited)', { status: 429, maybeApplied: false }),
			{ rateLimited: true },
		);
	if (res.status < 200 || res.status >= 300)
		throw new TransportError(op.id, 'http', `HTTP ${res.status}`, {
			status: res.status,
			maybeApplied: res.status >= 500,
		});
	const body = parseJson(res.body);
	if (body === NOT_JSON)
		throw new TransportError(op.id, 'decode', `the answer is not JSON (HTTP ${res.status})`, {
			status: res.status,
			maybeApplied: true,
		});
	const env = body as Partial<Envelope>;
	if (typeof env !== 'object' || env === null || typeof env.code !== 'number')
		throw new TransportError(op.id, 'decode', 'the answer is not the documented envelope {code, msg, result}', {
			status: res.status,
			maybeApplied: true,
		});
	// the parsed object itself when it has the envelope's shape (the common case), else a copy with an empty msg
	if (typeof env.msg === 'string') return env as Envelope;
	return { code: env.code, msg: '', result: env.result };
}

export function parseResult(op: CatalogEntry, result: unknown): unknown {
	// no result schema (z.unknown: anything, as it is): nothing to walk
	if (op.result === noResult) return result;
	// a bare record that passes the plain checks: the value zod would return (api/catalog/plain.ts)
	const plain = plainResult(op.result)?.(result);
	if (plain !== undefined) return plain;
	const r = op.result.safeParse(result);
	if (!r.success) {
		const where = r.error.issues
			.slice(0, 3)
			.map((i) => `${i.path.join('.') || '(result)'}: ${i.message}`)
			.join('; ');
		throw new TransportError(op.id, 'result', `the result does not match the spec: ${where}`, { maybeApplied: true });
	}
	return r.data;
}

/** Why a failed attempt may be repeated (the retry event's reason), or undefined when it must not be. */
export function retryable(op: CatalogEntry, err: unknown, rateCodes: ReadonlySet<number>): string | undefined {
	// Getting the token failed: its own attempts and budget are spent (tokenAttempts, tokenBudgetMs).
	if (err instanceof SecurityServiceError && err.opId !== op.id && err.opId.startsWith('authorization.'))
		return undefined;
	if (err instanceof ApiError) return rateCodes.has(err.code) ? `rate limited (code ${err.code})` : undefined;
	if (!(err instanceof TransportError)) return undefined;
	if ((err as TransportError & { rateLimited?: boolean }).rateLimited) return 'rate limited (HTTP 429)';
	// A 4xx refusal (other than 408 timeout / 429) says the request itself is wrong (no such path, headers
	// too large, …): the same request gets the same answer, so it is not repeated.
	if (err.kind === 'http' && err.status !== undefined && isClientRefusal(err.status)) return undefined;
	// The same request would get the same oversized answer.
	if (err.kind === 'too_large') return undefined;
	if (!err.maybeApplied) return `not sent (${err.kind})`;
	// The outcome of the request is unknown: only reads and idempotent writes may be repeated.
	if (op.safety === 'read' || op.safety === 'idempotent') return `${err.kind}${err.status ? ` ${err.status}` : ''}`;
	return undefined;
}
