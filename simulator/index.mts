/**
 * The Security Service Open API simulator: a real HTTP server (node:http) holding the whole service
 * state in memory. `startSimulator()` starts it; `sim` gives in-process access to the same control
 * operations as the HTTP control API under /__sim/ (see simulator/README.md).
 */
import { channel } from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CODES } from './codes.mts';
import { DEFAULT_MITIGATION, endOf, isOngoing, type MitigationModel } from './attacks.mts';
import { handleControl } from './control.mts';
import { addFleet, checkFleet, type FleetSpec } from './fleet.mts';
import { handlers, Redirect } from './handlers.mts';
import { requestCtx } from './handlers/shared.mts';
import { boundaryOf, MultipartError, parseMultipart, parseUrlEncoded, type Fields } from './multipart.mts';
import { catalogRouter, type Router } from './router.mts';
import {
	defaultLevel,
	makeAttack,
	seedWorld,
	PROFILES,
	type AttackSpec,
	type DomainPort,
	type LevelState,
	type Site,
	type World,
} from './state.mts';
import { checkAttackItem, checkFlowDownItem, checkScenario } from './scenario.mts';
import { Input, JsonBoundError, Rng, SimError, notFound, parseBoundedJson, sleep, validationError } from './util.mts';
import { RateLimiter, rateLimitProblems, type RateLimitSpec } from './rateLimit.mts';
export type { RateLimitSpec } from './rateLimit.mts';

export { CODES } from './codes.mts';

export type FaultKind = 'http5xx' | 'code' | 'delay' | 'reset' | 'ratelimit' | 'expireToken' | 'hang';
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
	/** Delay for `delay` (default 1000 ms). */
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

type ResolvedOptions = Required<
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
	expiresAt: number;
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
	/** With a rate limit: tokens left in the app's bucket after this request was counted (or refused). */
	rlTokens?: number;
	/**
	 * Who made the call, as the service knows it: `app` (the app token), `user:<customer_id>` (a customer's user
	 * token), `console` (the vendor's console, `POST /__sim/console`). Absent when the token was refused.
	 */
	caller?: string;
}

const MASKED = new Set(['access_token', 'secret', 'refresh_token', 'code']);

function maskFields(f: Fields): Record<string, string | string[]> {
	const o: Record<string, string | string[]> = {};
	for (const [k, v] of f) {
		const vv = MASKED.has(k) ? v.map(() => '***') : v;
		o[k] = vv.length === 1 ? vv[0] : vv;
	}
	return o;
}

function maskJson(v: unknown): unknown {
	if (Array.isArray(v)) return v.map(maskJson);
	if (v && typeof v === 'object') {
		const o: Record<string, unknown> = {};
		for (const [k, x] of Object.entries(v)) o[k] = MASKED.has(k) ? '***' : maskJson(x);
		return o;
	}
	return v;
}

const EMPTY: Fields = new Map();

export class Simulator {
	opts: ResolvedOptions;
	rng!: Rng;
	world!: World;
	tokens = new Map<string, TokenRec>();
	refreshTokens = new Map<string, { customer_id: string; expiresAt: number; access_token: string }>();
	codes = new Map<string, { customer_id: string; expiresAt: number; used: boolean }>();
	faults: (FaultSpec & { count: number; until?: number })[] = [];
	/** The request rate limit (setRateLimit; off when undefined). */
	rateLimiter?: RateLimiter;
	log: LogEntry[] = [];
	filterBusy = new Map<string, number>();
	private seq = 0;
	private clockMode: 'real' | 'manual';
	private baseMs = 0;
	private realAtBase = 0;
	private offsetMs = 0;
	private startTime?: number;
	private scenario?: Scenario;
	private fleet?: FleetSpec;
	readonly router: Router = catalogRouter();

