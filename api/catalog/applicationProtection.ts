import { z } from 'zod/v4';
import { defineOp, field, noResult, rec, req } from './define';
import type { Field, Operation, RefineCtx } from './types';
import {
	flag01,
	idString,
	int,
	intIn,
	intOneOf,
	ipv4EntryText,
	ipv4RangeText,
	listOf,
	nonEmpty,
	oneOf,
	parseIpv4Entry,
	rangeSize,
	toRangeText,
} from './rules';

/** §4.3 Application Protection operations. All paths are suffixes of AP. */

export const AP = '/api/specp/policy/appshield/site/{site_id}/domain-port/{domain_port_id}';

const apFields: Field[] = [
	field('site_id', 'path', 'string', idString('a site id'), 'Site id', req),
	field('domain_port_id', 'path', 'string', idString('a domain-port id'), 'Domain-port combination id', req),
];

type ApOp = Omit<Operation, 'section' | 'resource' | 'auth' | 'path' | 'encoding'> & {
	suffix: string;
	encoding?: Operation['encoding'];
};

function ap<const Id extends string>(o: ApOp & { id: Id }) {
	const { suffix, ...rest } = o;
	return defineOp<Id>({
		...rest,
		section: '4.3',
		resource: 'applicationProtection',
		auth: 'access_token',
		path: AP + suffix,
		encoding: o.encoding ?? (o.method === 'POST' || o.method === 'PUT' ? 'multipart' : 'query'),
		fields: [...apFields, ...o.fields],
	});
}

const intField = (name: string, description: string, required = true) =>
	field(name, 'body', 'integer', int(), description, { required });

// ---------------------------------------------------------------- shared shapes

export const HTTP_FILTER_ACTIONS = [
	'ACCEPT',
	'BLOCK_HTTP',
	'PASS',
	'BUSY_PAGE',
	'URL_REDIRECTION',
	'DOMAIN_REDIRECTION',
] as const;
export const HTTP_METHODS = [
	'GET',
	'POST',
	'PUT',
	'DELETE',
	'HEAD',
	'OPTIONS',
	'TRACE',
	'CONNECTION',
	'OTHER',
] as const;
export const XFF_MODES = ['secure', 'append', 'reset', 'insert'] as const;
export const IP_AUTH_ACTIONS = ['ratelimit', 'blacklist', 'ratelimit_blacklist'] as const;
export const HTTP_TYPES = ['http09', 'http10', 'http11'] as const;
export const HEADER_SWITCHES = [
	'host_required',
	'user_agent_required',
	'accept_required',
	'connection_required',
	'accept_encoding_required',
] as const;
/** Names seen in the switch tree (§2.4). The spec does not list the allowed `name` values of POST switch. */
export const SWITCH_NAMES = [
	'p_auth',
	'p_error_rewrite',
	'p_filt',
	'p_malf',
	'accept_invalid_http_request',
	'advanced',
	'p_wbl',
	'api',
	'file_extension',
	'mobile',
	'spider',
	'ua_black_list',
] as const;
export const OVERWRITABLE_CODES = [
	...Array.from({ length: 18 }, (_, i) => 400 + i),
	...Array.from({ length: 6 }, (_, i) => 500 + i),
];
export const MAX_OTHER_IPRANGE_IPS = 256;
const overwritableCode = intOneOf(
	OVERWRITABLE_CODES,
	'must be an HTTP code from 400 to 417 or from 500 to 505 (§4.3.4)',
);

const ipListEntry = rec({
	type: z.string(),
	ip: z.string().optional(),
	start_ip: z.string().optional(),
	end_ip: z.string().optional(),
});

/**
 * IP-list wrapper. The spec documents `enable` as 0 = enabled, 1 = disabled for both lists (the reverse of
 * every other switch). We keep the wire value and add `enabled` (boolean) so users get one consistent form.
 */
const ipListResult = (key: 'black_soc' | 'white_soc') =>
	rec({
		p_info: rec({
			enable: z.number().int(),
			ipv4: rec({ [key]: z.array(ipListEntry) }),
		}),
	}).transform((r) => ({ ...r, enabled: r.p_info.enable === 0 }));

