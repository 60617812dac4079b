/**
 * One handler per operation id. Request decoding and every rule check here are the simulator's own,
 * written from the spec text (nothing is taken from api/catalog beyond id/method/path in router.mts).
 */
import { CODES } from './codes.mts';
import type { Simulator } from './index.mts';
import {
	DETECTION_GROUPS,
	HEADER_NAMES,
	HTTP_FILTER_ACTIONS,
	HTTP_METHODS,
	HTTP_TYPES,
	IP_AUTH_ACTIONS,
	IP_AUTH_OBJECT_FIELDS,
	PROFILES,
	type ApPolicy,
	type HttpFilterPolicy,
	type IpEntry,
	type SwitchNode,
} from './state.mts';
import {
	INT_RE,
	Input,
	SimError,
	THRESHOLD,
	formatYmdhms,
	intToIp,
	ipToInt,
	notFound,
	parseCidr,
	parseRange,
	parseYmdhms,
	sleep,
	thresholdValue,
	validationError,
	type Issue,
} from './util.mts';
import {
	activeMitigation,
	currentTraffic,
	eventDetail,
	eventOf,
	isOngoing,
	isUnderAttack,
	networkSummary,
} from './attacks.mts';

export type Encoding = 'multipart' | 'json' | 'form' | 'query' | 'redirect';

export interface Ctx {
	params: Record<string, string>;
	/** Query string, access_token excluded. */
	q: Input;
	/** multipart / urlencoded body. */
	b: Input;
	/** JSON body (json encoding). */
	json: unknown;
	/** Throws the collected validation issues (query and body) and unknown fields. */
	done(): void;
}

export class Redirect {
	constructor(readonly location: string) {}
}

export interface HandlerDef {
	enc: Encoding;
	fn: (sim: Simulator, c: Ctx) => unknown;
}

const deep = <T,>(v: T): T => structuredClone(v);

// ---------------------------------------------------------------- helpers

function registrableDomain(host: string): string {
	const parts = host.toLowerCase().split('.').filter(Boolean);
	return parts.slice(-2).join('.');
}

function ipEntry(s: string): IpEntry | undefined {
	const t = s.trim();
	if (t.includes('-')) {
		const r = parseRange(t);
		return r ? { type: 'range', start_ip: intToIp(r.start), end_ip: intToIp(r.end) } : undefined;
	}
	if (t.includes('/')) {
		const r = parseCidr(t);
		if (!r) return undefined;
		return { type: 'network', ip: `${intToIp(r.start)}/${t.slice(t.indexOf('/') + 1)}` };
	}
	return ipToInt(t) === undefined ? undefined : { type: 'network', ip: t };
}

const sameEntry = (a: IpEntry, b: IpEntry) => a.type === b.type && a.ip === b.ip && a.start_ip === b.start_ip && a.end_ip === b.end_ip;

const IP_ENTRY_RULE = 'must be an IPv4 range written start-end (start ≤ end), an IPv4 address or a CIDR a.b.c.d/n';

function isRegex(s: string): boolean {
	try {
		new RegExp(s);
		return true;
	} catch {
		return false;
	}
}

function isHttpUrl(s: string): boolean {
	try {
		const u = new URL(s);
		return u.protocol === 'http:' || u.protocol === 'https:';
	} catch {
		return false;
	}
}

function switchIndex(tree: Record<string, SwitchNode>): Map<string, SwitchNode> {
	const m = new Map<string, SwitchNode>();
	const walk = (n: SwitchNode) => {
		m.set(n.name, n);
		for (const v of Object.values(n)) if (v && typeof v === 'object') walk(v as SwitchNode);
	};
	for (const n of Object.values(tree)) walk(n);
	return m;
}

const OVERWRITABLE = (c: number) => (c >= 400 && c <= 417) || (c >= 500 && c <= 505);

// ---------------------------------------------------------------- HTTP filter (§4.3.1)

