import type { CatalogEntry } from './catalog/types';
import { earliest, type ClientContext } from './clientContext';
import type { CallOptions } from './clientTypes';
import type { Envelope } from './envelope';
import { BudgetDeferredError, SecurityServiceError, TransportError } from './errors';
import { defaultClassOf, retryAfterMs, type PriorityClass } from './rateBudget';
import { redactText } from './redact';
import { tokenRefusal, type TokenRefusal } from './tokenRefusal';
import type { HttpRequest, HttpResponse, TransportThrown } from './transport/types';

/** One request of a call: its turn in the budget, the transport, and what a refusal means (rate, token). */

/** Sends one request: the answer and its round-trip time (ms), or the TransportError of no usable answer. */
export async function send(
	ctx: ClientContext,
	op: CatalogEntry,
	req: HttpRequest,
	attempt: number,
): Promise<{ res: HttpResponse; ms: number }> {
	requested(ctx, op, req, attempt);
	const t0 = ctx.now();
	try {
		const res = await ctx.opts.transport(req);
		return { res, ms: ctx.now() - t0 };
	} catch (err) {
		throw sendFailure(ctx, op, req, t0, err);
	}
}

/** The request event, for a listener only (the redacted URL is the client's largest per-call cost otherwise). */
export function requested(ctx: ClientContext, op: CatalogEntry, req: HttpRequest, attempt: number): void {
	ctx.onEvent?.({ type: 'request', opId: op.id, method: req.method, url: redactText(req.url), attempt });
}

/** What a transport's throw (no usable answer) means: the TransportError to throw (or the host's own error). */
export function sendFailure(
	ctx: ClientContext,
	op: CatalogEntry,
	req: HttpRequest,
	t0: number,
	thrown: unknown,
): Error {
	const { now } = ctx;
	const failure = thrown ?? new Error('transport failed');
	// A host transport that obtains tokens itself (n8n) reports a refused token call as the client's own error.
	if (failure instanceof SecurityServiceError) return failure;
	const t = failure as TransportThrown & Error;
	if (t.tooLarge) return tooLargeError(ctx, op, req, now() - t0, failure);
	const timeout = Boolean(t.timeout) || t.name === 'TimeoutError' || t.name === 'AbortError';
	ctx.emit({ type: 'failure', opId: op.id, kind: timeout ? 'timeout' : 'network', ms: now() - t0 });
	return new TransportError(
		op.id,
		timeout ? 'timeout' : 'network',
		timeout ? `no answer within ${req.timeoutMs} ms` : `network failure: ${t.message ?? String(failure)}`,
		{
			maybeApplied: t.sent !== false,
			cause: failure,
		},
	);
}

/** An answer past `maxResponseBytes`: the service did answer (a write may have been applied); never repeated. */
function tooLargeError(
	ctx: ClientContext,
	op: CatalogEntry,
	req: HttpRequest,
	ms: number,
	cause: unknown,
): TransportError {
	ctx.emit({ type: 'failure', opId: op.id, kind: 'too_large', ms });
	return new TransportError(
		op.id,
		'too_large',
		`the answer is larger than ${req.maxResponseBytes ?? ctx.maxResponseBytes} bytes (maxResponseBytes): not read further`,
		{ maybeApplied: true, cause },
	);
}

/**
 * The call's turn in the budget: taken at once when it is free (nothing to wait for: no promise), else a promise of
 * it; BudgetDeferredError when its (or the call's) deadline comes first.
 */
export function turn(
	ctx: ClientContext,
	op: CatalogEntry,
	o: CallOptions,
	deadline: number | undefined,
): Promise<void> | undefined {
	const { budget, opts } = ctx;
	if (!budget) return undefined;
	const cls = o.priority ?? opts.priorityOf?.(op) ?? defaultClassOf(op);
	const until = earliest(o.budgetDeadline, deadline);
	if (!budget.tryAcquire(cls, opts.budgetKey, until)) return queuedTurn(ctx, op, o, cls, until);
	ctx.onEvent?.({ type: 'budget', opId: op.id, cls, budget: ctx.budgetName, waitMs: 0, granted: true });
	return undefined;
}

async function queuedTurn(
	ctx: ClientContext,
	op: CatalogEntry,
	o: CallOptions,
	cls: PriorityClass,
	deadline: number | undefined,
): Promise<void> {
	const { budget, opts, now } = ctx;
	const t0 = now();
	const ok = await budget?.acquire(cls, { key: opts.budgetKey, deadline, since: o.budgetSince });
	ctx.onEvent?.({ type: 'budget', opId: op.id, cls, budget: ctx.budgetName, waitMs: now() - t0, granted: ok === true });
	if (!ok) throw new BudgetDeferredError(op.id, cls);
}

/** A rate-limited answer: its retry hint (ms) pauses the budget, and the host hears of it. */
export function refused(
	ctx: ClientContext,
	op: CatalogEntry,
	res: HttpResponse,
	env: Envelope | undefined,
): number | undefined {
	const hint = retryAfterMs(res.headers, ctx.now());
	ctx.onEvent?.({
		type: 'refused',
		opId: op.id,
		status: res.status,
		code: env?.code,
		retryAfterMs: hint,
		budget: ctx.budgetName,
	});
	if (ctx.budget && hint !== undefined) {
		ctx.budget.pauseUntil(ctx.now() + hint);
		ctx.opts.onRetryHint?.(hint);
	}
	return hint;
}

/**
 * A refused token (api/tokenRefusal.ts) on a call that got its token from this client: the reason to renew it
 * once and send again, or undefined.
 */
export function refusalOf(
	ctx: ClientContext,
	op: CatalogEntry,
	status: number,
	env: Envelope | undefined,
	token: string | undefined,
	o: CallOptions,
): TokenRefusal | undefined {
	const { tokens } = ctx;
	if (op.auth !== 'access_token' || !tokens || o.accessToken || token === undefined) return undefined;
	// code 0 is never a refusal (tokenRefusal's second rule): the common answer builds nothing
	if (status !== 401 && env?.code === 0) return undefined;
	return tokenRefusal({
		status,
		code: env?.code,
		msg: env?.msg,
		authFailureCodes: ctx.authCodes,
		otherCodes: ctx.rateCodes,
		safety: op.safety,
		unverified: tokens.isUnverified(token),
	});
}
