import type { BlastRadiusPolicy } from './blastRadius';
import {
	DEFAULT_AUTH_FAILURE_CODES,
	DEFAULT_RATE_LIMIT_CODES,
	type BlastRadiusOptions,
	type CallOptions,
	type ClientEvent,
	type ClientOptions,
} from './clientTypes';
import { MAX_RESPONSE_BYTES } from './limits';
import { createOwnAddressLookup } from './ownAddresses';
import type { RateBudget } from './rateBudget';
import { sleep as defaultSleep } from './time';
import { MemoryTokenStore, TokenManager, type Credentials, type TokenResult } from './tokens';

/** A client's settings with their defaults filled in, shared by its steps (api/clientCall.ts, api/clientSend.ts). */
export interface ClientContext {
	opts: ClientOptions;
	timeoutMs: number;
	retries: number;
	backoff: { baseMs: number; maxMs: number };
	authCodes: ReadonlySet<number>;
	rateCodes: ReadonlySet<number>;
	sleep: (ms: number) => Promise<void>;
	now: () => number;
	random: () => number;
	/** The host's listener; events that cost something to build are only built when there is one. */
	onEvent?: (e: ClientEvent) => void;
	emit: (e: ClientEvent) => void;
	baseUrl: string;
	br: BlastRadiusOptions;
	policy: BlastRadiusPolicy;
	ownLookup?: ReturnType<typeof createOwnAddressLookup>;
	maxResponseBytes: number;
	budget?: RateBudget;
	budgetName: string;
	tokens?: TokenManager;
}

/**
 * Retries for a call and its deadline: the client's (`callTimeoutMs` from the call's start), or the token step's and
 * the lookup's smaller count and deadline within their caller's.
 */
export type Limit = { retries: number; deadline?: number };

export type CallFn = (
	opId: string,
	params?: Record<string, unknown>,
	o?: CallOptions,
	outer?: Limit,
) => Promise<unknown>;

/** The earlier of two deadlines (ms since epoch), either of which may be unset. */
export const earliest = (a: number | undefined, b: number | undefined) =>
	a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** The request timeout: the client's, cut to what is left of a deadline (at least 1 ms). */
export const timeoutWithin = (ctx: ClientContext, limit: Limit): number =>
	limit.deadline === undefined ? ctx.timeoutMs : Math.max(1, Math.min(ctx.timeoutMs, limit.deadline - ctx.now()));

/** The settings with their defaults; `call` (the client's own, late-bound) is how tokens are requested. */
export function clientContext(opts: ClientOptions, call: CallFn): ClientContext {
	const timeoutMs = opts.timeoutMs ?? 15_000;
	const now = opts.now ?? Date.now;
	const emit = opts.onEvent ?? (() => {});
	const baseUrl = opts.baseUrl.replace(/\/+$/, '');
	const br = opts.blastRadius ?? {};
	const budget = opts.rateBudget;
	return {
		opts,
		timeoutMs,
		retries: opts.retries ?? 3,
		backoff: opts.backoff ?? { baseMs: 200, maxMs: 5_000 },
		authCodes: new Set(opts.authFailureCodes ?? DEFAULT_AUTH_FAILURE_CODES),
		rateCodes: new Set(opts.rateLimitCodes ?? DEFAULT_RATE_LIMIT_CODES),
		sleep: opts.sleep ?? defaultSleep,
		now,
		random: opts.random ?? Math.random,
		onEvent: opts.onEvent,
		emit,
		baseUrl,
		br,
		policy: { widestPrefix: br.widestPrefix, protectedRanges: br.protectedRanges },
		ownLookup: br.ownAddresses === 'lookup' ? createOwnAddressLookup(now, br.ownAddressTtlMs) : undefined,
		maxResponseBytes: opts.maxResponseBytes ?? MAX_RESPONSE_BYTES,
		budget,
		budgetName: opts.budgetKey !== undefined && budget?.settings.tenant ? `tenant:${opts.budgetKey}` : 'app',
		tokens:
			opts.tokenManager ?? (opts.credentials ? ownTokens(opts, opts.credentials, baseUrl, timeoutMs, call) : undefined),
	};
}

/** The client's own tokens: its token requests within `tokenAttempts` and `tokenBudgetMs` and the asking call's deadline. */
function ownTokens(
	opts: ClientOptions,
	c: Credentials,
	baseUrl: string,
	timeoutMs: number,
	call: CallFn,
): TokenManager {
	const now = opts.now ?? Date.now;
	const retries = Math.max(0, (opts.tokenAttempts ?? 2) - 1);
	const budgetMs = opts.tokenBudgetMs ?? 2 * timeoutMs;
	return new TokenManager({
		credentials: c,
		store: opts.tokenStore ?? new MemoryTokenStore(),
		storeKey: opts.tokenStoreKey ?? `${baseUrl}|${c.appId}|${c.tokenKind}`,
		skewSeconds: opts.expirySkewSeconds ?? 60,
		now,
		onRenew: (reason) => opts.onEvent?.({ type: 'token', kind: c.tokenKind, reason }),
		fetchToken: (kind, refreshToken, deadline) => {
			const limit = { retries, deadline: earliest(now() + budgetMs, deadline) };
			return (
				kind === 'app'
					? call('authorization.appToken', { app_id: c.appId, secret: c.secret }, {}, limit)
					: call('authorization.refreshToken', { app_id: c.appId, refresh_token: refreshToken }, {}, limit)
			) as Promise<TokenResult>;
		},
	});
}
