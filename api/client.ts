import { GUARDED_FIELDS, guardedEntries, callIssues, type BlastRadiusPolicy } from './blastRadius';
import { catalog, getOperation, type OperationId } from './catalog/index';
import type { CatalogEntry } from './catalog/types';
import { encodeRequest } from './encode';
import {
	ApiError,
	BlastRadiusError,
	SecurityServiceError,
	TransportError,
	ValidationError,
	type FieldIssue,
} from './errors';
import { MAX_BODY_STRING, MAX_LIST, MAX_QUERY_STRING, MAX_RESPONSE_BYTES, sizeIssues } from './limits';
import { redactText } from './redact';
import { defaultClassOf, retryAfterMs, type PriorityClass, type RateBudget } from './rateBudget';
import { backoffMs, sleep as defaultSleep } from './time';
import { createOwnAddressLookup, type OwnAddress } from './ownAddresses';
import { tokenRefusal, type RenewalReason, type TokenRefusal } from './tokenRefusal';
import {
	MemoryTokenStore,
	TokenManager,
	parseConnectRedirect,
	type Credentials,
	type TokenResult,
	type TokenStore,
} from './tokens';
import type { HttpRequest, HttpResponse, Transport, TransportThrown } from './transport/types';
import type { OperationParams, OperationResults } from './types.generated';

/**
 * The client: call(operationId, params) → validate (catalog zod) → encode → transport → envelope → result (catalog zod).
 * One path for every operation and both hosts (undici in the worker, n8n's request helpers in the nodes).
 */

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
}

/** A call whose turn in the request budget did not come before its `budgetDeadline`: nothing was sent. */
export class BudgetDeferredError extends SecurityServiceError {
	constructor(opId: string, cls: PriorityClass) {
		super(opId, `no turn in the request budget (class ${cls}) before the call's deadline; nothing was sent`);
		this.name = 'BudgetDeferredError';
	}
}

/** Parameters of an operation, as a caller may pass them (generated from the catalog: api/types.generated.ts). */
export type ParamsOf<Id extends OperationId> = OperationParams[Id];
/** What `call` resolves with for an operation (generated from the catalog's result schemas). */
export type ResultOf<Id extends OperationId> = OperationResults[Id];

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

/**
 * The override of the guard's widest-prefix rule, given with the parameters of a blocking operation (so it travels
 * through activities, `secsvc call` and n8n alike, and is recorded where the call is: Temporal history, n8n
 * output): `allowWideBlock: { reason, by? }`. Never sent to the service.
 */
export const OVERRIDE_PARAM = 'allowWideBlock';
export interface WideBlockOverride {
	reason: string;
	by?: string;
}

/** The override given with `params` (checked: a reason is required), and the parameters without it. */
export function splitOverride(
	op: CatalogEntry,
	params: Record<string, unknown>,
): { params: Record<string, unknown>; override?: WideBlockOverride } {
	const given = params[OVERRIDE_PARAM] as Partial<WideBlockOverride> | string | boolean | null | undefined;
	const rest = { ...params };
	delete rest[OVERRIDE_PARAM];
	if (given === undefined || given === null || given === false || (typeof given === 'string' && !given.trim()))
		return { params: rest };
	const o = typeof given === 'string' ? { reason: given } : given;
	const issues: FieldIssue[] = [];
	if (!guardedOp(op.id))
		issues.push({
			field: OVERRIDE_PARAM,
			rule: 'is only for operations that add address entries (IP blacklist add, IP whitelist add, HTTP filters)',
		});
	else if (!o || typeof o !== 'object' || typeof o.reason !== 'string' || !o.reason.trim())
		issues.push({
			field: `${OVERRIDE_PARAM}.reason`,
			rule: 'is required: say why a block wider than the widest prefix is needed (it is recorded)',
		});
	else if (o.reason.length > 500)
		issues.push({ field: `${OVERRIDE_PARAM}.reason`, rule: 'must be at most 500 characters' });
	else if (o.by !== undefined && (typeof o.by !== 'string' || o.by.length > 200))
		issues.push({ field: `${OVERRIDE_PARAM}.by`, rule: 'must be text of at most 200 characters' });
	if (issues.length) throw new ValidationError(op.id, issues);
	const ok = o as WideBlockOverride;
	return { params: rest, override: { reason: ok.reason.trim(), ...(ok.by ? { by: ok.by } : {}) } };
}

