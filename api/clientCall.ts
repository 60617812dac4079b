import { getOperation } from './catalog/index';
import type { CatalogEntry } from './catalog/types';
import { earliest, timeoutWithin, type CallFn, type ClientContext, type Limit } from './clientContext';
import { checked } from './clientGuard';
import { refusalOf, refused, send, turn } from './clientSend';
import type { CallOptions } from './clientTypes';
import { encodeRequest } from './encode';
import { decode, parseResult, retryable, type Envelope } from './envelope';
import { ApiError } from './errors';
import { backoffMs } from './time';

/**
 * A call: checked (catalog rules, blast-radius guard) → per attempt: token, budget turn, encode, transport, envelope,
 * result schema → retried only where safe, within the call's deadline. The common case (a cached token, no budget, no
 * listener, no guarded entry) waits for nothing but the transport.
 */

/** What the attempts of one call share: the token they send, whether it was renewed, the last retry hint. */
interface Attempts {
	token?: string;
	authRetried: boolean;
	hint?: number;
}

/** An attempt whose token was refused and renewed: sent again, not counted as a retry. */
const RENEWED = Symbol('renewed');

export function callWith(ctx: ClientContext): CallFn {
	const call: CallFn = async (opId, params = {}, o = {}, outer = { retries: ctx.retries }) => {
		const op = getOperation(opId);
		if (op.encoding === 'redirect') throw new Error(`${opId} answers with a redirect: use client.connect()`);
		// One deadline for the whole call, handed down to its lookup, token requests, budget wait and every attempt.
		const own = ctx.opts.callTimeoutMs === undefined ? undefined : ctx.now() + ctx.opts.callTimeoutMs;
		const limit: Limit = { retries: outer.retries, deadline: earliest(outer.deadline, own) };
		const pre = checked(ctx, call, op, params, o, limit.deadline);
		const valid = pre instanceof Promise ? await pre : pre;
		const s: Attempts = { authRetried: false };
		for (let attempt = 0; ; ) {
			let failure: unknown;
			s.hint = undefined;
			try {
				const r = await attemptOnce(ctx, op, valid, o, limit, attempt, s);
				if (r !== RENEWED) return r;
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

/** One request of a call and its answer: the result, RENEWED (token refused and renewed), or the failure thrown. */
async function attemptOnce(
	ctx: ClientContext,
	op: CatalogEntry,
	valid: Record<string, unknown>,
	o: CallOptions,
	limit: Limit,
	attempt: number,
	s: Attempts,
): Promise<unknown> {
	const { tokens } = ctx;
	if (op.auth === 'access_token') {
		if (o.accessToken) s.token = o.accessToken;
		else if (!tokens) throw new Error(`${op.id}: no credentials configured to obtain an access token`);
		else s.token = tokens.peek() ?? (await tokens.getToken({ deadline: limit.deadline }));
	}
	if (ctx.budget) await turn(ctx, op, o, limit.deadline);
	const req = encodeRequest(op, valid, {
		baseUrl: ctx.baseUrl,
		accessToken: s.token,
		timeoutMs: timeoutWithin(ctx, limit),
		maxResponseBytes: ctx.maxResponseBytes,
	});
	const { res, ms } = await send(ctx, op, req, attempt);
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
	if (refusal && tokens) {
		// One fresh token (shared by every call refused with the same token), one retry: safe by refusalOf.
		s.authRetried = true;
		await tokens.getToken({ force: true, rejected: s.token, reason: refusal, deadline: limit.deadline });
		return RENEWED;
	}
	env ??= decode(op, res);
	if (env.code === 0) {
		if (s.token !== undefined) tokens?.accepted(s.token);
		return parseResult(op, env.result);
	}
	throw new ApiError(op.id, env.code, env.msg);
}