const httpFilterPolicy = rec({
	p_flag_id: z.union([z.string(), z.number().transform(String)]).optional(),
	p_name: z.string(),
	p_desc: z.string().optional(),
	url: z.string().optional(),
	action: z.array(z.string()),
	action_annex: rec({
		http_code: z.number().int().optional(),
		page: z.string().optional(),
		url: z.string().optional(),
	}).optional(),
	methods: z.array(z.string()).optional(),
	other_iprange: z.array(rec({ start_ip: z.string(), end_ip: z.string() })).optional(),
});

const headerSwitches = rec(Object.fromEntries(HEADER_SWITCHES.map((k) => [k, z.number().int()])));

const statusCodeEntry = rec({
	error_code: z.number().int(),
	error_code_rewrite: z.number().int(),
	error_page_type: z.union([z.number().int(), z.string().transform(Number)]),
	error_page_info: z.string().optional(),
});

interface SwitchNode {
	enable: number;
	name: string;
	[k: string]: unknown;
}
const switchNode: z.ZodType<SwitchNode> = z.looseObject({
	enable: z.number().int(),
	name: z.string(),
}) as z.ZodType<SwitchNode>;

// ---------------------------------------------------------------- rules (§4.3.1 – §4.3.4)

function httpFilterRules(v: Record<string, unknown>, ctx: RefineCtx) {
	const action = v.action as string | undefined;
	const missing = (f: string) => v[f] === undefined || v[f] === '';
	if (action === 'BUSY_PAGE' && missing('page')) ctx.issue('page', 'is required when action is BUSY_PAGE (§4.3.1)');
	if (action === 'URL_REDIRECTION' || action === 'DOMAIN_REDIRECTION') {
		for (const f of ['redirect_host', 'rp_code', 'scheme'])
			if (missing(f)) ctx.issue(f, `is required when action is ${action} (§4.3.1)`);
	}
	if (action === 'URL_REDIRECTION' && missing('redirect_url'))
		ctx.issue('redirect_url', 'is required when action is URL_REDIRECTION (§4.3.1)');
	const ranges = v.other_iprange as string[] | undefined;
	if (ranges) {
		let total = 0;
		for (const r of ranges) {
			const parsed = parseIpv4Entry(r, false);
			if (parsed) total += rangeSize(parsed);
		}
		if (total > MAX_OTHER_IPRANGE_IPS)
			ctx.issue('other_iprange', `must cover at most ${MAX_OTHER_IPRANGE_IPS} IPs in total (§4.3.1, §8); got ${total}`);
	}
}

const httpFilterFields: Field[] = [
	field('action', 'body', 'options', oneOf(HTTP_FILTER_ACTIONS), 'What to do with matching requests', {
		required: true,
		options: HTTP_FILTER_ACTIONS,
	}),
	field('host', 'body', 'string', nonEmpty(), 'Host name', req),
	field('uri', 'body', 'string', nonEmpty(), 'Path; regular expressions supported', req),
	field('p_name', 'body', 'string', nonEmpty(), 'Policy name', req),
	field('p_desc', 'body', 'string', z.string(), 'Description'),
	field(
		'methods',
		'body',
		'stringList',
		listOf(oneOf(HTTP_METHODS), `must be a list of HTTP methods (${HTTP_METHODS.join(', ')})`),
		'Request methods to match',
		{ options: HTTP_METHODS },
	),
	field(
		'other_iprange',
		'body',
		'stringList',
		listOf(ipv4RangeText(), 'must be a list of IPv4 ranges written start-end'),
		'Source IP ranges written start-end; at most 256 IPs in total',
	),
	field('page', 'body', 'string', z.string(), 'Busy page configured by the administrator (BUSY_PAGE)', {
		showWhen: { action: ['BUSY_PAGE'] },
	}),
	field('redirect_host', 'body', 'string', z.string(), 'Redirect host (both redirection actions)', {
		showWhen: { action: ['URL_REDIRECTION', 'DOMAIN_REDIRECTION'] },
	}),
	field('redirect_url', 'body', 'string', z.string(), 'Redirect URL (URL_REDIRECTION)', {
		showWhen: { action: ['URL_REDIRECTION'] },
	}),
	field('rp_code', 'body', 'options', intOneOf([301, 302]), 'Redirect status code (301 or 302)', {
		options: [301, 302],
		showWhen: { action: ['URL_REDIRECTION', 'DOMAIN_REDIRECTION'] },
	}),
	field('scheme', 'body', 'options', oneOf(['http', 'https']), 'Redirect scheme', {
		options: ['http', 'https'],
		showWhen: { action: ['URL_REDIRECTION', 'DOMAIN_REDIRECTION'] },
	}),
];