const guardedOp = (opId: string) => opId in GUARDED_FIELDS;

/** The guard on parsed parameters: ValidationError naming the field, the rule and the conflicting range. */
function guard(
	op: CatalogEntry,
	parsed: Record<string, unknown>,
	policy: BlastRadiusPolicy,
	given?: Record<string, unknown>,
): void {
	const issues = callIssues(op.id, parsed, policy, given);
	if (issues.length)
		throw new BlastRadiusError(
			op.id,
			issues.map((i) => ({ field: i.field, rule: i.rule })),
		);
}

/**
 * Validation shared by every host. Throws ValidationError naming each field and rule. Blocking operations also pass
 * the blast-radius guard (api/blastRadius.ts) with `policy` (default: widest prefix /16, special ranges).
 */
export function validateParams(
	op: CatalogEntry,
	params: Record<string, unknown> = {},
	policy: BlastRadiusPolicy = {},
): Record<string, unknown> {
	if (typeof params !== 'object' || params === null || Array.isArray(params))
		throw new ValidationError(op.id, [{ field: '(request)', rule: 'must be an object of named parameters' }]);
	const split = splitOverride(op, stripEmpty(params));
	const given = split.params;
	const oversize = sizeProblems(op, given);
	if (oversize.length) throw new ValidationError(op.id, oversize);
	const parsed = op.request.safeParse(given);
	if (parsed.success) {
		guard(op, parsed.data, { ...policy, allowWideBlock: split.override ?? policy.allowWideBlock }, given);
		return parsed.data;
	}
	const issues: FieldIssue[] = parsed.error.issues.map((i) => ({
		field: i.path.length ? i.path.map(String).join('.') : '(request)',
		rule: i.message,
	}));
	throw new ValidationError(op.id, dedupe(issues));
}

/**
 * Size bounds checked before the schema runs (a 3 MB id or a 10⁶-entry list gets one short issue, not a slow parse
 * and a huge message): strings in the URL (path, query) ≤ MAX_QUERY_STRING, in a body ≤ MAX_BODY_STRING; lists ≤
 * MAX_LIST entries; field names ≤ 200 characters.
 */
function sizeProblems(op: CatalogEntry, params: Record<string, unknown>): FieldIssue[] {
	const out: FieldIssue[] = [];
	const inUrl = op.encoding === 'query' || op.encoding === 'redirect';
	for (const [k, v] of Object.entries(params)) {
		if (k.length > 200) {
			out.push({ field: '(request)', rule: `unknown field with a name of ${k.length} characters` });
			continue;
		}
		const f = op.fields.find((x) => x.name === k);
		const url = inUrl || f?.in === 'path' || f?.in === 'query';
		out.push(
			...sizeIssues(v, {
				path: k,
				maxString: url ? MAX_QUERY_STRING : MAX_BODY_STRING,
				maxList: MAX_LIST,
				maxDepth: 8,
			}),
		);
	}
	return out;
}

/** Undefined and null mean "not given"; n8n and JSON plans produce both. */
function stripEmpty(params: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== null) out[k] = v;
	return out;
}

function dedupe(issues: FieldIssue[]): FieldIssue[] {
	const seen = new Set<string>();
	return issues.filter((i) => {
		const k = `${i.field}\u0000${i.rule}`;
		if (seen.has(k)) return false;
		seen.add(k);
		return true;
	});
}

/** A failed own-address lookup: the block is refused (nothing was sent), with the lookup's failure named. */
function ownLookupFailed(opId: string, err: unknown): SecurityServiceError {
	const why = `could not read the site's own addresses to check the block (${err instanceof Error ? err.message : String(err)}); nothing was sent`;
	// The service's own answer (e.g. `site_id: site '99999' does not exist`) comes first: hosts label its field.
	if (err instanceof ApiError)
		return new ApiError(opId, err.code, `${err.msg} (read to check the site's own addresses; nothing was sent)`);
	const t = err instanceof TransportError ? err : undefined;
	return new TransportError(opId, t?.kind ?? 'network', why, { status: t?.status, maybeApplied: false, cause: err });
}

