import type { CatalogEntry } from './catalog/types';
import type { OperationId } from './catalog/index';
import type { OwnAddress } from './ownAddresses';
import type { PriorityClass, RateBudget } from './rateBudget';
import type { RenewalReason } from './tokenRefusal';
import type { Credentials, TokenManager, TokenStore } from './tokens';
import type { Transport } from './transport/types';
import type { OperationParams, OperationResults } from './types.generated';

/** The client's options, events and typed surface (api/client.ts builds it). */

/**
 * Codes that mean "the token is expired or rejected". The spec lists no codes (§7); the default matches the
 * simulator's documented codes and is configurable per client / credential. Other codes whose message speaks of the
 * token count too (api/tokenRefusal.ts).
 */
export const DEFAULT_AUTH_FAILURE_CODES: readonly number[] = [40101];
/** Codes that mean "rate limited, not applied" (HTTP 429 always counts). Configurable. */
export const DEFAULT_RATE_LIMIT_CODES: readonly number[] = [42901];

export interface ClientOptions {
	baseUrl: string;
	transport: Transport;
	credentials?: Credentials;
	tokenStore?: TokenStore;
	/** Store key; defaults to `<baseUrl>|<appId>|<tokenKind>`. */
	tokenStoreKey?: string;
	/** Where access tokens come from instead of the client's own (the worker's cluster tenant tokens); needs `credentials` for its kind. */
	tokenManager?: TokenManager;
	/** One request's TOTAL time (connect, headers, body); cut to what is left of the call's `callTimeoutMs`. */
	timeoutMs?: number;
	/**
	 * The longest one call takes, everything included: the guard's own-address lookup, every attempt and back-off,
	 * its turn in the request budget and its token requests (the user's bound: the n8n nodes set it to `timeoutMs`).
	 * Unset (the worker: an activity's timeout bounds it): each attempt has `timeoutMs`, tokens `tokenBudgetMs`.
	 */
	callTimeoutMs?: number;
	/** Extra attempts for retryable failures (reads, token calls, rate limiting, requests never sent). */
	retries?: number;
	backoff?: { baseMs: number; maxMs: number };
	authFailureCodes?: readonly number[];
	rateLimitCodes?: readonly number[];
	/** Renew tokens this many seconds before `expires_in` runs out. */
	expirySkewSeconds?: number;
	/**
	 * Getting a token for one call: at most this many token requests (default 2), all within `tokenBudgetMs`
	 * (default twice `timeoutMs`) and what is left of the call's `callTimeoutMs`. A token failure is never repeated by
	 * the call's own retries.
	 */
	tokenAttempts?: number;
	tokenBudgetMs?: number;
	/** Largest answer read, in bytes (default MAX_RESPONSE_BYTES, api/limits.ts); a larger one fails, never repeated. */
	maxResponseBytes?: number;
	sleep?: (ms: number) => Promise<void>;
	now?: () => number;
	random?: () => number;
	/** Observability hook; events carry no secrets. */
	onEvent?: (e: ClientEvent) => void;
	/** The blast-radius guard's settings (api/blastRadius.ts); the guard itself is always on. */
	blastRadius?: BlastRadiusOptions;
	/**
	 * The request budget (api/rateBudget.ts): every request (retries and token requests too) waits for its turn in
	 * its priority class; a refusal with a retry hint pauses it. Unset: no budget (requests go at once, a refusal is
	 * only retried with back-off).
	 */
	rateBudget?: RateBudget;
	/** The tenant whose budget this client's requests also spend (with `rateBudget`). */
	budgetKey?: string;
	/** The class of a call whose options name none (e.g. from the activity that makes it); else api/rateBudget.ts defaultClassOf. */
	priorityOf?: (op: CatalogEntry) => PriorityClass | undefined;
	/** A rate-limited answer with a retry hint (ms), after the budget paused (the host tells the rest of its cluster). */
	onRetryHint?: (retryAfterMs: number) => void;
}

export interface BlastRadiusOptions {
	/** Widest prefix a block may have (default 16). */
	widestPrefix?: number;
	/** Configured protected ranges (credential, worker configuration), each with where it was configured. */
	protectedRanges?: readonly OwnAddress[];
	/**
	 * `lookup`: before a blocking write, read the site's own addresses from the service (api/ownAddresses.ts; cached
	 * per site) and refuse a block that overlaps one; a failed lookup refuses the block. `off` (default of a bare
	 * client): only the addresses a caller passes. The n8n nodes and the worker use `lookup`.
	 */
	ownAddresses?: 'lookup' | 'off';
	ownAddressTtlMs?: number;
	/**
	 * Protected ranges known only when a block is checked (n8n with a cluster token: the tenant's declared ones, which
	 * come with its token). Read before a blocking write; a failure refuses the block like a failed lookup.
	 */
	declaredRanges?: () => Promise<readonly OwnAddress[]>;
}

