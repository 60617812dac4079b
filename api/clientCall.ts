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
 * result schema → retried only where safe, within the call's deadline. The common case (a token at hand, a budget
 * turn free at once, no guarded entry, an answer that needs no second attempt) is one small async step that waits
 * for nothing but the transport (`exchange`): the steps before and after it are plain functions, one object holds
 * the call's state, and no function is made per call. Anything else continues in async steps of its own (`after`,
 * `renewed`, `waitedExchange`), so their frames are paid only when used.
 */

const NO_OPTIONS: CallOptions = Object.freeze({});
const UNCHECKED: Record<string, unknown> = Object.freeze({});

/** One call: what its attempts share (its limit, the token they send, whether it was renewed, the last retry hint). */
class Call implements Limit {
	token?: string;
	authRetried = false;
	hint?: number;
	attempt = 0;
	/** The checked parameters (set once checked; the shared empty object until then: nothing built per call). */
	valid: Record<string, unknown> = UNCHECKED;
	constructor(
		readonly op: CatalogEntry,
		readonly o: CallOptions,
		readonly retries: number,
		readonly deadline: number | undefined,
	) {}
}

/** An answer that refused the token: renew it once and send again (not counted as a retry). */
class Renew {
	constructor(readonly reason: TokenRefusal) {}
}

export function callWith(ctx: ClientContext): CallFn {
	const call: CallFn = (opId, params = {}, o = NO_OPTIONS, outer) => {
		let c: Call;
		let pre: Record<string, unknown> | Promise<Record<string, unknown>>;
		try {
			const op = getOperation(opId);
			if (op.encoding === 'redirect') throw new Error(`${opId} answers with a redirect: use client.connect()`);
			// One deadline for the whole call, handed down to its lookup, token requests, budget wait and every attempt.
			const own = ctx.opts.callTimeoutMs === undefined ? undefined : ctx.now() + ctx.opts.callTimeoutMs;
			c = new Call(op, o, outer ? outer.retries : ctx.retries, earliest(outer?.deadline, own));
			pre = checked(ctx, call, op, params, o, c.deadline);
		} catch (err) {
			return Promise.reject(err);
		}
		if (pre instanceof Promise) return checkedFirst(ctx, c, pre);
		c.valid = pre;
		return attempt(ctx, c);
	};
	return call;
}

/** A call whose check waited (the guard's own-address lookup): its attempts once checked. */
async function checkedFirst(ctx: ClientContext, c: Call, pre: Promise<Record<string, unknown>>): Promise<unknown> {
	c.valid = await pre;
	return attempt(ctx, c);
}

/** One attempt: its request at hand goes to the transport at once; one that waits (token, budget) is awaited first. */
function attempt(ctx: ClientContext, c: Call): Promise<unknown> {
	c.hint = undefined;
	let ready: HttpRequest | Promise<HttpRequest>;
	try {
		ready = request(ctx, c);
	} catch (err) {
		return after(ctx, c, err);
	}
	return ready instanceof Promise ? waitedExchange(ctx, c, ready) : exchange(ctx, c, ready);
}

/** The attempt's one async step: the transport, then its answer (the result, or what comes after a failure). */
async function exchange(ctx: ClientContext, c: Call, req: HttpRequest): Promise<unknown> {
	const t0 = ctx.now();
	let res: HttpResponse;
	try {
		res = await ctx.opts.transport(req);
	} catch (err) {
		return after(ctx, c, sendFailure(ctx, c.op, req, t0, err));
	}
	let r: unknown;
	try {
		r = answer(ctx, c, res, ctx.now() - t0);
	} catch (err) {
		return after(ctx, c, err);
	}
	return r instanceof Renew ? renewed(ctx, c, r) : r;
}

async function waitedExchange(ctx: ClientContext, c: Call, ready: Promise<HttpRequest>): Promise<unknown> {
	let req: HttpRequest;
	try {
		req = await ready;
	} catch (err) {
		return after(ctx, c, err);
	}
	return exchange(ctx, c, req);
}

