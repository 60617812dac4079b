// The simulator's options, its request log entry and its fault specs (simulator/README.md), and the defaults of the
// options the spec leaves open.
import { DEFAULT_MITIGATION, type MitigationModel } from './attacks.mts';
import type { FleetSpec } from './fleet.mts';
import type { RateLimitSpec } from './rateLimit.mts';
import type { AttackSpec } from './state.mts';

export type FaultKind = 'http5xx' | 'code' | 'delay' | 'lateAnswer' | 'reset' | 'ratelimit' | 'expireToken' | 'hang';
export interface FaultSpec {
	/** Operation id, or '*' for every vendor operation. */
	op: string;
	/** How many matching calls it affects (default 1). */
	count?: number;
	kind: FaultKind;
	/** Envelope code for `code` (default 50001); HTTP status for `http5xx` (default 503). */
	code?: number;
	status?: number;
	/** `ratelimit`: the answer's `Retry-After` header, seconds (none when unset). */
	retryAfterSeconds?: number;
	/** Delay for `delay` (before the call is processed) and `lateAnswer` (after; the answer waits) (default 1000 ms). */
	delayMs?: number;
	/** Only requests whose path contains this text (e.g. `/site/210003/`); default every request of `op`. */
	pathContains?: string;
	/** A time window instead of a count: every matching call for this many ms (simulator clock) from now, e.g. a rate-limit window. */
	forMs?: number;
}

export interface AttackScenarioItem extends Omit<AttackSpec, 'start' | 'site_id'> {
	site_id?: string;
	/** Seconds after the scenario is loaded (default 0); or `start` as an absolute unix time. */
	at?: number;
	start?: number;
}

export interface Scenario {
	seed?: number;
	/** N customers × sites on top of the seeded world (simulator/fleet.mts); attacks may name its sites. */
	fleet?: FleetSpec;
	attacks?: AttackScenarioItem[];
	flowDowns?: { site_id?: string; at?: number; duration?: number; router_name?: string }[];
}

export interface SimOptions {
	port?: number;
	host?: string;
	appId: string;
	secret: string;
	/** The app's registered host URL; redirect_uri must share its domain (default https://app.example.com). */
	registeredHost?: string;
	seed?: number;
	scenario?: Scenario;
	/** 'real' (default): wall clock plus advances; 'manual': only moves through advance(). */
	clock?: 'real' | 'manual';
	/** Simulated start time, unix ms (manual default: 2025-01-15T12:00:00Z; real default: now). */
	startTime?: number;
	/** Seconds; 7200 per spec. */
	tokenTtl?: number;
	/** Authorization code lifetime, seconds (spec silent; default 300). */
	codeTtl?: number;
	/** Refresh token lifetime, seconds (spec silent; default 30 days). */
	refreshTtl?: number;
	/** Revoke the old access token when a refresh happens (spec silent; default false). */
	revokeAccessOnRefresh?: boolean;
	/**
	 * The answer to an unknown, revoked or expired access token (spec silent, §7 lists no codes). Default: code 40101
	 * with "access_token: invalid token" / "access_token: token expired". Set to rehearse a service that uses other
	 * codes, e.g. `{ code: 40001, msg: 'invalid access_token' }`.
	 */
	droppedTokenAnswer?: { code: number; msg: string };
	/** Customers per page of GET /api/spe/customers (spec silent; default 10). */
	pageSize?: number;
	/** How long an HTTP filter create/edit holds its domain-port (real ms; default 50). */
	httpFilterProcessingMs?: number;
	/** 'reject' (default): names the operation does not know are a validation error; 'ignore'. */
	unknownFields?: 'reject' | 'ignore';
	/** Require the declared content type (default true). */
	strictContentType?: boolean;
	/** X-Forwarded-For rule set: 'legacy' (default, 4 modes) or '2023.2.6' (no 'secure'). */
	portalVersion?: 'legacy' | '2023.2.6';
	/** POST ip-black-list without ip_black_list: reject (default true) or accept as a no-op. */
	ipBlacklistAddRequiresEntry?: boolean;
	/** DELETE ip-black-list without ip_black_list: 'reject' (default) or 'clear' the list. */
	ipBlacklistDeleteWithoutList?: 'reject' | 'clear';
	/** Accept type=icmp in detection/policy (the spec's type list omits icmp; default true). */
	acceptIcmpType?: boolean;
	/** Maximum `num` of ddos_events (spec silent; default 100). */
	maxEventsNum?: number;
	maxOtherIpRange?: number;
	/** Which token kinds an operation accepts (spec §5.6 silent): opId -> kinds. Default: every kind everywhere. */
	tokenKinds?: Record<string, ('app' | 'user')[]>;
	/**
	 * Tenancy (§5.3/§5.4, our reading; simulator/README.md "Tenancy"): 'lenient' (default) lets any valid token reach
	 * anything; 'strict': a user token reaches only its own customer's sites and OP paths (no customer list), the app
	 * token only the portal operations (customer list and detail); anything else is refused with 40302.
	 */
	tenancy?: 'lenient' | 'strict';
	/** Request log capacity (oldest dropped first; default 10000). */
	logLimit?: number;
	mitigation?: Partial<MitigationModel>;
	/** A fleet of customers × sites added to the seeded world (simulator/fleet.mts; also a scenario's `fleet`). */
	fleet?: FleetSpec;
	/** A request rate limit per app and optionally per tenant (simulator/rateLimit.mts); off when unset. */
	rateLimit?: RateLimitSpec;
}

