// The simulator's state and its control operations (simulator/README.md); HTTP is in request.mts.
import type http from 'node:http';
import { CODES } from './codes.mts';
import { endOf, isOngoing } from './attacks.mts';
import { addFleet, checkFleet, type FleetSpec } from './fleet.mts';
import {
	resolveOptions,
	type FaultSpec,
	type LogEntry,
	type ResolvedOptions,
	type Scenario,
	type SimOptions,
	type TokenRec,
} from './options.mts';
import { checkedFault, takeFault, type ActiveFault } from './faults.mts';
import { handleRequest } from './request.mts';
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
import { Rng, SimError, notFound, validationError } from './util.mts';
import { RateLimiter, rateLimitProblems, type RateLimitSpec } from './rateLimit.mts';

export type { AttackScenarioItem, FaultKind, FaultSpec, LogEntry, Scenario, SimOptions, TokenRec } from './options.mts';

const MAX_ADVANCE_SECONDS = 10 * 365 * 86400;
const MAX_OFFSET_MS = 100 * 365 * 86400 * 1000;

export class Simulator {
	opts: ResolvedOptions;
	rng!: Rng;
	world!: World;
	tokens = new Map<string, TokenRec>();
	refreshTokens = new Map<string, { customer_id: string; expiresAtMs: number; access_token: string }>();
	codes = new Map<string, { customer_id: string; expiresAtMs: number; used: boolean }>();
	faults: ActiveFault[] = [];
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
		this.opts = resolveOptions(o);
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
		this.codes.set(code, { customer_id, expiresAtMs: this.nowMs() + this.opts.codeTtl * 1000, used: false });
		return code;
	}
	issueAppToken(): string {
		const t = `at_${this.rng.hex(32)}`;
		this.tokens.set(t, { kind: 'app', expiresAtMs: this.nowMs() + this.opts.tokenTtl * 1000 });
		return t;
	}
	issueUserTokens(customer_id: string) {
		const access_token = `ut_${this.rng.hex(32)}`;
		const refresh_token = `rt_${this.rng.hex(32)}`;
		this.tokens.set(access_token, {
			kind: 'user',
			customer_id,
			expiresAtMs: this.nowMs() + this.opts.tokenTtl * 1000,
		});
		this.refreshTokens.set(refresh_token, {
			customer_id,
			expiresAtMs: this.nowMs() + this.opts.refreshTtl * 1000,
			access_token,
		});
		return { access_token, refresh_token };
	}
	/** Expires every access token now (refresh tokens stay valid). */
	expireTokens(): number {
		const now = this.nowMs();
		for (const t of this.tokens.values()) t.expiresAtMs = Math.min(t.expiresAtMs, now);
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
		this.faults.push(checkedFault(f, this.router, this.nowMs()));
		return this.faults;
	}
	/** The first fault that matches this call, counted down (or dropped once its window ended). */
	takeFault(opId: string, path: string) {
		return takeFault(this.faults, opId, path, this.nowMs());
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
		const now = this.nowMs();
		return {
			now,
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
			tokens: [...this.tokens.values()].map((t) => ({ ...t, expired: t.expiresAtMs <= now })),
			refreshTokens: this.refreshTokens.size,
			faults: this.faults,
			requests: this.log.length,
		};
	}

	// ------------------------------------------------------------ HTTP

	/** Answers one HTTP request (simulator/request.mts). */
	handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
		return handleRequest(this, req, res);
	}
}