export type ClientEvent =
	| { type: 'request'; opId: string; method: string; url: string; attempt: number }
	/** An answer: HTTP status and, when it is the documented envelope, its `code` (0 = success). */
	| { type: 'response'; opId: string; status: number; code?: number; ms: number }
	/** No usable answer (timeout, network failure, or an answer past maxResponseBytes). */
	| { type: 'failure'; opId: string; kind: 'timeout' | 'network' | 'too_large'; ms: number }
	| { type: 'retry'; opId: string; attempt: number; delayMs: number; reason: string }
	/** A token request (one per renewal however many calls wait for it), and why: api/tokenRefusal.ts. */
	| { type: 'token'; kind: 'app' | 'user'; reason: RenewalReason }
	/** A block or allowed entry wider than the widest prefix, sent under an explicit override (the audit record; no secrets). */
	| { type: 'override'; opId: string; rule: 'widest-prefix'; entries: string[]; reason: string; by?: string }
	/** A request's wait for its turn in the budget (rateBudget); `granted: false` when its deadline came first. */
	| { type: 'budget'; opId: string; cls: PriorityClass; budget: string; waitMs: number; granted: boolean }
	/** The service refused a request for its rate (HTTP 429 or a rate-limit code), with its retry hint if any. */
	| { type: 'refused'; opId: string; status: number; code?: number; retryAfterMs?: number; budget: string };

export interface CallOptions {
	/** Override the access token (e.g. a user token obtained elsewhere). */
	accessToken?: string;
	signal?: AbortSignal;
	/** The call's priority class in the request budget (default: the client's `priorityOf`, else by the operation). */
	priority?: PriorityClass;
	/**
	 * With a budget: give up waiting for a turn at this time (ms since epoch) and throw BudgetDeferredError (nothing
	 * sent). The fleet watch uses it to stretch its interval instead of queueing polls past it.
	 */
	budgetDeadline?: number;
	/**
	 * With a budget: among the waiting calls of its class, a call whose `budgetSince` (ms since epoch) is earlier goes
	 * first (default: when it began waiting; a later time counts as now). The fleet watch passes when the site's check
	 * fell due, so the sites overdue longest get the turns whichever batch or watcher asks for them.
	 */
	budgetSince?: number;
}

/** `[params, options?]`, with `params` optional when the operation has no required field. */
export type CallArgs<Id extends OperationId> =
	Record<string, never> extends OperationParams[Id]
		? [params?: OperationParams[Id], o?: CallOptions]
		: [params: OperationParams[Id], o?: CallOptions];

/** `[params]` for `validate`, optional like in `CallArgs`. */
export type ValidateArgs<Id extends OperationId> =
	Record<string, never> extends OperationParams[Id] ? [params?: OperationParams[Id]] : [params: OperationParams[Id]];

/**
 * The loose form's id: any id only known at run time (`op.id: string` from n8n parameters, plans, …). A literal
 * operation id is accepted here only with deliberately loose parameters — a type with a string index signature
 * (`Record<string, unknown>`, n8n's `IDataObject`) — so a literal call with an object literal is always checked
 * against the generated types. (An explicit type argument, `call<T>(…)`, also selects the loose form.)
 */
export type LooseId<S extends string, P> = [S] extends [OperationId] ? (string extends keyof P ? S : never) : S;

/** One derived method: validates `params` against the catalog and resolves with the parsed result. */
export type OperationMethod<Id extends OperationId = OperationId> = (
	...args: CallArgs<Id>
) => Promise<OperationResults[Id]>;

type Head<S extends string> = S extends `${infer H}.${string}` ? H : S;
type Rest<S extends string, H extends string> = S extends `${H}.${infer R}` ? R : never;
/**
 * `'a.b.c' | 'a.d'` → `{ a: { b: { c: OperationMethod<'a.b.c'> }, d: OperationMethod<'a.d'> } }`: the ops tree,
 * typed from the ids; `P` is the id prefix walked so far.
 */
export type OpsTree<S extends string = OperationId, P extends string = ''> = {
	[H in Head<S>]: [Rest<S, H>] extends [never]
		? `${P}${H}` extends OperationId
			? OperationMethod<`${P}${H}`>
			: never
		: OpsTree<Rest<S, H>, `${P}${H}.`>;
};

export interface Client {
	/** Any operation by id: typed parameters and result from the catalog (api/types.generated.ts). */
	call<Id extends OperationId>(opId: Id, ...args: CallArgs<Id>): Promise<OperationResults[Id]>;
	/** An id known only at run time: checked against the catalog when called; parameters and result untyped. */
	call<T = unknown, S extends string = string, P extends Record<string, unknown> = Record<string, unknown>>(
		opId: LooseId<S, P>,
		params?: P,
		o?: CallOptions,
	): Promise<T>;
	/** Validates against the catalog; returns the parsed (normalised) parameters or throws ValidationError. */
	validate<Id extends OperationId>(opId: Id, ...args: ValidateArgs<Id>): Record<string, unknown>;
	validate<S extends string = string, P extends Record<string, unknown> = Record<string, unknown>>(
		opId: LooseId<S, P>,
		params?: P,
	): Record<string, unknown>;
	/**
	 * Everything `call` checks before it sends the request: the catalog's rules and the whole blast-radius guard,
	 * the site's own addresses included (the lookup's reads are the only requests). For a write made of several
	 * requests (IP Blacklist › Add with many entries), so that one refused entry stops it before the first write.
	 */
	check(opId: string, params?: Record<string, unknown>, o?: CallOptions): Promise<Record<string, unknown>>;
	/** Methods derived from the operation ids: `client.ops.applicationProtection.ipBlacklist.add({...})`. */
	ops: OpsTree;
	/** Runs the connect step of the user-token flow and checks the returned state. */
	connect(params: Record<string, unknown>): Promise<{ code: string; state: string }>;
	readonly tokens?: TokenManager;
	readonly options: Readonly<Required<Pick<ClientOptions, 'baseUrl' | 'timeoutMs' | 'retries'>>>;
}