/** One fresh token (shared by every call refused with the same token), one more attempt: safe by refusalOf. */
async function renewed(ctx: ClientContext, c: Call, r: Renew): Promise<unknown> {
	try {
		await ctx.tokens?.getToken({ force: true, rejected: c.token, reason: r.reason, deadline: c.deadline });
	} catch (err) {
		return after(ctx, c, err);
	}
	return attempt(ctx, c);
}

/** A failed attempt: thrown, or repeated after its backoff where that is safe and within the call's deadline. */
async function after(ctx: ClientContext, c: Call, failure: unknown): Promise<unknown> {
	const { op } = c;
	const reason = c.attempt < c.retries ? retryable(op, failure, ctx.rateCodes) : undefined;
	if (!reason) throw failure;
	// With a budget, the retry waits for the hint through the budget's pause (and its own turn).
	const delayMs =
		ctx.budget && c.hint !== undefined ? 0 : backoffMs(c.attempt, ctx.backoff.baseMs, ctx.backoff.maxMs, ctx.random);
	if (c.deadline !== undefined && ctx.now() + delayMs >= c.deadline) throw failure;
	ctx.emit({ type: 'retry', opId: op.id, attempt: c.attempt + 1, delayMs, reason });
	c.attempt++;
	await ctx.sleep(delayMs);
	return attempt(ctx, c);
}

/** An attempt's request: its token and budget turn (waited for only when not at hand), encoded. */
function request(ctx: ClientContext, c: Call): HttpRequest | Promise<HttpRequest> {
	const { op, o } = c;
	const own = op.auth === 'access_token' && !o.accessToken;
	if (op.auth === 'access_token' && o.accessToken) c.token = o.accessToken;
	if (own && !ctx.tokens) throw new Error(`${op.id}: no credentials configured to obtain an access token`);
	if (own) c.token = ctx.tokens?.peek();
	const queued = ctx.budget ? turn(ctx, op, o, c.deadline) : undefined;
	if (queued || (own && c.token === undefined)) return waited(ctx, c, own, queued);
	return encoded(ctx, c);
}

/** The budget turn, then the token (taken after the turn: one at hand before it may expire while the call queues). */
async function waited(
	ctx: ClientContext,
	c: Call,
	own: boolean,
	queued: Promise<void> | undefined,
): Promise<HttpRequest> {
	if (queued) await queued;
	if (own && ctx.tokens) c.token = ctx.tokens.peek() ?? (await ctx.tokens.getToken({ deadline: c.deadline }));
	return encoded(ctx, c);
}

function encoded(ctx: ClientContext, c: Call): HttpRequest {
	const req = encodeRequest(c.op, c.valid, {
		baseUrl: ctx.baseUrl,
		accessToken: c.token,
		timeoutMs: timeoutWithin(ctx, c),
		maxResponseBytes: ctx.maxResponseBytes,
	});
	requested(ctx, c.op, req, c.attempt);
	return req;
}

/** An answer: the result, a Renew (token refused, renew and send again), or the failure thrown. */
function answer(ctx: ClientContext, c: Call, res: HttpResponse, ms: number): unknown {
	const { op } = c;
	let env: Envelope | undefined;
	try {
		// HTTP 401 is a refused token whatever the body (decoded below when no renewal is left)
		if (res.status !== 401) env = decode(op, res);
	} finally {
		// the envelope's code (0 = success) when there is one: what an operator counts requests by
		ctx.onEvent?.({ type: 'response', opId: op.id, status: res.status, code: env?.code, ms });
		if (res.status === 429 || (env !== undefined && ctx.rateCodes.has(env.code))) c.hint = refused(ctx, op, res, env);
	}
	const refusal = c.authRetried ? undefined : refusalOf(ctx, op, res.status, env, c.token, c.o);
	if (refusal && ctx.tokens) {
		c.authRetried = true;
		return new Renew(refusal);
	}
	env ??= decode(op, res);
	if (env.code === 0) {
		if (c.token !== undefined) ctx.tokens?.accepted(c.token);
		return parseResult(op, env.result);
	}
	throw new ApiError(op.id, env.code, env.msg);
}