function readHttpFilter(sim: Simulator, b: Input): Omit<HttpFilterPolicy, 'p_flag_id'> {
	const action = b.oneOf('action', HTTP_FILTER_ACTIONS, true);
	const host = b.str('host', true);
	const uri = b.str('uri', true);
	if (uri !== undefined && !isRegex(uri)) b.issue('uri', 'must be a path or a valid regular expression');
	const p_name = b.str('p_name', true);
	const p_desc = b.str('p_desc') ?? '';
	const methods = b.list('methods') ?? [];
	for (const m of methods)
		if (!(HTTP_METHODS as readonly string[]).includes(m)) b.issue('methods', `each value must be one of ${HTTP_METHODS.join(', ')} (got '${m}')`);
	const ranges = b.list('other_iprange') ?? [];
	const other: { start_ip: string; end_ip: string }[] = [];
	let total = 0;
	for (const r of ranges) {
		const t = r.trim();
		const p = t.includes('-') ? parseRange(t) : ipToInt(t) !== undefined ? { start: ipToInt(t) as number, end: ipToInt(t) as number } : undefined;
		if (!p) {
			b.issue('other_iprange', `each value must be an IPv4 range written start-end with start ≤ end (got '${r}')`);
			continue;
		}
		total += p.end - p.start + 1;
		other.push({ start_ip: intToIp(p.start), end_ip: intToIp(p.end) });
	}
	if (total > sim.opts.maxOtherIpRange) b.issue('other_iprange', `must cover at most ${sim.opts.maxOtherIpRange} IPs in total (§8); got ${total}`);
	const page = b.str('page');
	const redirect_host = b.str('redirect_host');
	const redirect_url = b.str('redirect_url');
	const rp_code = b.intOneOf('rp_code', [301, 302]);
	const scheme = b.oneOf('scheme', ['http', 'https'] as const);
	const redirect = action === 'URL_REDIRECTION' || action === 'DOMAIN_REDIRECTION';
	if (action === 'BUSY_PAGE' && page === undefined) b.issue('page', 'is required when action is BUSY_PAGE');
	if (redirect) {
		if (redirect_host === undefined) b.issue('redirect_host', `is required when action is ${action}`);
		if (!b.has('rp_code')) b.issue('rp_code', `is required when action is ${action} (301 or 302)`);
		if (!b.has('scheme')) b.issue('scheme', `is required when action is ${action} (http or https)`);
	}
	if (action === 'URL_REDIRECTION' && redirect_url === undefined) b.issue('redirect_url', 'is required when action is URL_REDIRECTION');
	return {
		p_name: p_name ?? '',
		p_desc,
		url: `${host ?? ''}${uri ?? ''}`,
		action: action ? [action] : [],
		action_annex: {
			http_code: redirect ? (rp_code ?? 0) : 0,
			page: page ?? '',
			url: action === 'URL_REDIRECTION' ? `${scheme}://${redirect_host}${redirect_url}` : action === 'DOMAIN_REDIRECTION' ? `${scheme}://${redirect_host}` : '',
		},
		methods,
		other_iprange: other,
		host: host ?? '',
		uri: uri ?? '',
		scheme: scheme ?? '',
		redirect_host: redirect_host ?? '',
		redirect_url: redirect_url ?? '',
		rp_code: rp_code ?? 0,
		page: page ?? '',
	};
}

/** Holds the domain-port for the processing delay; an overlapping create/edit gets CONFLICT_BUSY (§4.3.1). */
async function withFilterLock<T>(sim: Simulator, dpId: string, fn: () => T): Promise<T> {
	const now = Date.now();
	const until = sim.filterBusy.get(dpId);
	if (until !== undefined && until > now)
		throw new SimError(CODES.CONFLICT_BUSY, 'another HTTP filter policy create/edit is in progress on this domain-port; concurrent requests are not supported (§4.3.1)');
	const delay = sim.opts.httpFilterProcessingMs;
	sim.filterBusy.set(dpId, now + delay + 1);
	try {
		if (delay > 0) await sleep(delay);
		return fn();
	} finally {
		sim.filterBusy.delete(dpId);
	}
}

function pFlagParam(c: Ctx): string {
	const id = c.params.p_flag_id;
	if (!/^\d+$/.test(id)) throw validationError([{ field: 'p_flag_id', rule: 'must be an integer (policy id)' }]);
	return String(Number(id));
}

// ---------------------------------------------------------------- IP lists

function ipListAdd(sim: Simulator, c: Ctx, which: 'ipBlacklist' | 'ipWhitelist', field: string) {
	const dp = sim.dp(c.params);
	const v = c.b.str(field, which === 'ipWhitelist' || sim.opts.ipBlacklistAddRequiresEntry);
	const e = v === undefined ? undefined : ipEntry(v);
	if (v !== undefined && !e) c.b.issue(field, IP_ENTRY_RULE + ' (one entry per request)');
	c.done();
	if (!e) return undefined;
	const list = dp.policy[which].entries;
	if (!list.some((x) => sameEntry(x, e))) list.push(e);
	return undefined;
}

function ipListRemove(sim: Simulator, c: Ctx, which: 'ipBlacklist' | 'ipWhitelist', field: string) {
	const dp = sim.dp(c.params);
	const required = which === 'ipWhitelist' || sim.opts.ipBlacklistDeleteWithoutList === 'reject';
	const v = c.q.str(field, required);
	const entries: IpEntry[] = [];
	if (v !== undefined) {
		for (const part of v.split(',')) {
			if (part.trim() === '') continue;
			const e = ipEntry(part);
			if (!e) c.q.issue(field, `${IP_ENTRY_RULE}; entries are separated by commas (got '${part}')`);
			else entries.push(e);
		}
		if (entries.length === 0 && c.q.issues.length === 0) c.q.issue(field, 'must name at least one entry');
	}
	c.done();
	const list = dp.policy[which];
	if (v === undefined) {
		list.entries = []; // ipBlacklistDeleteWithoutList === 'clear'
		return undefined;
	}
	// Entries not in the list are skipped (like url-bypass, §7).
	list.entries = list.entries.filter((x) => !entries.some((e) => sameEntry(x, e)));
	return undefined;
}

