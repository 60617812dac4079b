// One valid input per operation (test data): the hand-written ones below where a test needs a meaningful value,
// and for every other catalog operation one built from its field rules (generatedSample). Ids here are stand-ins
// the simulator tests replace with its seeded ids; the loopback tests don't care about ids.
import { catalog } from '../../api/catalog/index.ts';
import type { CatalogEntry } from '../../api/catalog/types.ts';

export const SITE = { site_id: 'site-1', domain_port_id: 'dp-1' };
export const OPV = { customer_id: 'cust-1', site_id: 'site-1', network_id: '0', host_id: '0' };

const written: Record<string, Record<string, unknown>> = {
	'authorization.connect': { app_id: 'demo-app', redirect_uri: 'https://app.example.com/cb', state: 'st-123456' },
	'authorization.accessToken': { app_id: 'demo-app', secret: 'demo-secret', code: 'code-1' },
	'authorization.refreshToken': { app_id: 'demo-app', refresh_token: 'rt-1' },
	'authorization.appToken': { app_id: 'demo-app', secret: 'demo-secret' },
	'customer.get': { customer_id: 'cust-1' },
	'customer.list': { page: 1 },
	'applicationProtection.authBase.set': { ...SITE, duration: 600, threshold_tps: 100 },
	'applicationProtection.authBase.get': { ...SITE },
	'applicationProtection.authBypass.add': { ...SITE, host: 'www.example.com', scheme: 'https', uri: '/health' },
	'applicationProtection.authBypass.list': { ...SITE },
	'applicationProtection.authBypass.delete': { ...SITE, url_id: 1 },
	'applicationProtection.authHttp.set': {
		...SITE,
		enforce_protect: 2,
		max_http_request: 120,
		mode: 1,
		p3p_enabled: 0,
		trust_duration: 3600,
	},
	'applicationProtection.authHttp.get': { ...SITE },
	'applicationProtection.authIp.set': {
		...SITE,
		action: 'ratelimit',
		enable: 1,
		mode: 2,
		action_ratelimit: { duration: 300, ratelimit_rps: 50, threshold_rps: 100 },
	},
	'applicationProtection.authIp.get': { ...SITE },
	'applicationProtection.headerCompliance.set': { ...SITE, http_type: 'http11', name: 'host_required', value: 1 },
	'applicationProtection.headerCompliance.get': { ...SITE },
	'applicationProtection.httpFilter.create': {
		...SITE,
		action: 'BLOCK_HTTP',
		host: 'www.example.com',
		uri: '/admin.*',
		p_name: 'block-admin',
		methods: ['GET', 'POST'],
		other_iprange: ['10.0.0.1-10.0.0.16'],
	},
	'applicationProtection.httpFilter.list': { ...SITE },
	'applicationProtection.httpFilter.get': { ...SITE, p_flag_id: '1' },
	'applicationProtection.httpFilter.update': {
		...SITE,
		p_flag_id: 1,
		action: 'URL_REDIRECTION',
		host: 'www.example.com',
		uri: '/old',
		p_name: 'redir',
		redirect_host: 'new.example.com',
		redirect_url: '/new',
		rp_code: 301,
		scheme: 'https',
	},
	'applicationProtection.httpFilter.delete': { ...SITE, p_flag_id: '1' },
	'applicationProtection.ipBlacklist.add': { ...SITE, ip_black_list: '198.51.100.0-198.51.100.255' },
	'applicationProtection.ipBlacklist.get': { ...SITE },
	'applicationProtection.ipBlacklist.remove': { ...SITE, ip_black_list: ['198.51.100.0-198.51.100.255'] },
	'applicationProtection.ipWhitelist.add': { ...SITE, ip_white_list: '198.51.100.0-198.51.100.15' },
	'applicationProtection.ipWhitelist.get': { ...SITE },
	'applicationProtection.ipWhitelist.remove': { ...SITE, ip_white_list: '198.51.100.0-198.51.100.15' },
	'applicationProtection.xForwardedFor.set': { ...SITE, mode: 'secure', name: 'X-Real-IP' },
	'applicationProtection.xForwardedFor.get': { ...SITE },
	'applicationProtection.statusCodes.create': {
		...SITE,
		error_code: 404,
		error_code_rewrite: 200,
		error_page_type: 2,
		error_page_info: 'https://www.example.com/404.html',
	},
	'applicationProtection.statusCodes.list': { ...SITE },
	'applicationProtection.statusCodes.update': { ...SITE, error_code: 404, error_code_rewrite: 410, error_page_type: 0 },
	'applicationProtection.statusCodes.delete': { ...SITE, error_code: 404 },
	'applicationProtection.switch.set': { ...SITE, name: 'p_filt', enable: 1 },
	'applicationProtection.switch.list': { ...SITE },
	'applicationProtection.uaBlacklist.add': { ...SITE, ua_regex: ['curl/.*', 'python-requests/.*'] },
	'applicationProtection.urlBypass.delete': {
		...SITE,
		url_bypass: ['https://www.example.com/a', 'https://www.example.com/b'],
	},
	'dashboard.eventDetail': { event_id: 'evt-1', module: 'threat_map' },
	'dashboard.activeMitigation': { site_id: 'site-1' },
	'dashboard.currentTraffic': { site_id: 'site-1' },
	'dashboard.ddosEvents': {
		site_id: 'site-1',
		start: 0,
		num: 10,
		start_time: '2026-11-01 00:00:00',
		end_time: '2026-11-30 00:00:00',
		status: 'all',
	},
	'dashboard.flowDownEvents': { site_id: 'site-1', start_time: '1793000000', end_time: '1793500000', status: 2 },
	'dashboard.isUnderAttack': { site_id: 'site-1' },
	'dashboard.networkSummary': { site_id: 'site-1', range: 'hour', type: 'bps' },
	'detection.setMode': { ...OPV, model: '1' },
	'detection.setPolicy': {
		...OPV,
		name: 'total_traffic',
		type: 'total_traffic',
		is_enabled: '1',
		high_pps: '2M',
		low_pps: '1M',
		high_bps: '10G',
		low_bps: '5G',
		blackhole_bps: '40G',
		blackhole_pps: '20M',
		blackhole_time: 600,
	},
	'detection.getPolicy': { ...OPV },
	'overview.setProfile': { ...OPV, profile_id: 'profile-1' },
	'overview.setSwitch': { ...OPV, switch_type: 'detection', is_enable: 1 },
	'overview.getSwitch': { ...OPV },
};

