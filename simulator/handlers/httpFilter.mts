/** §4.3.1 HTTP filter policies: create / list / get / update / delete; no concurrent create/edit on a domain-port. */
import { CODES } from '../codes.mts';
import type { Simulator } from '../index.mts';
import { HTTP_FILTER_ACTIONS, HTTP_METHODS, type HttpFilterPolicy } from '../state.mts';
import { Input, SimError, intToIp, ipToInt, notFound, parseRange, sleep, validationError } from '../util.mts';
import { type Ctx, type HandlerDef, deep, ap, apGet, isRegex } from './shared.mts';

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
		if (!(HTTP_METHODS as readonly string[]).includes(m))
			b.issue('methods', `each value must be one of ${HTTP_METHODS.join(', ')} (got '${m}')`);
	const ranges = b.list('other_iprange') ?? [];
	const other: { start_ip: string; end_ip: string }[] = [];
	let total = 0;
	for (const r of ranges) {
		const t = r.trim();
		const p = t.includes('-')
			? parseRange(t)
			: ipToInt(t) !== undefined
				? { start: ipToInt(t) as number, end: ipToInt(t) as number }
				: undefined;
		if (!p) {
			b.issue('other_iprange', `each value must be an IPv4 range written start-end with start ≤ end (got '${r}')`);
			continue;
		}
		total += p.end - p.start + 1;
		other.push({ start_ip: intToIp(p.start), end_ip: intToIp(p.end) });
	}
	if (total > sim.opts.maxOtherIpRange)
		b.issue('other_iprange', `must cover at most ${sim.opts.maxOtherIpRange} IPs in total (§8); got ${total}`);
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
	if (action === 'URL_REDIRECTION' && redirect_url === undefined)
		b.issue('redirect_url', 'is required when action is URL_REDIRECTION');
	return {
		p_name: p_name ?? '',
		p_desc,
		url: `${host ?? ''}${uri ?? ''}`,
		action: action ? [action] : [],
		action_annex: {
			http_code: redirect ? (rp_code ?? 0) : 0,
			page: page ?? '',
			url:
				action === 'URL_REDIRECTION'
					? `${scheme}://${redirect_host}${redirect_url}`
					: action === 'DOMAIN_REDIRECTION'
						? `${scheme}://${redirect_host}`
						: '',
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
		throw new SimError(
			CODES.CONFLICT_BUSY,
			'another HTTP filter policy create/edit is in progress on this domain-port; concurrent requests are not supported (§4.3.1)',
		);
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

export const httpFilter: Record<string, HandlerDef> = {
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
			if (!dp.policy.httpFilters.some((x) => x.p_flag_id === id))
				throw notFound(`p_flag_id: HTTP filter policy ${id} does not exist`);
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
};