	constructor(o: SimOptions) {
		if (!o.appId || !o.secret) throw new Error('startSimulator: appId and secret are required');
		this.opts = {
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
		new URL(this.opts.registeredHost); // throws early on a bad registered host
		this.clockMode = this.opts.clock;
		this.startTime = o.startTime;
		this.scenario = o.scenario;
		const fleet = o.fleet ?? o.scenario?.fleet;
		if (fleet) this.fleet = checkFleet(fleet);
		if (o.rateLimit) this.setRateLimit(o.rateLimit);
		this.reset(o.scenario?.seed ?? this.opts.seed);
	}

	// ------------------------------------------------------------ clock

	nowMs(): number {
		return this.clockMode === 'manual'
			? this.baseMs + this.offsetMs
			: this.baseMs + (Date.now() - this.realAtBase) + this.offsetMs;
	}
	nowSec(): number {
		return Math.floor(this.nowMs() / 1000);
	}
	/** Moves the simulator clock forward (tokens expire, attacks progress). */
	advance(seconds: number): number {
		if (!(Number.isFinite(seconds) && seconds >= 0 && seconds <= MAX_ADVANCE_SECONDS))
			throw new Error(`seconds must be a number from 0 to ${MAX_ADVANCE_SECONDS} (10 years)`);
		if (!Number.isFinite(this.nowMs() + seconds * 1000) || this.offsetMs + seconds * 1000 > MAX_OFFSET_MS)
			throw new Error(
				`the clock may move at most ${MAX_OFFSET_MS / 1000} seconds (100 years) ahead in total; reset it first`,
			);
		this.offsetMs += seconds * 1000;
		return this.nowMs();
	}

	// ------------------------------------------------------------ state

	/** Rebuilds the seeded world; drops tokens, codes, faults, the request log and scenario attacks (a loaded scenario is replayed). */
	reset(seed = this.opts.seed): void {
		this.opts.seed = seed;
		this.rng = new Rng(seed);
		this.baseMs = this.startTime ?? (this.clockMode === 'manual' ? Date.UTC(2025, 0, 15, 12, 0, 0) : Date.now());
		this.realAtBase = Date.now();
		this.offsetMs = 0;
		this.world = seedWorld(this.rng, this.nowSec());
		if (this.fleet) addFleet(this.world, this.fleet);
		this.tokens.clear();
		this.refreshTokens.clear();
		this.codes.clear();
		this.faults = [];
		this.log = [];
		this.filterBusy.clear();
		if (this.scenario) this.loadScenario(this.scenario, false);
	}

	/** The first customer / site / domain-port / network / host ids (stable across seeds). */
	firstIds() {
		const c = this.world.customers.values().next().value as { customer_id: string; site_ids: string[] };
		const s = this.world.sites.get(c.site_ids[0]) as Site;
		return {
			customer_id: c.customer_id,
			site_id: s.site_id,
			domain_port_id: s.domain_port_ids[0],
			network_id: s.networks[0].network_id,
			host_id: s.networks[0].hosts[0].host_id,
		};
	}

	site(id: string): Site {
		const s = this.world.sites.get(id);
		if (!s) throw notFound(`site_id: site '${id}' does not exist`);
		return s;
	}

	dp(params: Record<string, string>): DomainPort {
		const site = this.site(params.site_id);
		const dp = this.world.domainPorts.get(params.domain_port_id);
		if (!dp || dp.site_id !== site.site_id)
			throw notFound(`domain_port_id: domain-port '${params.domain_port_id}' does not exist on site ${site.site_id}`);
		return dp;
	}

	/** Resolves the level of a detection/overview path (§4.6: network 0 = site, host 0 = network, else host). */
	level(p: Record<string, string>): { level: 'site' | 'network' | 'host'; state: LevelState } {
		const cu = this.world.customers.get(p.customer_id);
		if (!cu) throw notFound(`customer_id: customer '${p.customer_id}' does not exist`);
		const site = this.world.sites.get(p.site_id);
		if (!site || site.customer_id !== cu.customer_id)
			throw notFound(`site_id: site '${p.site_id}' does not exist for customer ${cu.customer_id}`);
		let level: 'site' | 'network' | 'host';
		if (p.network_id === '0') {
			if (p.host_id !== '0')
				throw validationError([{ field: 'host_id', rule: 'must be 0 when network_id is 0 (site level)' }]);
			level = 'site';
		} else {
			const net = site.networks.find((n) => n.network_id === p.network_id);
			if (!net) throw notFound(`network_id: network '${p.network_id}' does not exist on site ${site.site_id}`);
			if (p.host_id === '0') level = 'network';
			else if (net.hosts.some((h) => h.host_id === p.host_id)) level = 'host';
			else throw notFound(`host_id: host '${p.host_id}' does not exist in network ${net.network_id}`);
		}
		const key = `${p.customer_id}/${p.site_id}/${p.network_id}/${p.host_id}`;
		let st = this.world.levels.get(key);
		if (!st) this.world.levels.set(key, (st = defaultLevel(level)));
		return { level, state: st };
	}

	// ------------------------------------------------------------ OAuth

	checkClient(appId: string, secret: string | undefined) {
		if (appId !== this.opts.appId) throw new SimError(CODES.INVALID_CLIENT, 'app_id: unknown app');
		if (secret !== undefined && secret !== this.opts.secret)
			throw new SimError(CODES.INVALID_CLIENT, 'secret: does not match the app');
	}
	issueCode(customer_id: string): string {
		const code = `cd_${this.rng.hex(24)}`;
		this.codes.set(code, { customer_id, expiresAt: this.nowSec() + this.opts.codeTtl, used: false });
		return code;
	}
	issueAppToken(): string {
		const t = `at_${this.rng.hex(32)}`;
		this.tokens.set(t, { kind: 'app', expiresAt: this.nowSec() + this.opts.tokenTtl });
		return t;
	}
	issueUserTokens(customer_id: string) {
		const access_token = `ut_${this.rng.hex(32)}`;
		const refresh_token = `rt_${this.rng.hex(32)}`;
		this.tokens.set(access_token, { kind: 'user', customer_id, expiresAt: this.nowSec() + this.opts.tokenTtl });
		this.refreshTokens.set(refresh_token, {
			customer_id,
			expiresAt: this.nowSec() + this.opts.refreshTtl,
			access_token,
		});
		return { access_token, refresh_token };
	}
	/** Expires every access token now (refresh tokens stay valid). */
	expireTokens(): number {
		const now = this.nowSec();
		for (const t of this.tokens.values()) t.expiresAt = Math.min(t.expiresAt, now);
		return this.tokens.size;
	}

	// ------------------------------------------------------------ attacks / scenario

	startAttack(spec: Partial<AttackSpec> & { at?: number }) {
		checkAttackItem(spec, 'attack');
		const now = this.nowSec();
		const a = makeAttack(this.world, this.rng, {
			...spec,
			site_id: spec.site_id ?? this.firstIds().site_id,
			start: spec.start ?? now + (spec.at ?? 0),
		} as AttackSpec);
		this.world.attacks.push(a);
		return this.attackView(a.id);
	}
	stopAttack(id: string) {
		const a = this.world.attacks.find((x) => x.id === id);
		if (!a) throw new Error(`attack '${id}' does not exist`);
		const now = this.nowSec();
		if (isOngoing(a, now)) a.stoppedAt = now;
		else if (a.start > now) a.stoppedAt = a.start; // never starts
		return this.attackView(id);
	}
	attackView(id: string) {
		const a = this.world.attacks.find((x) => x.id === id);
		if (!a) throw new Error(`attack '${id}' does not exist`);
		const now = this.nowSec();
		const end = endOf(a);
		return {
			...a,
			end: Number.isFinite(end) ? end : null,
			status: isOngoing(a, now) ? 'ongoing' : a.start > now ? 'scheduled' : 'stopped',
		};
	}
	loadScenario(s: Scenario, record = true) {
		checkScenario(s);
		if (record) this.scenario = s;
		if (s.fleet && !this.fleet) {
			this.fleet = checkFleet(s.fleet);
			addFleet(this.world, this.fleet);
		}
		const now = this.nowSec();
		const out = [];
		for (const a of s.attacks ?? []) out.push(this.startAttack({ ...a, start: a.start ?? now + (a.at ?? 0) }));
		for (const f of s.flowDowns ?? []) out.push(this.addFlowDown(f));
		return out;
	}
	addFlowDown(f: { site_id?: string; at?: number; duration?: number; router_name?: string }) {
		checkFlowDownItem(f, 'flowDown');
		const site_id = f.site_id ?? this.firstIds().site_id;
		if (!this.world.sites.has(site_id)) throw new Error(`site_id '${site_id}' does not exist`);
		const start = this.nowSec() + (f.at ?? 0);
		const rec = {
			alert_id: `F${++this.world.counters.flow}`,
			site_id,
			start_time: start,
			end_time: f.duration ? start + f.duration : 0,
			router_name: f.router_name ?? 'edge-fra-1',
		};
		this.world.flowDowns.push(rec);
		return rec;
	}
	addUrlBypass(site_id: string, domain_port_id: string, url: string) {
		const dp = this.dp({ site_id, domain_port_id });
		if (!dp.policy.urlBypass.includes(url)) dp.policy.urlBypass.push(url);
		return dp.policy.urlBypass;
	}

	// ------------------------------------------------------------ faults / log

	/** Sets (or with undefined removes) the request rate limit; throws naming the field of a bad spec. */
	setRateLimit(spec: RateLimitSpec | undefined): RateLimitSpec | undefined {
		if (spec === undefined) {
			this.rateLimiter?.close();
			this.rateLimiter = undefined;
			return undefined;
		}
		const p = rateLimitProblems(spec);
		if (p.length) throw new Error(p.join('; '));
		this.rateLimiter?.close();
		this.rateLimiter = new RateLimiter(spec);
		return spec;
	}

	addFault(f: FaultSpec) {
		const kinds: FaultKind[] = ['http5xx', 'code', 'delay', 'reset', 'ratelimit', 'expireToken', 'hang'];
		if (!kinds.includes(f.kind)) throw new Error(`kind must be one of ${kinds.join(', ')}`);
		if (f.op !== '*' && !this.router.routes.some((r) => r.id === f.op))
			throw new Error(`op must be an operation id or '*' (got '${f.op}')`);
		const count = f.count ?? 1;
		if (!(Number.isInteger(count) && count > 0)) throw new Error('count must be a positive integer');
		if (f.pathContains !== undefined && (typeof f.pathContains !== 'string' || f.pathContains === ''))
			throw new Error('pathContains must be a non-empty string');
		if (
			f.retryAfterSeconds !== undefined &&
			!(typeof f.retryAfterSeconds === 'number' && f.retryAfterSeconds >= 0 && f.retryAfterSeconds <= 3600)
		)
			throw new Error('retryAfterSeconds must be 0–3600');
		if (f.forMs !== undefined && !(Number.isFinite(f.forMs) && f.forMs > 0 && f.forMs <= 3_600_000))
			throw new Error('forMs must be a number of ms from 1 to 3600000');
		this.faults.push({ ...f, count, ...(f.forMs !== undefined ? { until: this.nowMs() + f.forMs } : {}) });
		return this.faults;
	}
	private takeFault(opId: string, path: string) {
		for (let i = 0; i < this.faults.length; i++) {
			const f = this.faults[i];
			if (f.until !== undefined && this.nowMs() > f.until) {
				this.faults.splice(i--, 1);
				continue;
			}
			if ((f.op === '*' || f.op === opId) && (f.pathContains === undefined || path.includes(f.pathContains))) {
				if (f.until === undefined && --f.count <= 0) this.faults.splice(i, 1);
				return f;
			}
		}
		return undefined;
	}
	/** Appends to the request log (trimmed in chunks so a full log does not cost an O(n) splice per request). */
	logRequest(entry: Omit<LogEntry, 'seq'>): LogEntry {
		const e: LogEntry = { seq: ++this.seq, ...entry };
		this.log.push(e);
		if (this.log.length > this.opts.logLimit + 1024) this.log.splice(0, this.log.length - this.opts.logLimit);
		return e;
	}
	requests(filter: { op?: string; since?: number } = {}) {
		return this.log.filter(
			(e) => (filter.op === undefined || e.opId === filter.op) && (filter.since === undefined || e.seq > filter.since),
		);
	}
	clearRequests() {
		this.log = [];
	}

	/** Full state, JSON-friendly. Token values are not shown (only their kinds and expiry). */
	snapshot() {
		const now = this.nowSec();
		return {
			now: this.nowMs(),
			clock: this.clockMode,
			seed: this.opts.seed,
			app: { app_id: this.opts.appId, registered_host: this.opts.registeredHost },
			ids: this.firstIds(),
			profiles: PROFILES,
			customers: [...this.world.customers.values()],
			sites: [...this.world.sites.values()],
			domainPorts: [...this.world.domainPorts.values()],
			levels: Object.fromEntries(this.world.levels),
			attacks: this.world.attacks.map((a) => this.attackView(a.id)),
			flowDowns: this.world.flowDowns,
			tokens: [...this.tokens.values()].map((t) => ({ ...t, expired: t.expiresAt <= now })),
			refreshTokens: this.refreshTokens.size,
			faults: this.faults,
			requests: this.log.length,
		};
	}

	// ------------------------------------------------------------ HTTP

	async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
		const recvAt = Date.now();
		const url = req.url ?? '/';
		const qi = url.indexOf('?');
		const path = qi < 0 ? url : url.slice(0, qi);
		const qs = qi < 0 ? '' : url.slice(qi + 1);
		const method = req.method ?? 'GET';
		if (path.startsWith('/__sim/') || path === '/__sim') {
			const body = await readBody(req);
			const r = await handleControl(this, method, path, parseUrlEncoded(qs), body, req.headers);
			return sendJson(res, r.status, r.body);
		}
		const m = this.router.match(method, path);
		if (!m) {
			drain(req);
			return sendJson(res, 404, { code: CODES.NOT_FOUND, msg: `no operation at ${method} ${path}` });
		}
		if ('methods' in m) {
			drain(req);
			return sendJson(res, 405, {
				code: CODES.NOT_FOUND,
				msg: `${method} is not allowed on ${path} (allowed: ${m.methods.join(', ')})`,
			});
		}
		const hasBody =
			req.headers['content-length'] !== undefined
				? req.headers['content-length'] !== '0'
				: req.headers['transfer-encoding'] !== undefined;
		const raw = hasBody ? await readBody(req) : (drain(req), EMPTY_BUF);
		const query = parseUrlEncoded(qs);
		const entry = this.logRequest({
			time: this.nowMs(),
			opId: m.opId,
			method,
			path,
			query: maskFields(query),
			body: undefined,
			status: 200,
			code: null,
			recvAt,
		});
		const finish = (
			status: number,
			body: { code: number } & Record<string, unknown>,
			headers?: Record<string, string>,
		) => {
			entry.status = status;
			entry.code = body.code;
			sendJson(res, status, body, headers);
		};

		const fault = this.faults.length ? this.takeFault(m.opId, path) : undefined;
		if (fault) {
			entry.fault = fault.kind;
			if (fault.kind === 'delay') await sleep(fault.delayMs ?? 1000);
			else if (fault.kind === 'hang') {
				// A frozen service: the connection stays open and nothing is answered until the client gives up, the
				// fault's window ends or 10 minutes pass; then the connection is closed without an answer.
				entry.status = 0;
				await holdOpen(req.socket, fault.until !== undefined ? Math.max(0, fault.until - this.nowMs()) : HANG_MAX_MS);
				req.socket.destroy();
				return;
			} else if (fault.kind === 'reset') {
				entry.status = 0;
				req.socket.destroy();
				return;
			} else if (fault.kind === 'http5xx')
				return finish(fault.status ?? 503, { code: CODES.INTERNAL, msg: 'injected fault: service unavailable' });
			else if (fault.kind === 'code') return finish(200, { code: fault.code ?? CODES.INTERNAL, msg: 'injected fault' });
			else if (fault.kind === 'ratelimit')
				return finish(
					fault.status ?? 200,
					{ code: CODES.RATE_LIMITED, msg: 'rate limited: too many requests' },
					fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : undefined,
				);
			else if (fault.kind === 'expireToken') {
				const t = query.get('access_token')?.[0];
				const rec = t ? this.tokens.get(t) : undefined;
				if (rec) rec.expiresAt = Math.min(rec.expiresAt, this.nowSec());
			}
		}

		try {
			const def = handlers[m.opId];
			if (!def) throw new SimError(CODES.INTERNAL, `operation ${m.opId} is not implemented`);
			if (path.startsWith('/api/')) entry.caller = this.authenticate(m.opId, query, m.params);
			if (this.rateLimiter && path.startsWith('/api/')) {
				const rec = this.tokens.get(query.get('access_token')?.[0] ?? '');
				const refusedBy = this.rateLimiter.check(rec?.kind === 'user' ? rec.customer_id : undefined, recvAt);
				entry.rlTokens = Math.round(this.rateLimiter.appTokens * 100) / 100;
				if (refusedBy !== undefined) {
					entry.fault = 'ratelimit';
					const a = this.rateLimiter.answer();
					return finish(a.status, a.body, a.headers);
				}
			}
			let b: Fields = EMPTY;
			let json: unknown;
			if ((method === 'POST' || method === 'PUT') && def.enc !== 'query' && def.enc !== 'redirect') {
				const ct = String(req.headers['content-type'] ?? '');
				const want =
					def.enc === 'multipart'
						? 'multipart/form-data'
						: def.enc === 'json'
							? 'application/json'
							: 'application/x-www-form-urlencoded';
				if (this.opts.strictContentType && !ct.toLowerCase().startsWith(want))
					throw new SimError(
						CODES.BAD_CONTENT_TYPE,
						`content-type: this operation takes ${want} (got '${ct || 'none'}')`,
					);
				if (def.enc === 'json') {
					try {
						json = raw.length ? parseBoundedJson(raw.toString('utf8')) : undefined;
					} catch (e) {
						throw validationError([
							{ field: 'body', rule: e instanceof JsonBoundError ? e.message : 'must be valid JSON' },
						]);
					}
					entry.body = maskJson(json);
				} else if (ct.toLowerCase().startsWith('multipart/form-data')) {
					const boundary = boundaryOf(ct);
					if (!boundary)
						throw new SimError(CODES.BAD_CONTENT_TYPE, 'content-type: multipart/form-data needs a boundary');
					try {
						b = parseMultipart(raw, boundary);
					} catch (e) {
						throw validationError([
							{ field: 'body', rule: e instanceof MultipartError ? e.message : 'malformed multipart body' },
						]);
					}
					entry.body = maskFields(b);
				} else if (ct.toLowerCase().startsWith('application/json')) {
					let o: unknown;
					try {
						o = raw.length ? parseBoundedJson(raw.toString('utf8')) : {};
					} catch (e) {
						throw validationError([
							{ field: 'body', rule: e instanceof JsonBoundError ? e.message : 'must be valid JSON' },
						]);
					}
					if (!o || typeof o !== 'object' || Array.isArray(o))
						throw validationError([{ field: 'body', rule: 'must be a JSON object' }]);
					b = new Map(Object.entries(o).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]));
					entry.body = maskFields(b);
				} else {
					b = parseUrlEncoded(raw.toString('utf8'));
					entry.body = maskFields(b);
				}
			}
			const ctx = requestCtx(
				m.params,
				new Input(query, ['access_token']),
				new Input(b),
				json,
				this.opts.unknownFields === 'reject',
			);
			const result = await def.fn(this, ctx);
			if (result instanceof Redirect) {
				entry.status = 302;
				entry.code = 0;
				res.writeHead(302, { location: result.location, 'content-length': '0' });
				res.end();
				return;
			}
			finish(200, result === undefined ? { code: 0, msg: 'success' } : { code: 0, msg: 'success', result });
		} catch (e) {
			if (e instanceof SimError) finish(200, { code: e.code, msg: e.message });
			else finish(200, { code: CODES.INTERNAL, msg: `internal error: ${(e as Error).message}` });
		}
	}

	/** Checks the call's token; returns the caller it names (`app` or `user:<customer_id>`). */
	private authenticate(opId: string, query: Fields, params: Record<string, string> = {}): string {
		const v = query.get('access_token');
		if (!v || v.length === 0 || v[0] === '') throw new SimError(CODES.INVALID_TOKEN, 'access_token: is required');
		if (v.length > 1) throw new SimError(CODES.INVALID_TOKEN, 'access_token: must be given once');
		const rec = this.tokens.get(v[0]);
		const dropped = this.opts.droppedTokenAnswer;
		if (!rec)
			throw dropped
				? new SimError(dropped.code, dropped.msg)
				: new SimError(CODES.INVALID_TOKEN, 'access_token: invalid token');
		if (rec.expiresAt <= this.nowSec())
			throw dropped
				? new SimError(dropped.code, dropped.msg)
				: new SimError(CODES.INVALID_TOKEN, 'access_token: token expired');
		const kinds = this.opts.tokenKinds[opId];
		if (kinds && !kinds.includes(rec.kind))
			throw new SimError(
				CODES.FORBIDDEN,
				`access_token: a ${rec.kind} token is not accepted by ${opId} (needs ${kinds.join(' or ')})`,
			);
		if (this.opts.tenancy === 'strict') this.checkTenancy(opId, rec, params);
		return rec.kind === 'user' ? `user:${rec.customer_id}` : 'app';
	}

	/** Strict tenancy: whose token may reach what (simulator/README.md "Tenancy"). */
	private checkTenancy(opId: string, rec: TokenRec, params: Record<string, string>) {
		const portal = opId.startsWith('customer.');
		if (rec.kind === 'app') {
			if (!portal)
				throw new SimError(
					CODES.FOREIGN_TENANT,
					`access_token: the app token serves only portal operations (customer list and detail), not ${opId}; use the customer's user token`,
				);
			return;
		}
		if (opId === 'customer.list')
			throw new SimError(
				CODES.FOREIGN_TENANT,
				`access_token: a user token (customer ${rec.customer_id}) cannot list the portal's customers; use the app token`,
			);
		if (params.customer_id !== undefined && params.customer_id !== rec.customer_id)
			throw new SimError(
				CODES.FOREIGN_TENANT,
				`access_token: a user token of customer ${rec.customer_id} cannot reach customer ${params.customer_id}`,
			);
		const site = params.site_id !== undefined ? this.world.sites.get(params.site_id) : undefined;
		if (site && site.customer_id !== rec.customer_id)
			throw new SimError(
				CODES.FOREIGN_TENANT,
				`access_token: a user token of customer ${rec.customer_id} cannot reach site ${site.site_id} (customer ${site.customer_id})`,
			);
	}
}

