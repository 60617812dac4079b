import { getOperation } from './catalog/index';
import type { CatalogEntry } from './catalog/types';
import { earliest, timeoutWithin, type CallFn, type ClientContext, type Limit } from './clientContext';
import { checked } from './clientGuard';
import { refusalOf, refused, requested, sendFailure, turn } from './clientSend';
import type { CallOptions } from './clientTypes';
import { encodeRequest } from './encode';
import { decode, parseResult, retryable, type Envelope } from './envelope';
import { ApiError } from './errors';
import { backoffMs } from './time';
import type { HttpRequest, HttpResponse } from './transport/types';
import type { TokenRefusal } from './tokenRefusal';

/**
 * A call: checked (catalog rules, blast-radius guard) → per attempt: token, budget turn, encode, transport, envelope,
 * result schema → retried only where safe, within the call's deadline. The common case (a cached token, no budget, no
 * listener, no guarded entry) is one async step that waits for nothing but the transport: the steps before and after
 * it are plain functions (each async step is a promise, a suspended frame and a resumption per call).
 */

/** What the attempts of one call share: the token they send, whether it was renewed, the last retry hint. */
interface Attempts {
	token?: string;
	authRetried: boolean;
	hint?: number;
}

/** An answer that refused the token: renew it once and send again (not counted as a retry). */
class Renew {
	constructor(readonly reason: TokenRefusal) {}
}

const NO_OPTIONS: CallOptions = Object.freeze({});

export function callWith(ctx: ClientContext): CallFn {
	const call: CallFn = async (opId, params = {}, o = NO_OPTIONS, outer) => {
		const op = getOperation(opId);
		if (op.encoding === 'redirect') throw new Error(`${opId} answers with a redirect: use client.connect()`);
		// One deadline for the whole call, handed down to its lookup, token requests, budget wait and every attempt.
		const own = ctx.opts.callTimeoutMs === undefined ? undefined : ctx.now() + ctx.opts.callTimeoutMs;
		const limit: Limit = { retries: outer ? outer.retries : ctx.retries, deadline: earliest(outer?.deadline, own) };
		const pre = checked(ctx, call, op, params, o, limit.deadline);
		const valid = pre instanceof Promise ? await pre : pre;
		const s: Attempts = { authRetried: false };
		for (let attempt = 0; ; ) {
			let failure: unknown;
			s.hint = undefined;
			try {
				const ready = request(ctx, op, valid, o, limit, attempt, s);
				const req = ready instanceof Promise ? await ready : ready;
				const t0 = ctx.now();
				let res: HttpResponse;
				try {
					res = await ctx.opts.transport(req);
				} catch (err) {
					throw sendFailure(ctx, op, req, t0, err);
				}
				const r = answer(ctx, op, res, ctx.now() - t0, o, s);
				if (!(r instanceof Renew)) return r;
				// One fresh token (shared by every call refused with the same token), one retry: safe by refusalOf.
				await ctx.tokens?.getToken({ force: true, rejected: s.token, reason: r.reason, deadline: limit.deadline });
				continue;
			} catch (err) {
				failure = err;
			}
			const reason = attempt < limit.retries ? retryable(op, failure, ctx.rateCodes) : undefined;
			if (!reason) throw failure;
			// With a budget, the retry waits for the hint through the budget's pause (and its own turn).
			const delayMs =
				ctx.budget && s.hint !== undefined ? 0 : backoffMs(attempt, ctx.backoff.baseMs, ctx.backoff.maxMs, ctx.random);
			if (limit.deadline !== undefined && ctx.now() + delayMs >= limit.deadline) throw failure;
			ctx.emit({ type: 'retry', opId, attempt: attempt + 1, delayMs, reason });
			attempt++;
			await ctx.sleep(delayMs);
		}
	};
	return call;
}

/** An attempt's request: its token and budget turn (waited for only when not at hand), encoded. */
function request(
	ctx: ClientContext,
	op: CatalogEntry,
	valid: Record<string, unknown>,
	o: CallOptions,
	limit: Limit,
	attempt: number,
	s: Attempts,
): HttpRequest | Promise<HttpRequest> {
	const own = op.auth === 'access_token' && !o.accessToken;
	if (op.auth === 'access_token' && o.accessToken) s.token = o.accessToken;
	if (own && !ctx.tokens) throw new Error(`${op.id}: no credentials configured to obtain an access token`);
	if (own) s.token = ctx.tokens?.peek();
	// a budget turn free at once is taken here (no promise); one that must wait is waited for
	const queued = ctx.budget ? turn(ctx, op, o, limit.deadline) : undefined;
	if (queued || (own && s.token === undefined)) return waited(ctx, op, valid, limit, attempt, s, own, queued);
	return encoded(ctx, op, valid, limit, attempt, s);
}

/** The budget turn, then the token (taken after the turn: one at hand before it may expire while the call queues). */
async function waited(
	ctx: ClientContext,
	op: CatalogEntry,
	valid: Record<string, unknown>,
	limit: Limit,
	attempt: number,
	s: Attempts,
	own: boolean,
	queued: Promise<void> | undefined,
): Promise<HttpRequest> {
	if (queued) await queued;
	if (own && ctx.tokens) s.token = ctx.tokens.peek() ?? (await ctx.tokens.getToken({ deadline: limit.deadline }));
	return encoded(ctx, op, valid, limit, attempt, s);
}

function encoded(
	ctx: ClientContext,
	op: CatalogEntry,
	valid: Record<string, unknown>,
	limit: Limit,
	attempt: number,
	s: Attempts,
): HttpRequest {
	const req = encodeRequest(op, valid, {
		baseUrl: ctx.baseUrl,
		accessToken: s.token,
		timeoutMs: timeoutWithin(ctx, limit),
		maxResponseBytes: ctx.maxResponseBytes,
	});
	requested(ctx, op, req, attempt);
	return req;
}

/** An answer: the result, a Renew (token refused, renew and send again), or the failure thrown. */
function answer(
	ctx: ClientContext,
	op: CatalogEntry,
	res: HttpResponse,
	ms: number,
	o: CallOptions,
	s: Attempts,
): unknown {
	let env: Envelope | undefined;
	try {
		// HTTP 401 is a refused token whatever the body (decoded below when no renewal is left)
		if (res.status !== 401) env = decode(op, res);
	} finally {
		// the envelope's code (0 = success) when there is one: what an operator counts requests by
		ctx.onEvent?.({ type: 'response', opId: op.id, status: res.status, code: env?.code, ms });
		if (res.status === 429 || (env !== undefined && ctx.rateCodes.has(env.code))) s.hint = refused(ctx, op, res, env);
	}
	const refusal = s.authRetried ? undefined : refusalOf(ctx, op, res.status, env, s.token, o);
	if (refusal && ctx.tokens) {
		s.authRetried = true;
		return new Renew(refusal);
	}
	env ??= decode(op, res);
	if (env.code === 0) {
		if (s.token !== undefined) ctx.tokens?.accepted(s.token);
		return parseResult(op, env.result);
	}
	throw new ApiError(op.id, env.code, env.msg);
}