// ---------------------------------------------------------------- status codes (§4.3.4)

function readStatusCode(b: Input) {
	const error_code = b.int('error_code', true);
	if (error_code !== undefined && !OVERWRITABLE(error_code)) b.issue('error_code', 'must be an HTTP code from 400 to 417 or from 500 to 505');
	const error_code_rewrite = b.int('error_code_rewrite', true, 100, 999);
	const error_page_type = b.intOneOf('error_page_type', [0, 1, 2], true);
	const error_page_info = b.str('error_page_info');
	if (error_page_type === 2) {
		if (error_page_info === undefined) b.issue('error_page_info', 'is required when error_page_type is 2 (custom page by URL)');
		else if (!isHttpUrl(error_page_info)) b.issue('error_page_info', 'must be an http(s) URL when error_page_type is 2');
	}
	return { error_code: error_code as number, error_code_rewrite: error_code_rewrite as number, error_page_type: error_page_type as number, error_page_info: error_page_info ?? '' };
}

// ---------------------------------------------------------------- detection (§4.5)

function readDetectionPolicy(sim: Simulator, b: Input) {
	const name = b.str('name', true);
	const types = sim.opts.acceptIcmpType ? ['tcp', 'udp', 'icmp', 'ip', 'sip', 'http', 'total_traffic'] : ['tcp', 'udp', 'ip', 'sip', 'http', 'total_traffic'];
	const type = b.oneOf('type', types, true);
	if (name !== undefined) {
		const group = Object.keys(DETECTION_GROUPS).find((g) => DETECTION_GROUPS[g].includes(name));
		if (!group) b.issue('name', 'must be a protocol item name listed by GET detection/policy (e.g. tcp_syn, udp_total, total_traffic)');
		else if (type !== undefined && group !== type) b.issue('type', `must be '${group}' for item ${name}`);
	}
	const is_enabled = b.intOneOf('is_enabled', [0, 1], true);
	const thr = (f: string, required: boolean) => {
		const v = b.str(f, required);
		if (v !== undefined && !THRESHOLD.test(v.trim())) b.issue(f, 'must be a number, or a number with suffix K, M or G (e.g. 500, 1.5K, 20M, 1G)');
		return v?.trim();
	};
	const total = name === 'total_traffic';
	const high_pps = thr('high_pps', true);
	const low_pps = thr('low_pps', true);
	const high_bps = thr('high_bps', total);
	const low_bps = thr('low_bps', total);
	const blackhole_bps = thr('blackhole_bps', total);
	const blackhole_pps = thr('blackhole_pps', total);
	const blackhole_time = b.int('blackhole_time', total, 0);
	if (!total && name !== undefined)
		for (const f of ['high_bps', 'low_bps', 'blackhole_bps', 'blackhole_pps', 'blackhole_time'])
			if (b.has(f)) b.issue(f, 'may only be given when name is total_traffic');
	const cmp = (lowF: string, low?: string, high?: string) => {
		if (low && high && THRESHOLD.test(low) && THRESHOLD.test(high) && (thresholdValue(low) as number) > (thresholdValue(high) as number))
			b.issue(lowF, `must not exceed the high threshold (${high})`);
	};
	cmp('low_pps', low_pps, high_pps);
	cmp('low_bps', low_bps, high_bps);
	return { name: name as string, type: type as string, is_enabled: is_enabled as number, high_pps, low_pps, high_bps, low_bps, blackhole_bps, blackhole_pps, blackhole_time };
}

// ---------------------------------------------------------------- the handlers

const ap = (fn: (sim: Simulator, c: Ctx, p: ApPolicy) => unknown, enc: Encoding = 'query'): HandlerDef => ({
	enc,
	fn: (sim, c) => fn(sim, c, sim.dp(c.params).policy),
});

/** A GET that takes no parameters: reject unknown query names, then answer. */
const apGet = (fn: (p: ApPolicy) => unknown): HandlerDef =>
	ap((_s, c, p) => {
		c.done();
		return fn(p);
	});