const EMPTY_BUF = Buffer.alloc(0);
const MAX_ADVANCE_SECONDS = 10 * 365 * 86400;
const MAX_OFFSET_MS = 100 * 365 * 86400 * 1000;
const MAX_BODY = 1 << 20;

function drain(req: http.IncomingMessage) {
	req.resume();
}

const HANG_MAX_MS = 600_000;

/** Resolves when the socket closes or after `ms` (at most HANG_MAX_MS), whichever comes first; keeps nothing alive. */
function holdOpen(socket: import('node:net').Socket, ms: number): Promise<void> {
	return new Promise((resolve) => {
		if (socket.destroyed) return resolve();
		const t = setTimeout(done, Math.min(ms, HANG_MAX_MS));
		t.unref();
		socket.once('close', done);
		function done() {
			clearTimeout(t);
			socket.off('close', done);
			resolve();
		}
	});
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		let n = 0;
		req.on('data', (c: Buffer) => {
			n += c.length;
			if (n <= MAX_BODY) chunks.push(c);
		});
		req.on('end', () => (n > MAX_BODY ? reject(new BodyTooLarge()) : resolve(Buffer.concat(chunks))));
		req.on('error', reject);
	});
}

class BodyTooLarge extends Error {
	constructor() {
		super(`the request body must be at most ${MAX_BODY} bytes`);
	}
}