/** Values tried, in order, for a required field: the first its own rule accepts is taken. */
const BY_NAME: Record<string, unknown> = {
	...SITE,
	...OPV,
	event_id: 'evt-1',
	app_id: 'demo-app',
	secret: 'demo-secret',
};
const CANDIDATES: readonly unknown[] = [
	1,
	0,
	200,
	404,
	'1',
	'sample-1',
	'https://www.example.com/',
	'www.example.com',
	'/',
	'192.0.2.1-192.0.2.1',
	['192.0.2.1-192.0.2.1'],
	['sample-1'],
	'2026-11-01 00:00:00',
	{},
];

/**
 * A valid input built from an operation's field rules: each required field gets the first candidate its schema
 * accepts (optional fields are left out), and the whole input must pass the operation's request schema
 * (cross-field rules). A reason naming the field or the rule when no such input is found.
 */
export function generatedSample(op: CatalogEntry): Record<string, unknown> | string {
	const input: Record<string, unknown> = {};
	const choices: Record<string, unknown[]> = {};
	for (const f of op.fields) {
		if (!f.required || f.constant !== undefined) continue;
		const tries = [BY_NAME[f.name], f.default, ...(f.options ?? []), ...CANDIDATES].filter((v) => v !== undefined);
		choices[f.name] = tries.filter((v) => f.schema.safeParse(v).success);
		if (choices[f.name].length === 0) return `${op.id}: no candidate value passes the rule of ${f.name}`;
		input[f.name] = choices[f.name][0];
	}
	// A cross-field rule may refuse the first choices: try the other accepted values of one field at a time.
	const variants = [
		input,
		...Object.entries(choices).flatMap(([name, vs]) => vs.slice(1).map((v) => ({ ...input, [name]: v }))),
	];
	const found = variants.find((v) => op.request.safeParse(v).success);
	if (found) return found;
	const r = op.request.safeParse(input);
	return `${op.id}: ${r.success ? '' : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
}

/** Operations without a hand-written sample whose rules gave none (the catalog test names them). */
export const unsampled: string[] = [];

export const samples: Record<string, Record<string, unknown>> = { ...written };
for (const op of catalog) {
	if (samples[op.id]) continue;
	const g = generatedSample(op);
	if (typeof g === 'string') unsampled.push(g);
	else samples[op.id] = g;
}