const pFlagId = field(
	'p_flag_id',
	'path',
	'string',
	z
		.union([z.number().int().nonnegative().transform(String), z.string()], { error: 'must be a policy id (digits)' })
		.pipe(z.string().regex(/^\d+$/, { error: 'must be a policy id (digits); the path takes an integer' })),
	'HTTP filter policy id (string in results, integer in the path)',
	req,
);

const ipAuthObj = <S extends z.ZodRawShape>(shape: S, what: string) =>
	z.strictObject(shape, { error: `must be an object with integer fields ${Object.keys(shape).join(', ')} (${what})` });

function ipAuthRules(v: Record<string, unknown>, ctx: RefineCtx) {
	const action = v.action as string | undefined;
	if (!action) return;
	for (const a of IP_AUTH_ACTIONS) {
		const key = `action_${a}`;
		if (a !== action && v[key] !== undefined)
			ctx.issue(key, `must not be set when action is ${action}: only action_${action} may be set (§4.3.3)`);
	}
}

function statusCodeRules(v: Record<string, unknown>, ctx: RefineCtx) {
	if (Number(v.error_page_type) === 2 && (v.error_page_info === undefined || v.error_page_info === ''))
		ctx.issue('error_page_info', 'is required when error_page_type is 2 (custom page by URL) (§4.3.4)');
}

const statusCodeFields = (updating: boolean): Field[] => [
	field(
		'error_code',
		'body',
		'integer',
		overwritableCode,
		updating ? 'Overwritten status code (selects the existing entry)' : 'Status code to overwrite (400-417, 500-505)',
		req,
	),
	field('error_code_rewrite', 'body', 'integer', intIn(100, 999), 'Status code sent instead (100-999)', req),
	field(
		'error_page_type',
		'body',
		'options',
		intOneOf([0, 1, 2]),
		'0 default stock page, 1 vendor-customized page, 2 custom page by URL (declared string; sent as "0"/"1"/"2")',
		{ required: true, options: [0, 1, 2] },
	),
	field(
		'error_page_info',
		'body',
		'string',
		z.url({ error: 'must be a URL' }),
		'Custom page URL (required when error_page_type is 2)',
		{
			showWhen: { error_page_type: [2] },
		},
	),
];

const ipBlacklistField = (required: boolean, inLoc: 'body' | 'query', name: string, description: string) =>
	field(
		name,
		inLoc,
		'stringList',
		inLoc === 'body'
			? // The spec writes list entries as start-end ranges: addresses and CIDRs are sent in that form.
				ipv4EntryText().transform(toRangeText)
			: listOf(ipv4EntryText(), 'must be a list of IPv4 addresses, start-end ranges or CIDRs'),
		description,
		{ required, arrayWire: 'csv' },
	);

/** Not a wire field: the audited override of the blast-radius guard's widest-prefix rule (api/blastRadius.ts). */
const wideOverrideField = (what: string) =>
	field(
		'allowWideBlock',
		'body',
		'string',
		z.string().max(500),
		`Why ${what} wider than the widest prefix (/16) is needed; recorded, never sent`,
		{ local: true },
	);

// ---------------------------------------------------------------- the 32 operations