/**
 * Bytes Node's HTTP parser refuses (not HTTP, a bad header, a negative Content-Length, headers over 16 KB, 0xFF in
 * the URL) still get the envelope, on HTTP/1.1 with the connection closed; a socket that cannot be written is closed.
 */
function onClientError(err: Error & { code?: string }, socket: import('node:stream').Duplex) {
	if (!socket.writable || err.code === 'ECONNRESET') {
		socket.destroy();
		return;
	}
	const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
	const reason =
		status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
	const msg =
		status === 431
			? 'request line and headers must be at most 16384 bytes'
			: status === 408
				? 'request not received in time'
				: `malformed HTTP request (${err.code ?? 'parse error'})`;
	const body = JSON.stringify({ code: CODES.VALIDATION, msg });
	socket.end(
		`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
	);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>) {
	const s = JSON.stringify(body);
	res.writeHead(status, {
		'content-type': 'application/json; charset=utf-8',
		'content-length': Buffer.byteLength(s),
		...headers,
	});
	res.end(s);
}

export interface RunningSimulator {
	url: string;
	port: number;
	sim: Simulator;
	close(): Promise<void>;
}

export async function startSimulator(opts: SimOptions): Promise<RunningSimulator> {
	const sim = new Simulator(opts);
	// No Host header required (Node's default answers a bare 400 without the envelope); clientError below.
	const server = http.createServer({ requireHostHeader: false }, (req, res) => {
		sim.handle(req, res).catch((e) => {
			if (res.headersSent) res.destroy();
			else if (e instanceof BodyTooLarge)
				sendJson(res, 413, { code: CODES.VALIDATION, msg: e.message }, { connection: 'close' });
			else
				sendJson(res, 500, {
					code: CODES.INTERNAL,
					msg: `internal error: ${String((e as Error).message).slice(0, 300)}`,
				});
		});
	});
	server.on('clientError', onClientError);
	server.keepAliveTimeout = 10_000;
	const host = opts.host ?? '127.0.0.1';
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(opts.port ?? 0, host, () => resolve());
	});
	const port = (server.address() as AddressInfo).port;
	const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
	// Announced for a failing test's report (test/helpers/started.mts; demo/stack.mts announceStarted): the address,
	// the seed of the world and the request log's last entries. Nothing happens when nobody listens.
	channel('secsvc:started').publish({
		what: 'simulator',
		addresses: { url },
		seed: opts.scenario?.seed ?? opts.seed ?? 1,
		log: () =>
			sim
				.requests()
				.slice(-25)
				.map((r) => `#${r.seq} ${r.method} ${r.path} → ${r.status} code ${r.code}${r.fault ? ` fault ${r.fault}` : ''}`)
				.join('\n'),
	});
	return {
		url,
		port,
		sim,
		close: () =>
			new Promise<void>((resolve) => {
				sim.rateLimiter?.close();
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	};
}