export type ResolvedOptions = Required<
	Omit<
		SimOptions,
		| 'port'
		| 'host'
		| 'scenario'
		| 'seed'
		| 'startTime'
		| 'mitigation'
		| 'tokenKinds'
		| 'fleet'
		| 'tenancy'
		| 'droppedTokenAnswer'
		| 'rateLimit'
	>
> & {
	tenancy: 'lenient' | 'strict';
	seed: number;
	droppedTokenAnswer?: { code: number; msg: string };
	mitigation: MitigationModel;
	tokenKinds: Record<string, ('app' | 'user')[]>;
};

export interface TokenRec {
	kind: 'app' | 'user';
	customer_id?: string;
	/** Simulator clock, unix ms: valid until `expires_in` seconds have elapsed since issue (spec: 7200 s elapsed). */
	expiresAtMs: number;
}

export interface LogEntry {
	seq: number;
	/** Simulator clock, unix ms. */
	time: number;
	opId: string | null;
	method: string;
	path: string;
	query: Record<string, string | string[]>;
	body: unknown;
	status: number;
	code: number | null;
	fault?: FaultKind;
	/** Real clock (unix ms) when the request reached the simulator, before its body was read. */
	recvAt?: number;
	/** A call naming a known access token: its life left when the call was checked (ms, simulator clock; ≤ 0: expired). */
	tokenLeftMs?: number;
	/** With a rate limit: tokens left in the app's bucket after this request was counted (or refused). */
	rlTokens?: number;
	/**
	 * Who made the call, as the service knows it: `app` (the app token), `user:<customer_id>` (a customer's user
	 * token, or a refresh that rotated one of its refresh tokens), `console` (the vendor's console, `POST
	 * /__sim/console`). Absent when the token was refused.
	 */
	caller?: string;
}

/** The options with every default filled in (the reasons for each default are on SimOptions). */
export function resolveOptions(o: SimOptions): ResolvedOptions {
	if (!o.appId || !o.secret) throw new Error('startSimulator: appId and secret are required');
	return {
		appId: o.appId,
		secret: o.secret,
		registeredHost: o.registeredHost ?? 'https://app.example.com',
		seed: o.seed ?? 1,
		clock: o.clock ?? 'real',
		tokenTtl: o.tokenTtl ?? 7200,
		codeTtl: o.codeTtl ?? 300,
		refreshTtl: o.refreshTtl ?? 30 * 86400,
		revokeAccessOnRefresh: o.revokeAccessOnRefresh ?? false,
		droppedTokenAnswer: o.droppedTokenAnswer,
		pageSize: o.pageSize ?? 10,
		httpFilterProcessingMs: o.httpFilterProcessingMs ?? 50,
		unknownFields: o.unknownFields ?? 'reject',
		strictContentType: o.strictContentType ?? true,
		portalVersion: o.portalVersion ?? 'legacy',
		ipBlacklistAddRequiresEntry: o.ipBlacklistAddRequiresEntry ?? true,
		ipBlacklistDeleteWithoutList: o.ipBlacklistDeleteWithoutList ?? 'reject',
		acceptIcmpType: o.acceptIcmpType ?? true,
		maxEventsNum: o.maxEventsNum ?? 100,
		maxOtherIpRange: o.maxOtherIpRange ?? 256,
		tokenKinds: o.tokenKinds ?? {},
		tenancy: o.tenancy ?? 'lenient',
		logLimit: o.logLimit ?? 10000,
		mitigation: { ...DEFAULT_MITIGATION, ...(o.mitigation ?? {}) },
	};
}