export const applicationProtection = [
	ap({
		id: 'applicationProtection.authBase.set',
		group: 'authBase',
		action: 'set',
		summary: 'Set the authentication auto mitigation (duration, threshold_tps)',
		method: 'POST',
		suffix: '/authentication/base',
		safety: 'idempotent',
		fields: [
			intField('duration', 'Duration in seconds (end time)'),
			intField('threshold_tps', 'Threshold in requests/s'),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.authBase.get',
		group: 'authBase',
		action: 'get',
		summary: 'Get the authentication auto mitigation',
		method: 'GET',
		suffix: '/authentication/base',
		safety: 'read',
		fields: [],
		result: rec({
			duration: z.number().int(),
			recaptcha_per_ip_tps: z.number().int(),
			threshold_tps: z.number().int(),
		}),
	}),
	ap({
		id: 'applicationProtection.authBypass.add',
		group: 'authBypass',
		action: 'add',
		summary: 'Add an authentication bypass record',
		method: 'POST',
		suffix: '/authentication/bypass',
		safety: 'unsafe',
		fields: [
			field('host', 'body', 'string', nonEmpty(), 'Host', req),
			field('scheme', 'body', 'options', oneOf(['http', 'https']), 'http or https', {
				required: true,
				options: ['http', 'https'],
			}),
			field('uri', 'body', 'string', nonEmpty(), 'URI', req),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.authBypass.list',
		group: 'authBypass',
		action: 'list',
		summary: 'List authentication bypass records',
		method: 'GET',
		suffix: '/authentication/bypass',
		safety: 'read',
		fields: [],
		result: z.array(rec({ host: z.string(), scheme: z.string(), uri: z.string(), url_id: z.number().int() })),
		list: { itemsAt: '' },
	}),
	ap({
		id: 'applicationProtection.authBypass.delete',
		group: 'authBypass',
		action: 'delete',
		summary: 'Delete an authentication bypass record',
		method: 'DELETE',
		suffix: '/authentication/bypass/{url_id}',
		safety: 'idempotent',
		fields: [field('url_id', 'path', 'integer', int('must be an integer record id'), 'Bypass record id', req)],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.authHttp.set',
		group: 'authHttp',
		action: 'set',
		summary: 'Set HTTP authentication',
		method: 'POST',
		suffix: '/authentication/http',
		safety: 'idempotent',
		fields: [
			field('enforce_protect', 'body', 'options', intOneOf([1, 2, 3]), '1 low, 2 medium, 3 high', {
				required: true,
				options: [1, 2, 3],
			}),
			intField('max_http_request', 'Requests per minute per user'),
			field('mode', 'body', 'options', intOneOf([0, 1, 2]), '0 off, 1 on, 2 auto', {
				required: true,
				options: [0, 1, 2],
			}),
			field('p3p_enabled', 'body', 'boolean01', flag01(), '0 off, 1 on', req),
			field(
				'p3p_string',
				'body',
				'string',
				z.union([z.string(), z.number().transform(String)], { error: 'must be text (P3P information)' }),
				'P3P information (declared integer in the request, string in the response; sent as text)',
			),
			intField('trust_duration', 'Trust duration in seconds'),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.authHttp.get',
		group: 'authHttp',
		action: 'get',
		summary: 'Get HTTP authentication',
		method: 'GET',
		suffix: '/authentication/http',
		safety: 'read',
		fields: [],
		result: rec({
			enforce_protect: z.number().int(),
			max_http_request: z.number().int(),
			mode: z.number().int(),
			p3p_enabled: z.number().int(),
			p3p_string: z.union([z.string(), z.number().transform(String)]).optional(),
			trust_duration: z.number().int(),
		}),
	}),
	ap({
		id: 'applicationProtection.authIp.set',
		group: 'authIp',
		action: 'set',
		summary: 'Set IP authentication (JSON body)',
		method: 'POST',
		suffix: '/authentication/ip',
		encoding: 'json',
		safety: 'idempotent',
		fields: [
			field('action', 'body', 'options', oneOf(IP_AUTH_ACTIONS), 'ratelimit, blacklist or ratelimit_blacklist', {
				required: true,
				options: IP_AUTH_ACTIONS,
			}),
			field('enable', 'body', 'options', intOneOf([0, 1, 2]), '0 off, 1 on, 2 auto', {
				required: true,
				options: [0, 1, 2],
			}),
			field('mode', 'body', 'options', intOneOf([0, 1, 2]), '0 off, 1 monitor, 2 block', {
				required: true,
				options: [0, 1, 2],
			}),
			field(
				'action_blacklist',
				'body',
				'object',
				ipAuthObj({ duration: int(), threshold_rps: int() }, 'blacklist'),
				'Only when action is blacklist',
				{ showWhen: { action: ['blacklist'] } },
			),
			field(
				'action_ratelimit',
				'body',
				'object',
				ipAuthObj({ duration: int(), ratelimit_rps: int(), threshold_rps: int() }, 'ratelimit'),
				'Only when action is ratelimit',
				{ showWhen: { action: ['ratelimit'] } },
			),
			field(
				'action_ratelimit_blacklist',
				'body',
				'object',
				ipAuthObj(
					{ blacklist_threshold_rps: int(), duration: int(), ratelimit_rps: int(), ratelimit_threshold_rps: int() },
					'ratelimit_blacklist',
				),
				'Only when action is ratelimit_blacklist',
				{ showWhen: { action: ['ratelimit_blacklist'] } },
			),
		],
		refine: ipAuthRules,
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.authIp.get',
		group: 'authIp',
		action: 'get',
		summary: 'Get IP authentication',
		method: 'GET',
		suffix: '/authentication/ip',
		safety: 'read',
		fields: [],
		result: rec({
			action: z.string(),
			enable: z.number().int(),
			mode: z.number().int(),
			action_blacklist: rec({ duration: z.number().int(), threshold_rps: z.number().int() }).optional(),
			action_ratelimit: rec({
				duration: z.number().int(),
				ratelimit_rps: z.number().int(),
				threshold_rps: z.number().int(),
			}).optional(),
			action_ratelimit_blacklist: rec({
				blacklist_threshold_rps: z.number().int(),
				duration: z.number().int(),
				ratelimit_rps: z.number().int(),
				ratelimit_threshold_rps: z.number().int(),
			}).optional(),
		}),
	}),
	ap({
		id: 'applicationProtection.headerCompliance.set',
		group: 'headerCompliance',
		action: 'set',
		summary: 'Set one required-header switch',
		method: 'POST',
		suffix: '/compliance/request-header',
		safety: 'idempotent',
		fields: [
			field('http_type', 'body', 'options', oneOf(HTTP_TYPES), 'Protocol version', {
				required: true,
				options: HTTP_TYPES,
			}),
			field('name', 'body', 'options', oneOf(HEADER_SWITCHES), 'Required header', {
				required: true,
				options: HEADER_SWITCHES,
			}),
			field('value', 'body', 'boolean01', flag01(), '0 off, 1 on', req),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.headerCompliance.get',
		group: 'headerCompliance',
		action: 'get',
		summary: 'Get the required-header switches',
		method: 'GET',
		suffix: '/compliance/request-header',
		safety: 'read',
		fields: [],
		result: rec({ http09: headerSwitches, http10: headerSwitches, http11: headerSwitches }),
	}),
	ap({
		id: 'applicationProtection.httpFilter.create',
		group: 'httpFilter',
		action: 'create',
		summary: 'Create an HTTP filter policy (no concurrent create/edit)',
		method: 'POST',
		suffix: '/http-filter',
		safety: 'unsafe',
		fields: httpFilterFields,
		refine: httpFilterRules,
		result: rec({ p_flag_id: z.union([z.string(), z.number().transform(String)]) }),
	}),
	ap({
		id: 'applicationProtection.httpFilter.list',
		group: 'httpFilter',
		action: 'list',
		summary: 'List HTTP filter policies',
		method: 'GET',
		suffix: '/http-filter',
		safety: 'read',
		fields: [],
		result: z.array(httpFilterPolicy),
		list: { itemsAt: '' },
	}),
	ap({
		id: 'applicationProtection.httpFilter.get',
		group: 'httpFilter',
		action: 'get',
		summary: 'Get one HTTP filter policy',
		method: 'GET',
		suffix: '/http-filter/{p_flag_id}',
		safety: 'read',
		fields: [pFlagId],
		result: httpFilterPolicy,
	}),
	ap({
		id: 'applicationProtection.httpFilter.update',
		group: 'httpFilter',
		action: 'update',
		summary: 'Replace an HTTP filter policy (no concurrent create/edit)',
		method: 'PUT',
		suffix: '/http-filter/{p_flag_id}',
		safety: 'idempotent',
		fields: [pFlagId, ...httpFilterFields],
		refine: httpFilterRules,
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.httpFilter.delete',
		group: 'httpFilter',
		action: 'delete',
		summary: 'Delete an HTTP filter policy',
		method: 'DELETE',
		suffix: '/http-filter/{p_flag_id}',
		safety: 'idempotent',
		fields: [pFlagId],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.ipBlacklist.add',
		group: 'ipBlacklist',
		action: 'add',
		summary: 'Add an IP range to the blacklist',
		method: 'POST',
		suffix: '/ip-black-list',
		// The spec does not say whether a repeated add duplicates the entry: never repeated blindly here; the
		// worker's activity makes it idempotent (reads the list first).
		safety: 'unsafe',
		fields: [
			ipBlacklistField(true, 'body', 'ip_black_list', 'IP address, start-end range or CIDR'),
			wideOverrideField('a block'),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.ipBlacklist.get',
		group: 'ipBlacklist',
		action: 'get',
		summary: 'Get the IP blacklist',
		method: 'GET',
		suffix: '/ip-black-list',
		safety: 'read',
		fields: [],
		result: ipListResult('black_soc'),
		list: { itemsAt: 'p_info.ipv4.black_soc' },
	}),
	ap({
		id: 'applicationProtection.ipBlacklist.remove',
		group: 'ipBlacklist',
		action: 'remove',
		summary: 'Remove entries from the IP blacklist',
		method: 'DELETE',
		suffix: '/ip-black-list',
		safety: 'idempotent',
		fields: [ipBlacklistField(true, 'query', 'ip_black_list', 'Entries to remove (sent comma-separated)')],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.ipWhitelist.add',
		group: 'ipWhitelist',
		action: 'add',
		summary: 'Add an IP range to the whitelist',
		method: 'POST',
		suffix: '/ip-white-list',
		// The spec does not say whether a repeated add duplicates the entry: never repeated blindly here; the
		// worker's activity makes it idempotent (reads the list first).
		safety: 'unsafe',
		fields: [
			ipBlacklistField(true, 'body', 'ip_white_list', 'IP address, start-end range or CIDR'),
			wideOverrideField('an allowed entry'),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.ipWhitelist.get',
		group: 'ipWhitelist',
		action: 'get',
		summary: 'Get the IP whitelist',
		method: 'GET',
		suffix: '/ip-white-list',
		safety: 'read',
		fields: [],
		result: ipListResult('white_soc'),
		list: { itemsAt: 'p_info.ipv4.white_soc' },
	}),
	ap({
		id: 'applicationProtection.ipWhitelist.remove',
		group: 'ipWhitelist',
		action: 'remove',
		summary: 'Remove entries from the IP whitelist',
		method: 'DELETE',
		suffix: '/ip-white-list',
		safety: 'idempotent',
		fields: [ipBlacklistField(true, 'query', 'ip_white_list', 'Entries to remove (sent comma-separated)')],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.xForwardedFor.set',
		group: 'xForwardedFor',
		action: 'set',
		summary: 'Set the X-Forwarded-For policy',
		method: 'POST',
		suffix: '/request-header/x-forward-for',
		safety: 'idempotent',
		fields: [
			field('mode', 'body', 'options', oneOf(XFF_MODES), 'secure, append, reset or insert', {
				required: true,
				options: XFF_MODES,
			}),
			field('name', 'body', 'string', z.string(), 'Header name (required when mode is secure)', {
				showWhen: { mode: ['secure'] },
			}),
			// Not a wire field: selects the rule set of the portal version (§4.3.2). Never sent.
			field(
				'portal_version',
				'body',
				'options',
				oneOf(['legacy', '2023.2.6']),
				"Portal version: '2023.2.6' and later drop 'secure' (not sent)",
				{
					options: ['legacy', '2023.2.6'],
					default: 'legacy',
					local: true,
				},
			),
		],
		refine: (v, ctx) => {
			if (v.mode === 'secure' && (v.name === undefined || v.name === ''))
				ctx.issue('name', 'is required when mode is secure (§4.3.2)');
			if (v.portal_version === '2023.2.6' && v.mode === 'secure')
				ctx.issue(
					'mode',
					"must be append, reset or insert from portal version 2023.2.6 on ('secure' was dropped) (§4.3.2)",
				);
		},
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.xForwardedFor.get',
		group: 'xForwardedFor',
		action: 'get',
		summary: 'Get the X-Forwarded-For policy',
		method: 'GET',
		suffix: '/request-header/x-forward-for',
		safety: 'read',
		fields: [],
		result: rec({ mode: z.string(), name: z.string().optional() }),
	}),
	ap({
		id: 'applicationProtection.statusCodes.create',
		group: 'statusCodes',
		action: 'create',
		summary: 'Add a status code overwrite entry',
		method: 'POST',
		suffix: '/status-codes',
		safety: 'unsafe',
		fields: statusCodeFields(false),
		refine: statusCodeRules,
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.statusCodes.list',
		group: 'statusCodes',
		action: 'list',
		summary: 'List status code overwrite entries',
		method: 'GET',
		suffix: '/status-codes',
		safety: 'read',
		fields: [],
		result: rec({ enable: z.number().int(), error_page: z.array(statusCodeEntry) }),
		list: { itemsAt: 'error_page' },
	}),
	ap({
		id: 'applicationProtection.statusCodes.update',
		group: 'statusCodes',
		action: 'update',
		summary: 'Edit the status code overwrite entry selected by error_code',
		method: 'PUT',
		suffix: '/status-codes',
		safety: 'idempotent',
		fields: statusCodeFields(true),
		refine: statusCodeRules,
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.statusCodes.delete',
		group: 'statusCodes',
		action: 'delete',
		summary: 'Delete the status code overwrite entry selected by error_code',
		method: 'DELETE',
		suffix: '/status-codes',
		safety: 'idempotent',
		fields: [
			field('error_code', 'query', 'integer', overwritableCode, 'Overwritten status code (400-417, 500-505)', req),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.switch.set',
		group: 'switch',
		action: 'set',
		summary: 'Turn a policy switch on or off',
		method: 'POST',
		suffix: '/switch',
		safety: 'idempotent',
		fields: [
			field('enable', 'body', 'boolean01', flag01(), '0 disabled, 1 enabled', req),
			// The spec does not list allowed names; we accept any non-empty name and suggest the switch-tree names.
			field('name', 'body', 'string', nonEmpty(), `Policy name (switch tree names: ${SWITCH_NAMES.join(', ')})`, {
				required: true,
				options: SWITCH_NAMES,
			}),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.switch.list',
		group: 'switch',
		action: 'list',
		summary: 'Get the policy switch tree',
		method: 'GET',
		suffix: '/switches',
		safety: 'read',
		fields: [],
		result: rec({
			p_auth: switchNode,
			p_error_rewrite: switchNode,
			p_filt: switchNode,
			p_malf: switchNode,
			p_wbl: switchNode,
		}),
	}),
	ap({
		id: 'applicationProtection.uaBlacklist.add',
		group: 'uaBlacklist',
		action: 'add',
		summary: 'Add entries to the user-agent blacklist',
		method: 'POST',
		suffix: '/ua-black-list',
		safety: 'idempotent',
		// Request fields are not shown in the spec; we send the fields of the UA blacklist record (§2.4).
		fields: [
			field(
				'ua_regex',
				'body',
				'stringList',
				listOf(nonEmpty(), 'must be a list of user-agent regular expressions').pipe(
					z.array(z.string()).min(1, { error: 'must hold at least one user-agent regular expression' }),
				),
				'User-agent regular expressions',
				req,
			),
			field('action', 'body', 'string', z.string(), 'Action for matching user agents'),
			field('action_annex_page', 'body', 'string', z.string(), 'Page shown for the action'),
			field('enable', 'body', 'boolean01', flag01(), '0 off, 1 on'),
		],
		result: noResult,
	}),
	ap({
		id: 'applicationProtection.urlBypass.delete',
		group: 'urlBypass',
		action: 'delete',
		summary: 'Delete URLs from the URL bypass list (unknown URLs are skipped)',
		method: 'DELETE',
		suffix: '/url-bypass',
		safety: 'idempotent',
		fields: [
			field(
				'url_bypass',
				'query',
				'stringList',
				listOf(nonEmpty(), 'must be a list of URLs').pipe(
					z.array(z.string()).min(1, { error: 'must hold at least one URL' }),
				),
				'URLs to delete',
				{ required: true, arrayWire: 'repeat' },
			),
		],
		result: noResult,
	}),
];