/** HTTP 4xx other than 408 (timeout) and 429 (rate limited): the service refused the request as such. */
export const isClientRefusal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429;

const NOT_JSON = Symbol('not-json');
function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return NOT_JSON;
	}
}

interface Envelope {
	code: number;
	msg: string;
	result?: unknown;
}

export function createClient(opts: ClientOptions): Client {
	const timeoutMs = opts.timeoutMs ?? 15_000;
	const retries = opts.retries ?? 3;
	const backoff = opts.backoff ?? { baseMs: 200, maxMs: 5_000 };
	const authCodes = new Set(opts.authFailureCodes ?? DEFAULT_AUTH_FAILURE_CODES);
	const rateCodes = new Set(opts.rateLimitCodes ?? DEFAULT_RATE_LIMIT_CODES);
	const sleep = opts.sleep ?? defaultSleep;
	const now = opts.now ?? Date.now;
	const random = opts.random ?? Math.random;
	const onEvent = opts.onEvent;
	const emit = onEvent ?? (() => {});
	const baseUrl = opts.baseUrl.replace(/\/+$/, '');
	const br = opts.blastRadius ?? {};
	const policy: BlastRadiusPolicy = { widestPrefix: br.widestPrefix, protectedRanges: br.protectedRanges };
	const ownLookup = br.ownAddresses === 'lookup' ? createOwnAddressLookup(now, br.ownAddressTtlMs) : undefined;
	const maxResponseBytes = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES;
	const budget = opts.rateBudget;
	const budgetName = opts.budgetKey !== undefined && budget?.settings.tenant ? `tenant:${opts.budgetKey}` : 'app';
	const tokenLimit = {
		retries: Math.max(0, (opts.tokenAttempts ?? 2) - 1),
		budgetMs: opts.tokenBudgetMs ?? 2 * timeoutMs,
	};

	const tokens =
		opts.tokenManager ??
		(opts.credentials
			? new TokenManager({
					credentials: opts.credentials,
					store: opts.tokenStore ?? new MemoryTokenStore(),
					storeKey: opts.tokenStoreKey ?? `${baseUrl}|${opts.credentials.appId}|${opts.credentials.tokenKind}`,
					skewSeconds: opts.expirySkewSeconds ?? 60,
					now,
					onRenew: (reason) => emit({ type: 'token', kind: (opts.credentials as Credentials).tokenKind, reason }),
					fetchToken: (kind, refreshToken, deadline) => {
						const c = opts.credentials as Credentials;
						const limit = { retries: tokenLimit.retries, deadline: earliest(now() + tokenLimit.budgetMs, deadline) };
						return kind === 'app'
							? (call(
									'authorization.appToken',
									{ app_id: c.appId, secret: c.secret },
									{},
									limit,
								) as Promise<TokenResult>)
							: (call(
									'authorization.refreshToken',
									{ app_id: c.appId, refresh_token: refreshToken },
									{},
									limit,
								) as Promise<TokenResult>);
					},
				})
			: undefined);

	/** Sends one request; `answered` (default: emit the response event) gets the answer and its round-trip time. */
	async function send(
		op: CatalogEntry,
		req: HttpRequest,
		attempt: number,
		answered?: (res: HttpResponse, ms: number) => void,
	): Promise<HttpResponse> {
		// The redacted URL is only built for a listener (it is the client's largest per-call cost otherwise).
		if (onEvent) onEvent({ type: 'request', opId: op.id, method: req.method, url: redactText(req.url), attempt });
		const t0 = now();
		let failure: unknown;
		let res: HttpResponse | undefined;
		try {
			res = await opts.transport(req);
		} catch (err) {
			failure = err ?? new Error('transport failed');
		}
		if (res === undefined) {
			// A host transport that obtains tokens itself (n8n) reports a refused token call as the client's own error.
			if (failure instanceof SecurityServiceError) throw failure;
			const t = (failure ?? {}) as TransportThrown & Error;
			if (t.tooLarge) throw tooLargeError(op, req, now() - t0, failure);
			const timeout = Boolean(t.timeout) || t.name === 'TimeoutError' || t.name === 'AbortError';
			emit({ type: 'failure', opId: op.id, kind: timeout ? 'timeout' : 'network', ms: now() - t0 });
			throw new TransportError(
				op.id,
				timeout ? 'timeout' : 'network',
				timeout ? `no answer within ${req.timeoutMs} ms` : `network failure: ${t.message ?? String(failure)}`,
				{
					maybeApplied: t.sent !== false,
					cause: failure,
				},
			);
		}
		if (answered) answered(res, now() - t0);
		else emit({ type: 'response', opId: op.id, status: res.status, ms: now() - t0 });
		return res;
	}

	/** An answer past `maxResponseBytes`: the service did answer (a write may have been applied); never repeated. */
	function tooLargeError(op: CatalogEntry, req: HttpRequest, ms: number, cause: unknown): TransportError {
		emit({ type: 'failure', opId: op.id, kind: 'too_large', ms });
		return new TransportError(
			op.id,
			'too_large',
			`the answer is larger than ${req.maxResponseBytes ?? maxResponseBytes} bytes (maxResponseBytes): not read further`,
			{ maybeApplied: true, cause },
		);
	}

	function decode(op: CatalogEntry, res: HttpResponse): Envelope {
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
		return { code: env.code, msg: typeof env.msg === 'string' ? env.msg : '', result: env.result };
	}

	function parseResult(op: CatalogEntry, result: unknown): unknown {
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

	function retryable(op: CatalogEntry, err: unknown): string | undefined {
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

	/**
	 * A refused token (api/tokenRefusal.ts) on a call that got its token from this client: the reason to renew it
	 * once and send again, or undefined.
	 */
	function refusalOf(
		op: CatalogEntry,
		status: number,
		env: Envelope | undefined,
		token: string | undefined,
		o: CallOptions,
	): TokenRefusal | undefined {
		if (op.auth !== 'access_token' || !tokens || o.accessToken || token === undefined) return undefined;
		return tokenRefusal({
			status,
			code: env?.code,
			msg: env?.msg,
			authFailureCodes: authCodes,
			otherCodes: rateCodes,
			safety: op.safety,
			unverified: tokens.isUnverified(token),
		});
	}

	/** Waits for the call's turn in the budget; BudgetDeferredError when its (or the call's) deadline comes first. */
	async function turn(op: CatalogEntry, o: CallOptions, deadline: number | undefined): Promise<void> {
		const b = budget as RateBudget;
		const cls = o.priority ?? opts.priorityOf?.(op) ?? defaultClassOf(op);
		const t0 = now();
		const ok = await b.acquire(cls, { key: opts.budgetKey, deadline: earliest(o.budgetDeadline, deadline) });
		if (onEvent) onEvent({ type: 'budget', opId: op.id, cls, budget: budgetName, waitMs: now() - t0, granted: ok });
		if (!ok) throw new BudgetDeferredError(op.id, cls);
	}

	/** A rate-limited answer: its retry hint (ms) pauses the budget, and the host hears of it. */
	function refused(op: CatalogEntry, res: HttpResponse, env: Envelope | undefined): number | undefined {
		const hint = retryAfterMs(res.headers, now());
		if (onEvent)
			onEvent({
				type: 'refused',
				opId: op.id,
				status: res.status,
				code: env?.code,
				retryAfterMs: hint,
				budget: budgetName,
			});
		if (budget && hint !== undefined) {
			budget.pauseUntil(now() + hint);
			opts.onRetryHint?.(hint);
		}
		return hint;
	}

	/**
	 * Retries for this call and its deadline: the client's (`callTimeoutMs` from the call's start), or the token
	 * step's and the lookup's smaller count and deadline within their caller's.
	 */
	type Limit = { retries: number; deadline?: number };

	/** Everything checked before a request is sent: the catalog's rules and the whole blast-radius guard. */
	async function checked(
		op: CatalogEntry,
		params: Record<string, unknown>,
		o: CallOptions,
		deadline?: number,
	): Promise<Record<string, unknown>> {
		const valid = validateParams(op, params, policy);
		await guardWithOwnAddresses(op, valid, params, o, deadline);
		return valid;
	}

	async function call(
		opId: string,
		params: Record<string, unknown> = {},
		o: CallOptions = {},
		outer: Limit = { retries },
	): Promise<unknown> {
		const op = getOperation(opId);
		if (op.encoding === 'redirect') throw new Error(`${opId} answers with a redirect: use client.connect()`);
		// One deadline for the whole call, handed down to its lookup, token requests, budget wait and every attempt.
		const own = opts.callTimeoutMs === undefined ? undefined : now() + opts.callTimeoutMs;
		const limit: Limit = { retries: outer.retries, deadline: earliest(outer.deadline, own) };
		const valid = await checked(op, params, o, limit.deadline);
		let authRetried = false;
		let attempt = 0;
		let token: string | undefined;
		for (;;) {
			let failure: unknown;
			let hint: number | undefined;
			try {
				if (op.auth === 'access_token') {
					if (o.accessToken) token = o.accessToken;
					else if (!tokens) throw new Error(`${opId}: no credentials configured to obtain an access token`);
					else token = await tokens.getToken({ deadline: limit.deadline });
				}
				if (budget) await turn(op, o, limit.deadline);
				const req = encodeRequest(op, valid, {
					baseUrl,
					accessToken: token,
					timeoutMs: timeoutWithin(limit),
					maxResponseBytes,
				});
				let ms = 0;
				const res = await send(op, req, attempt, (_r, t) => void (ms = t));
				let env: Envelope | undefined;
				try {
					// HTTP 401 is a refused token whatever the body (decoded below when no renewal is left)
					if (res.status !== 401) env = decode(op, res);
				} finally {
					// the envelope's code (0 = success) when there is one: what an operator counts requests by
					if (onEvent) onEvent({ type: 'response', opId: op.id, status: res.status, code: env?.code, ms });
					if (res.status === 429 || (env !== undefined && rateCodes.has(env.code))) hint = refused(op, res, env);
				}
				const refusal = authRetried ? undefined : refusalOf(op, res.status, env, token, o);
				if (refusal) {
					// One fresh token (shared by every call refused with the same token), one retry: safe by refusalOf.
					authRetried = true;
					await (tokens as TokenManager).getToken({
						force: true,
						rejected: token,
						reason: refusal,
						deadline: limit.deadline,
					});
					continue;
				}
				env ??= decode(op, res);
				if (env.code === 0) {
					if (token !== undefined) tokens?.accepted(token);
					return parseResult(op, env.result);
				}
				failure = new ApiError(opId, env.code, env.msg);
			} catch (err) {
				failure = err;
			}
			const reason = attempt < limit.retries ? retryable(op, failure) : undefined;
			if (!reason) throw failure;
			// With a budget, the retry waits for the hint through the budget's pause (and its own turn).
			const delayMs = budget && hint !== undefined ? 0 : backoffMs(attempt, backoff.baseMs, backoff.maxMs, random);
			if (limit.deadline !== undefined && now() + delayMs >= limit.deadline) throw failure;
			emit({ type: 'retry', opId, attempt: attempt + 1, delayMs, reason });
			attempt++;
			await sleep(delayMs);
		}
	}

	/**
	 * The guard's I/O part, before anything is sent: the site's own addresses (when looked up) and the declared ranges
	 * (when the host has them only at call time), and the audit event of an override that was needed. A failed read
	 * refuses the block.
	 */
	async function guardWithOwnAddresses(
		op: CatalogEntry,
		valid: Record<string, unknown>,
		params: Record<string, unknown>,
		o: CallOptions,
		deadline: number | undefined,
	): Promise<void> {
		const entries = guardedEntries(op.id, valid);
		if (!entries.length) return;
		const { override, params: given } = splitOverride(op, stripEmpty(params));
		// the site's own addresses matter to what blocks only (letting them through is no risk to the site)
		const site = typeof valid.site_id === 'string' ? valid.site_id : undefined;
		const blocks = entries.some((e) => e.side === 'block');
		if (blocks && ((ownLookup && site) || br.declaredRanges)) {
			let own: OwnAddress[] = [];
			let declared: readonly OwnAddress[] = [];
			try {
				// The whole lookup within one timeout: a service that does not answer refuses the block in bounded time.
				const lookupLimit: Limit = { retries, deadline: earliest(now() + timeoutMs, deadline) };
				[own, declared] = await Promise.all([
					ownLookup && site
						? ownLookup(site, (id, p) => call(id, p, { accessToken: o.accessToken, signal: o.signal }, lookupLimit))
						: [],
					br.declaredRanges?.() ?? [],
				]);
			} catch (err) {
				throw ownLookupFailed(op.id, err);
			}
			const protectedRanges = [...(policy.protectedRanges ?? []), ...declared];
			guard(op, valid, { ...policy, protectedRanges, ownAddresses: own, allowWideBlock: override }, given);
		}
		if (override) {
			const wide = callIssues(op.id, valid, { widestPrefix: policy.widestPrefix }, given).filter(
				(i) => i.kind === 'widest-prefix',
			);
			if (wide.length)
				emit({
					type: 'override',
					opId: op.id,
					rule: 'widest-prefix',
					entries: wide.map((i) => i.conflict),
					reason: override.reason,
					by: override.by,
				});
		}
	}

	/** The request timeout: the client's, cut to what is left of a deadline (at least 1 ms). */
	function timeoutWithin(limit: Limit): number {
		return limit.deadline === undefined ? timeoutMs : Math.max(1, Math.min(timeoutMs, limit.deadline - now()));
	}

	async function connect(params: Record<string, unknown>): Promise<{ code: string; state: string }> {
		const op = getOperation('authorization.connect');
		const valid = validateParams(op, params);
		const res = await send(op, encodeRequest(op, valid, { baseUrl, timeoutMs, maxResponseBytes }), 0);
		const location = res.headers.location ?? res.headers.Location;
		if (res.status < 300 || res.status >= 400 || !location) {
			const env = parseJson(res.body) as Partial<Envelope> | typeof NOT_JSON;
			if (env !== NOT_JSON && typeof env?.code === 'number' && env.code !== 0)
				throw new ApiError(op.id, env.code, env.msg ?? '');
			throw new TransportError(op.id, 'http', `expected a redirect, got HTTP ${res.status}`, {
				status: res.status,
				maybeApplied: false,
			});
		}
		return parseConnectRedirect(location, String(valid.state));
	}

	// The ops tree (a function per catalog operation) is built on first use: a host holding many clients that only
	// `call` (the worker's one client per tenant) does not pay for it per client.
	let opsTree: OpsTree | undefined;
	const client: Client = {
		call: call as Client['call'],
		validate: ((opId: string, params?: Record<string, unknown>) =>
			validateParams(getOperation(opId), params, policy)) as Client['validate'],
		check: (opId, params = {}, o = {}) =>
			checked(getOperation(opId), params, o, opts.callTimeoutMs === undefined ? undefined : now() + opts.callTimeoutMs),
		get ops() {
			return (opsTree ??= buildOpsTree(call));
		},
		connect,
		tokens,
		options: { baseUrl, timeoutMs, retries },
	};
	return client;
}

/** The earlier of two deadlines (ms since epoch), either of which may be unset. */
const earliest = (a: number | undefined, b: number | undefined) =>
	a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** Octokit-style: methods derived from the catalog's dotted ids. */
function buildOpsTree(call: (id: string, p?: Record<string, unknown>, o?: CallOptions) => Promise<unknown>): OpsTree {
	const root: Record<string, unknown> = {};
	for (const op of catalog) {
		const parts = op.id.split('.');
		let node = root;
		for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
		node[parts[parts.length - 1]] = (params?: Record<string, unknown>, o?: CallOptions) => call(op.id, params, o);
	}
	return root as unknown as OpsTree;
}