export const handlers: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.1 authorization
	'authorization.connect': {
		enc: 'redirect',
		fn: (sim, c) => {
			const app_id = c.q.str('app_id', true);
			const redirect_uri = c.q.str('redirect_uri', true);
			c.q.oneOf('response_type', ['code'] as const);
			c.q.oneOf('scope', ['install_login'] as const);
			c.q.str('xspe');
			const state = c.q.str('state', true);
			const customer_id = c.q.str('customer_id');
			let target: URL | undefined;
			if (redirect_uri !== undefined) {
				try {
					target = new URL(redirect_uri);
					if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new Error();
				} catch {
					c.q.issue('redirect_uri', 'must be an absolute http(s) URL');
				}
			}
			c.done();
			if (app_id !== sim.opts.appId) throw new SimError(CODES.INVALID_CLIENT, 'app_id: unknown app');
			const reg = new URL(sim.opts.registeredHost);
			if (registrableDomain((target as URL).hostname) !== registrableDomain(reg.hostname))
				throw new SimError(CODES.INVALID_REDIRECT, `redirect_uri: must share the domain of the registered host (${registrableDomain(reg.hostname)})`);
			const cust = customer_id ?? sim.firstIds().customer_id;
			if (!sim.world.customers.has(cust)) throw notFound(`customer_id: customer '${cust}' does not exist`);
			const code = sim.issueCode(cust);
			const u = target as URL;
			u.searchParams.append('code', code);
			u.searchParams.append('state', state as string);
			return new Redirect(u.toString());
		},
	},
	'authorization.accessToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const secret = c.b.str('secret', true);
			const code = c.b.str('code', true);
			c.b.oneOf('grant_type', ['authorization_code'] as const, true);
			c.done();
			sim.checkClient(app_id as string, secret);
			const rec = sim.codes.get(code as string);
			if (!rec || rec.used || rec.expiresAt <= sim.nowSec())
				throw new SimError(CODES.INVALID_GRANT, `code: ${!rec ? 'unknown' : rec.used ? 'already used (codes are single-use)' : 'expired'} authorization code`);
			rec.used = true;
			const t = sim.issueUserTokens(rec.customer_id);
			return { access_token: t.access_token, expires_in: sim.opts.tokenTtl, refresh_token: t.refresh_token, scope: 'install_login', svc_account: `svc-${rec.customer_id}` };
		},
	},
	'authorization.refreshToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const refresh_token = c.b.str('refresh_token', true);
			c.b.oneOf('grant_type', ['refresh_code'] as const, true);
			c.done();
			sim.checkClient(app_id as string, undefined);
			const rec = sim.refreshTokens.get(refresh_token as string);
			if (!rec || rec.expiresAt <= sim.nowSec())
				throw new SimError(CODES.INVALID_GRANT, `refresh_token: ${rec ? 'expired' : 'unknown or already rotated'} refresh token`);
			sim.refreshTokens.delete(refresh_token as string);
			if (sim.opts.revokeAccessOnRefresh) sim.tokens.delete(rec.access_token);
			const t = sim.issueUserTokens(rec.customer_id);
			return { access_token: t.access_token, expires_in: sim.opts.tokenTtl, refresh_token: t.refresh_token, scope: 'install_login' };
		},
	},
	'authorization.appToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const secret = c.b.str('secret', true);
			c.b.oneOf('grant_type', ['client_credential'] as const, true);
			c.done();
			sim.checkClient(app_id as string, secret);
			return { access_token: sim.issueAppToken(), expires_in: sim.opts.tokenTtl };
		},
	},

	// ------------------------------------------------------------ §4.2 customers
	'customer.get': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			const cu = sim.world.customers.get(c.params.customer_id);
			if (!cu) throw notFound(`customer_id: customer '${c.params.customer_id}' does not exist`);
			const { website, address, phone, company, customer_name, email, protect_services } = cu;
			return { website, address, phone, company, customer_name, email, protect_services: { ...protect_services } };
		},
	},
	'customer.list': {
		enc: 'query',
		fn: (sim, c) => {
			const page = c.q.int('page', false, 1) ?? 1;
			c.done();
			const all = [...sim.world.customers.values()];
			const size = sim.opts.pageSize;
			return {
				pages: Math.max(1, Math.ceil(all.length / size)),
				page,
				customer: all.slice((page - 1) * size, page * size).map((x) => ({ customer_name: x.customer_name, customer_id: x.customer_id, protect_services: { ...x.protect_services } })),
			};
		},
	},

	// ------------------------------------------------------------ §4.3 application protection
	'applicationProtection.authBase.set': ap((_s, c, p) => {
		const duration = c.b.int('duration', true, 0);
		const threshold_tps = c.b.int('threshold_tps', true, 0);
		c.done();
		p.authBase.duration = duration as number;
		p.authBase.threshold_tps = threshold_tps as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.authBase.get': apGet((p) => ({ ...p.authBase })),
	'applicationProtection.authBypass.add': ap((sim, c, p) => {
		const host = c.b.str('host', true);
		const scheme = c.b.oneOf('scheme', ['http', 'https'] as const, true);
		const uri = c.b.str('uri', true);
		c.done();
		if (!p.authBypass.some((r) => r.host === host && r.scheme === scheme && r.uri === uri))
			p.authBypass.push({ host: host as string, scheme: scheme as string, uri: uri as string, url_id: ++sim.world.counters.urlId });
		return undefined;
	}, 'multipart'),
	'applicationProtection.authBypass.list': apGet((p) => p.authBypass.map((r) => ({ ...r }))),
	'applicationProtection.authBypass.delete': ap((_s, c, p) => {
		if (!INT_RE.test(c.params.url_id)) throw validationError([{ field: 'url_id', rule: 'must be an integer (bypass record id)' }]);
		c.done();
		const id = Number(c.params.url_id);
		const i = p.authBypass.findIndex((r) => r.url_id === id);
		if (i < 0) throw notFound(`url_id: bypass record ${id} does not exist`);
		p.authBypass.splice(i, 1);
		return undefined;
	}),
	'applicationProtection.authHttp.set': ap((_s, c, p) => {
		const enforce_protect = c.b.intOneOf('enforce_protect', [1, 2, 3], true);
		const max_http_request = c.b.int('max_http_request', true, 0);
		const mode = c.b.intOneOf('mode', [0, 1, 2], true);
		const p3p_enabled = c.b.intOneOf('p3p_enabled', [0, 1], true);
		const p3p_string = c.b.str('p3p_string');
		const trust_duration = c.b.int('trust_duration', true, 0);
		c.done();
		p.authHttp = {
			enforce_protect: enforce_protect as number,
			max_http_request: max_http_request as number,
			mode: mode as number,
			p3p_enabled: p3p_enabled as number,
			p3p_string: p3p_string ?? '',
			trust_duration: trust_duration as number,
		};
		return undefined;
	}, 'multipart'),
	'applicationProtection.authHttp.get': apGet((p) => ({ ...p.authHttp })),
	'applicationProtection.authIp.set': ap((sim, c, p) => {
		c.done();
		const body = c.json;
		if (!body || typeof body !== 'object' || Array.isArray(body)) throw validationError([{ field: 'body', rule: 'must be a JSON object' }]);
		const v = body as Record<string, unknown>;
		const issues: Issue[] = [];
		const isInt = (x: unknown) => typeof x === 'number' && Number.isInteger(x);
		const action = v.action;
		if (action === undefined || action === '') issues.push({ field: 'action', rule: 'is required' });
		else if (!(IP_AUTH_ACTIONS as readonly unknown[]).includes(action)) issues.push({ field: 'action', rule: `must be one of ${IP_AUTH_ACTIONS.join(', ')}` });
		for (const [f, allowed] of [['enable', [0, 1, 2]], ['mode', [0, 1, 2]]] as const) {
			if (v[f] === undefined) issues.push({ field: f, rule: 'is required' });
			else if (!isInt(v[f]) || !(allowed as readonly number[]).includes(v[f] as number)) issues.push({ field: f, rule: `must be one of ${allowed.join(', ')} (a JSON integer)` });
		}
		for (const [key, fields] of Object.entries(IP_AUTH_OBJECT_FIELDS)) {
			const o = v[key];
			if (o === undefined) continue;
			if (typeof action === 'string' && key !== `action_${action}`) {
				issues.push({ field: key, rule: `must not be set when action is ${action}: only action_${action} may be set (§4.3.3)` });
				continue;
			}
			if (!o || typeof o !== 'object' || Array.isArray(o)) {
				issues.push({ field: key, rule: `must be an object with integer fields ${fields.join(', ')}` });
				continue;
			}
			for (const f of fields) {
				const x = (o as Record<string, unknown>)[f];
				if (x === undefined) issues.push({ field: `${key}.${f}`, rule: 'is required' });
				else if (!isInt(x) || (x as number) < 0) issues.push({ field: `${key}.${f}`, rule: 'must be a non-negative integer' });
			}
			for (const k of Object.keys(o)) if (!fields.includes(k)) issues.push({ field: `${key}.${k}`, rule: `is not a field of ${key} (${fields.join(', ')})` });
		}
		if (sim.opts.unknownFields === 'reject')
			for (const k of Object.keys(v))
				if (!['action', 'enable', 'mode', ...Object.keys(IP_AUTH_OBJECT_FIELDS)].includes(k)) issues.push({ field: k, rule: 'is not a field of this operation' });
		if (issues.length) throw validationError(issues);
		p.authIp.action = action as string;
		p.authIp.enable = v.enable as number;
		p.authIp.mode = v.mode as number;
		const key = `action_${action}`;
		if (v[key] !== undefined) p.authIp.objects[key] = { ...(v[key] as Record<string, number>) };
		return undefined;
	}, 'json'),
	'applicationProtection.authIp.get': apGet((p) => {
		const key = `action_${p.authIp.action}`;
		return { action: p.authIp.action, enable: p.authIp.enable, mode: p.authIp.mode, [key]: { ...p.authIp.objects[key] } };
	}),
	'applicationProtection.headerCompliance.set': ap((_s, c, p) => {
		const http_type = c.b.oneOf('http_type', HTTP_TYPES, true);
		const name = c.b.oneOf('name', HEADER_NAMES, true);
		const value = c.b.intOneOf('value', [0, 1], true);
		c.done();
		p.headerCompliance[http_type as 'http09'][name as string] = value as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.headerCompliance.get': apGet((p) => deep(p.headerCompliance)),
	'applicationProtection.httpFilter.create': {
		enc: 'multipart',
		fn: async (sim, c) => {
			const dp = sim.dp(c.params);
			const rec = readHttpFilter(sim, c.b);
			c.done();
			return withFilterLock(sim, dp.domain_port_id, () => {
				const p_flag_id = String(++sim.world.counters.pFlag);
				dp.policy.httpFilters.push({ p_flag_id, ...rec });
				return { p_flag_id };
			});
		},
	},
	'applicationProtection.httpFilter.list': apGet((p) => p.httpFilters.map((f) => deep(f))),
	'applicationProtection.httpFilter.get': ap((_s, c, p) => {
		const id = pFlagParam(c);
		c.done();
		const f = p.httpFilters.find((x) => x.p_flag_id === id);
		if (!f) throw notFound(`p_flag_id: HTTP filter policy ${id} does not exist`);
		const { p_flag_id: _omit, ...rest } = deep(f);
		return rest;
	}),
	'applicationProtection.httpFilter.update': {
		enc: 'multipart',
		fn: async (sim, c) => {
			const dp = sim.dp(c.params);
			const id = pFlagParam(c);
			const rec = readHttpFilter(sim, c.b);
			c.done();
			if (!dp.policy.httpFilters.some((x) => x.p_flag_id === id)) throw notFound(`p_flag_id: HTTP filter policy ${id} does not exist`);
			return withFilterLock(sim, dp.domain_port_id, () => {
				const i = dp.policy.httpFilters.findIndex((x) => x.p_flag_id === id);
				if (i < 0) throw notFound(`p_flag_id: HTTP filter policy ${id} does not exist`);
				dp.policy.httpFilters[i] = { p_flag_id: id, ...rec };
				return undefined;
			});
		},
	},
	'applicationProtection.httpFilter.delete': ap((_s, c, p) => {
		const id = pFlagParam(c);
		c.done();
		const i = p.httpFilters.findIndex((x) => x.p_flag_id === id);
		if (i < 0) throw notFound(`p_flag_id: HTTP filter policy ${id} does not exist`);
		p.httpFilters.splice(i, 1);
		return undefined;
	}),
	'applicationProtection.ipBlacklist.add': { enc: 'multipart', fn: (sim, c) => ipListAdd(sim, c, 'ipBlacklist', 'ip_black_list') },
	'applicationProtection.ipBlacklist.get': apGet((p) => ({ p_info: { enable: p.ipBlacklist.enable, ipv4: { black_soc: deep(p.ipBlacklist.entries) } } })),
	'applicationProtection.ipBlacklist.remove': { enc: 'query', fn: (sim, c) => ipListRemove(sim, c, 'ipBlacklist', 'ip_black_list') },
	'applicationProtection.ipWhitelist.add': { enc: 'multipart', fn: (sim, c) => ipListAdd(sim, c, 'ipWhitelist', 'ip_white_list') },
	'applicationProtection.ipWhitelist.get': apGet((p) => ({ p_info: { enable: p.ipWhitelist.enable, ipv4: { white_soc: deep(p.ipWhitelist.entries) } } })),
	'applicationProtection.ipWhitelist.remove': { enc: 'query', fn: (sim, c) => ipListRemove(sim, c, 'ipWhitelist', 'ip_white_list') },
	'applicationProtection.xForwardedFor.set': ap((sim, c, p) => {
		const modes = sim.opts.portalVersion === '2023.2.6' ? (['append', 'reset', 'insert'] as const) : (['secure', 'append', 'reset', 'insert'] as const);
		const mode = c.b.oneOf('mode', modes, true);
		const name = c.b.str('name');
		if (mode === 'secure' && name === undefined) c.b.issue('name', 'is required when mode is secure');
		c.done();
		p.xForwardedFor = { mode: mode as string, name: name ?? '' };
		return undefined;
	}, 'multipart'),
	'applicationProtection.xForwardedFor.get': apGet((p) => ({ ...p.xForwardedFor })),
	'applicationProtection.statusCodes.create': ap((_s, c, p) => {
		const e = readStatusCode(c.b);
		c.done();
		if (p.statusCodes.error_page.some((x) => x.error_code === e.error_code))
			throw new SimError(CODES.CONFLICT_EXISTS, `error_code: an overwrite entry for ${e.error_code} already exists (use PUT to edit it)`);
		p.statusCodes.error_page.push(e);
		return undefined;
	}, 'multipart'),
	'applicationProtection.statusCodes.list': apGet((p) => deep(p.statusCodes)),
	'applicationProtection.statusCodes.update': ap((_s, c, p) => {
		const e = readStatusCode(c.b);
		c.done();
		const i = p.statusCodes.error_page.findIndex((x) => x.error_code === e.error_code);
		if (i < 0) throw notFound(`error_code: no overwrite entry for ${e.error_code}`);
		p.statusCodes.error_page[i] = e;
		return undefined;
	}, 'multipart'),
	'applicationProtection.statusCodes.delete': ap((_s, c, p) => {
		const code = c.q.int('error_code', true);
		if (code !== undefined && !OVERWRITABLE(code)) c.q.issue('error_code', 'must be an HTTP code from 400 to 417 or from 500 to 505');
		c.done();
		const i = p.statusCodes.error_page.findIndex((x) => x.error_code === code);
		if (i < 0) throw notFound(`error_code: no overwrite entry for ${code}`);
		p.statusCodes.error_page.splice(i, 1);
		return undefined;
	}),
	'applicationProtection.switch.set': ap((_s, c, p) => {
		const enable = c.b.intOneOf('enable', [0, 1], true);
		const idx = switchIndex(p.switches);
		const name = c.b.oneOf('name', [...idx.keys()], true);
		c.done();
		(idx.get(name as string) as SwitchNode).enable = enable as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.switch.list': apGet((p) => deep(p.switches)),
	'applicationProtection.uaBlacklist.add': ap((_s, c, p) => {
		const regs = c.b.list('ua_regex', true) ?? [];
		for (const r of regs) if (!isRegex(r)) c.b.issue('ua_regex', `each value must be a valid regular expression (got '${r}')`);
		const action = c.b.str('action');
		const page = c.b.str('action_annex_page');
		const enable = c.b.intOneOf('enable', [0, 1]);
		c.done();
		const ua = p.uaBlacklist.ua_black_list;
		for (const r of regs) if (!ua.ua_regex.includes(r)) ua.ua_regex.push(r);
		if (action !== undefined) ua.action = action;
		if (page !== undefined) ua.action_annex_page = page;
		if (enable !== undefined) ua.enable = enable;
		return undefined;
	}, 'multipart'),
	'applicationProtection.urlBypass.delete': ap((_s, c, p) => {
		const urls = c.q.list('url_bypass', true);
		c.done();
		// Unknown URLs are skipped without processing (§7).
		p.urlBypass = p.urlBypass.filter((u) => !(urls as string[]).includes(u));
		return undefined;
	}),

	// ------------------------------------------------------------ §4.4 dashboard
	'dashboard.eventDetail': {
		enc: 'query',
		fn: (sim, c) => {
			const module = c.q.oneOf('module', ['traffic', 'characterization', 'traffic_patterns', 'threat_map'] as const, true);
			c.done();
			const now = sim.nowSec();
			const a = sim.world.attacks.find((x) => x.id === c.params.event_id && x.start <= now);
			if (!a) throw notFound(`event_id: DDoS event '${c.params.event_id}' does not exist`);
			// The spec names each module's content (characterization[], threat_map{}, traffic{}, traffic_patterns[]):
			// the result is an object holding the requested module under its name.
			return { [module as string]: eventDetail(sim.world, a, now, module as string) };
		},
	},
	'dashboard.activeMitigation': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return activeMitigation(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.currentTraffic': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return currentTraffic(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.ddosEvents': {
		enc: 'query',
		fn: (sim, c) => {
			const site = sim.site(c.params.site_id);
			const now = sim.nowSec();
			const q = c.q;
			const alert_id = q.str('alert_id');
			const site_ip = q.str('site_ip');
			const site_name = q.str('site_name');
			const digits = (f: string, def: number, min: number) => {
				const v = q.str(f);
				if (v === undefined) return def;
				if (!/^\d+$/.test(v)) {
					q.issue(f, 'must be a non-negative integer (sent as a string)');
					return def;
				}
				if (Number(v) < min) q.issue(f, `must be at least ${min}`);
				return Number(v);
			};
			const start = digits('start', 0, 0);
			const num = digits('num', 10, 1);
			if (num > sim.opts.maxEventsNum) q.issue('num', `must be at most ${sim.opts.maxEventsNum}`);
			const time = (f: string) => {
				const v = q.str(f);
				if (v === undefined) return undefined;
				const t = parseYmdhms(v);
				if (t === undefined) q.issue(f, "must be a date-time written 'YYYY-MM-DD HH:MM:SS'");
				return t;
			};
			const st = time('start_time');
			const et = time('end_time');
			const status = q.oneOf('status', ['all', 'stopped', 'ongoing'] as const) ?? 'all';
			const d = new Date(now * 1000);
			const from = st ?? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
			const to = et ?? from + 31 * 86400;
			if (to < from) q.issue('end_time', `must not be before start_time (${formatYmdhms(from)})`);
			else if (to - from > 31 * 86400) q.issue('end_time', 'must be at most 31 days after start_time (§8)');
			c.done();
			const all = sim.world.attacks
				.filter((a) => a.site_id === site.site_id && a.start <= now && a.start <= to)
				.map((a) => eventOf(sim.world, a, now))
				.filter((e) => (e.status === 1 ? now : e.end_time) >= from)
				.filter((e) => alert_id === undefined || e.alert_id === alert_id)
				.filter((e) => site_ip === undefined || e.site_ip === site_ip)
				.filter((e) => site_name === undefined || e.site_name === site_name)
				.filter((e) => status === 'all' || (status === 'ongoing' ? e.status === 1 : e.status === 0))
				.sort((a, b) => b.start_time - a.start_time || (a.alert_id < b.alert_id ? 1 : -1));
			return { events: all.slice(start, start + num), total: all.length };
		},
	},
	'dashboard.flowDownEvents': {
		enc: 'query',
		fn: (sim, c) => {
			const site = sim.site(c.params.site_id);
			const now = sim.nowSec();
			const ts = (f: string) => {
				const v = c.q.str(f);
				if (v === undefined) return undefined;
				if (!/^\d{10}$/.test(v)) {
					c.q.issue(f, 'must be a 10-digit Unix timestamp (seconds)');
					return undefined;
				}
				return Number(v);
			};
			const et = ts('end_time');
			const st = ts('start_time');
			const status = c.q.intOneOf('status', [0, 1, 2]) ?? 2;
			const to = et ?? now;
			const from = st ?? to - 90 * 86400;
			if (to < from) c.q.issue('end_time', 'must not be before start_time');
			else if (to - from > 90 * 86400) c.q.issue('start_time', 'must be at most 90 days before end_time (§8)');
			c.done();
			return sim.world.flowDowns
				.filter((f) => f.site_id === site.site_id && f.start_time <= now && f.start_time <= to && (f.end_time === 0 || f.end_time > now ? now : f.end_time) >= from)
				.map((f) => {
					const ongoing = f.end_time === 0 || f.end_time > now;
					return {
						alert_id: f.alert_id,
						duration: (ongoing ? now : f.end_time) - f.start_time,
						start_time: f.start_time,
						end_time: ongoing ? 0 : f.end_time,
						router_name: f.router_name,
						site: site.site_name,
						_ongoing: ongoing,
					};
				})
				.filter((f) => status === 2 || (status === 0 ? f._ongoing : !f._ongoing))
				.sort((a, b) => b.start_time - a.start_time)
				.map(({ _ongoing, ...f }) => f);
		},
	},
	'dashboard.isUnderAttack': {
		enc: 'query',
		fn: (sim, c) => {
			c.done();
			return isUnderAttack(sim.world, sim.opts.mitigation, sim.site(c.params.site_id), sim.nowSec());
		},
	},
	'dashboard.networkSummary': {
		enc: 'query',
		fn: (sim, c) => {
			const range = c.q.oneOf('range', ['hour', 'day', 'week', 'month'] as const) ?? 'hour';
			const type = c.q.oneOf('type', ['bps', 'pps'] as const) ?? 'bps';
			c.done();
			return networkSummary(sim.world, sim.site(c.params.site_id), sim.nowSec(), range, type);
		},
	},

	// ------------------------------------------------------------ §4.5 detection
	'detection.setMode': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const model = c.b.oneOf('model', ['0', '1'] as const, true);
			c.done();
			lv.state.detection.model = Number(model);
			return undefined;
		},
	},
	'detection.setPolicy': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const r = readDetectionPolicy(sim, c.b);
			c.done();
			const group = Object.keys(DETECTION_GROUPS).find((g) => DETECTION_GROUPS[g].includes(r.name)) as string;
			const leaf = lv.state.detection.groups[group][r.name];
			leaf.is_enabled = r.is_enabled;
			leaf.high_pps = r.high_pps as string;
			leaf.low_pps = r.low_pps as string;
			if (r.name === 'total_traffic') {
				leaf.high_bps = r.high_bps;
				leaf.low_bps = r.low_bps;
				leaf.blackhole_bps = r.blackhole_bps;
				leaf.blackhole_pps = r.blackhole_pps;
				leaf.blackhole_time = r.blackhole_time;
			}
			return undefined;
		},
	},
	'detection.getPolicy': {
		enc: 'query',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			c.done();
			return { model: lv.state.detection.model, ...deep(lv.state.detection.groups) };
		},
	},

	// ------------------------------------------------------------ §4.6 overview
	'overview.setProfile': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const profile_id = c.b.str('profile_id', true);
			c.done();
			if (!PROFILES.some((p) => p.id === profile_id))
				throw notFound(`profile_id: auto-mitigation template '${profile_id}' does not exist (known: ${PROFILES.map((p) => p.id).join(', ')})`);
			const o = lv.state.overview;
			o.auto_profile = profile_id as string;
			if (o.detection_mode !== 0) o.detection_mode = 2;
			return undefined;
		},
	},
	'overview.setSwitch': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const is_enable = c.b.intOneOf('is_enable', [0, 1], true);
			const allowed = lv.level === 'site' ? (['detection'] as const) : (['custom', 'mitigation'] as const);
			const t = c.b.str('switch_type', true);
			if (t !== undefined && !(allowed as readonly string[]).includes(t))
				c.b.issue(
					'switch_type',
					lv.level === 'site'
						? 'must be detection at site level (network_id 0); custom and mitigation are for network and host level'
						: `must be custom or mitigation at ${lv.level} level; detection is the site-level switch (network_id 0)`,
				);
			c.done();
			const o = lv.state.overview;
			if (t === 'detection') o.detection_mode = is_enable ? (o.auto_profile ? 2 : 1) : 0;
			else if (t === 'custom') o.is_customize = is_enable as number;
			else o.mitigation_mode = is_enable as number;
			return undefined;
		},
	},
	'overview.getSwitch': {
		enc: 'query',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			c.done();
			return { ...lv.state.overview };
		},
	},
};

export { isOngoing };
