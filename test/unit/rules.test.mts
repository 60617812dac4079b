// A failing case for each rule of the spec the client enforces before sending: the error names the field
// and the rule, and no request leaves the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../../api/client.ts';
import { ValidationError } from '../../api/errors.ts';
import type { HttpRequest } from '../../api/transport/types.ts';
import { samples } from '../helpers/samples.mts';
import { entryRangeKey, listEntryRange, listEntryText } from '../../api/catalog/ipv4.ts';

const sent: HttpRequest[] = [];
const client = createClient({
	baseUrl: 'http://127.0.0.1:9',
	transport: async (r) => {
		sent.push(r);
		return { status: 200, headers: {}, body: '{"code":0,"msg":"ok","result":{"access_token":"t","expires_in":7200}}' };
	},
	credentials: { appId: 'a', secret: 'never-sent-secret', tokenKind: 'app' },
});

type Case = [title: string, opId: string, change: Record<string, unknown>, field: string, rule: RegExp];
const del = undefined;

const cases: Case[] = [
	// §4.3.1 HTTP filter
	['action enum', 'applicationProtection.httpFilter.create', { action: 'DROP' }, 'action', /one of ACCEPT, BLOCK_HTTP/],
	[
		'page for BUSY_PAGE',
		'applicationProtection.httpFilter.create',
		{ action: 'BUSY_PAGE' },
		'page',
		/required when action is BUSY_PAGE/,
	],
	[
		'redirect_host for DOMAIN_REDIRECTION',
		'applicationProtection.httpFilter.create',
		{ action: 'DOMAIN_REDIRECTION', rp_code: 301, scheme: 'http' },
		'redirect_host',
		/required when action is DOMAIN_REDIRECTION/,
	],
	[
		'rp_code for URL_REDIRECTION',
		'applicationProtection.httpFilter.update',
		{ rp_code: del },
		'rp_code',
		/required when action is URL_REDIRECTION/,
	],
	['rp_code 301/302 only', 'applicationProtection.httpFilter.update', { rp_code: 307 }, 'rp_code', /one of 301, 302/],
	[
		'scheme for redirections',
		'applicationProtection.httpFilter.update',
		{ scheme: del },
		'scheme',
		/required when action is URL_REDIRECTION/,
	],
	['scheme enum', 'applicationProtection.httpFilter.update', { scheme: 'ftp' }, 'scheme', /one of http, https/],
	[
		'redirect_url for URL_REDIRECTION',
		'applicationProtection.httpFilter.update',
		{ redirect_url: del },
		'redirect_url',
		/required when action is URL_REDIRECTION/,
	],
	[
		'other_iprange valid IPv4',
		'applicationProtection.httpFilter.create',
		{ other_iprange: ['10.0.0.300-10.0.0.1'] },
		'other_iprange.0',
		/IPv4 range written start-end/,
	],
	[
		'other_iprange start ≤ end',
		'applicationProtection.httpFilter.create',
		{ other_iprange: ['10.0.0.9-10.0.0.1'] },
		'other_iprange.0',
		/start ≤ end/,
	],
	[
		'other_iprange ≤ 256 IPs',
		'applicationProtection.httpFilter.create',
		{ other_iprange: ['10.0.0.0-10.0.0.200', '10.0.1.0-10.0.1.100'] },
		'other_iprange',
		/at most 256 IPs.*got 302/,
	],
	[
		'methods are HTTP methods',
		'applicationProtection.httpFilter.create',
		{ methods: ['GET', 'FETCH'] },
		'methods.1',
		/one of GET, POST, PUT/,
	],
	[
		'p_flag_id digits',
		'applicationProtection.httpFilter.get',
		{ p_flag_id: 'abc' },
		'p_flag_id',
		/policy id \(digits\)/,
	],
	// §4.3.2 X-Forwarded-For
	[
		'mode enum',
		'applicationProtection.xForwardedFor.set',
		{ mode: 'prepend' },
		'mode',
		/one of secure, append, reset, insert/,
	],
	[
		'name when secure',
		'applicationProtection.xForwardedFor.set',
		{ name: del },
		'name',
		/required when mode is secure/,
	],
	[
		'2023.2.6 drops secure',
		'applicationProtection.xForwardedFor.set',
		{ portal_version: '2023.2.6' },
		'mode',
		/2023\.2\.6/,
	],
	// §4.3.3 IP authentication
	[
		'only the matching action_* object',
		'applicationProtection.authIp.set',
		{ action_blacklist: { duration: 1, threshold_rps: 2 } },
		'action_blacklist',
		/only action_ratelimit may be set/,
	],
	[
		'ip auth action enum',
		'applicationProtection.authIp.set',
		{ action: 'drop' },
		'action',
		/one of ratelimit, blacklist, ratelimit_blacklist/,
	],
	[
		'ip auth object fields are integers',
		'applicationProtection.authIp.set',
		{ action_ratelimit: { duration: 'x', ratelimit_rps: 1, threshold_rps: 1 } },
		'action_ratelimit.duration',
		/integer/,
	],
	// §4.3.4 status codes
	[
		'error_code 400-417',
		'applicationProtection.statusCodes.create',
		{ error_code: 418 },
		'error_code',
		/400 to 417 or from 500 to 505/,
	],
	[
		'error_code 500-505',
		'applicationProtection.statusCodes.delete',
		{ error_code: 506 },
		'error_code',
		/400 to 417 or from 500 to 505/,
	],
	[
		'rewrite 100-999',
		'applicationProtection.statusCodes.create',
		{ error_code_rewrite: 1000 },
		'error_code_rewrite',
		/100 to 999/,
	],
	[
		'error_page_info when type 2',
		'applicationProtection.statusCodes.create',
		{ error_page_info: del },
		'error_page_info',
		/required when error_page_type is 2/,
	],
	[
		'error_page_type 0/1/2',
		'applicationProtection.statusCodes.update',
		{ error_page_type: 3 },
		'error_page_type',
		/one of 0, 1, 2/,
	],
	// §4.5 detection
	['threshold notation', 'detection.setPolicy', { high_pps: '10X' }, 'high_pps', /suffix K, M or G/],
	[
		'total_traffic extra fields',
		'detection.setPolicy',
		{ blackhole_time: del },
		'blackhole_time',
		/required when name is total_traffic/,
	],
	[
		'total_traffic bps fields',
		'detection.setPolicy',
		{ low_bps: del },
		'low_bps',
		/required when name is total_traffic/,
	],
	['model 0/1', 'detection.setMode', { model: '2' }, 'model', /'0' \(normal mode\) or '1' \(rapid mode\)/],
	[
		'detection type enum',
		'detection.setPolicy',
		{ type: 'smtp' },
		'type',
		/one of tcp, udp, icmp, ip, sip, http, total_traffic/,
	],
	[
		'detection type matches the item group',
		'detection.setPolicy',
		{ name: 'tcp_syn', type: 'udp' },
		'type',
		/must be 'tcp' for item tcp_syn/,
	],
	// §4.6 overview
	[
		'switch_type enum',
		'overview.setSwitch',
		{ switch_type: 'auto' },
		'switch_type',
		/one of custom, mitigation, detection/,
	],
	[
		'site level → detection',
		'overview.setSwitch',
		{ switch_type: 'mitigation' },
		'switch_type',
		/must be 'detection' at site level/,
	],
	[
		'network level → custom/mitigation',
		'overview.setSwitch',
		{ network_id: 'net-1', switch_type: 'detection' },
		'switch_type',
		/'custom' or 'mitigation' at network level/,
	],
	[
		'host level → custom/mitigation',
		'overview.setSwitch',
		{ network_id: 'net-1', host_id: 'h-1', switch_type: 'detection' },
		'switch_type',
		/at host level/,
	],
	['is_enable 0/1', 'overview.setSwitch', { is_enable: 2 }, 'is_enable', /one of 0, 1/],
	// §4.4 dashboard
	[
		'module enum',
		'dashboard.eventDetail',
		{ module: 'map' },
		'module',
		/one of traffic, characterization, traffic_patterns, threat_map/,
	],
	['range enum', 'dashboard.networkSummary', { range: 'year' }, 'range', /one of hour, day, week, month/],
	['type enum', 'dashboard.networkSummary', { type: 'rps' }, 'type', /one of bps, pps/],
	['ddos status enum', 'dashboard.ddosEvents', { status: 'open' }, 'status', /one of all, stopped, ongoing/],
	[
		'ddos window ≤ 31 days',
		'dashboard.ddosEvents',
		{ start_time: '2026-01-01 00:00:00', end_time: '2026-02-01 00:00:01' },
		'end_time',
		/at most 31 days/,
	],
	[
		'ddos time format',
		'dashboard.ddosEvents',
		{ start_time: '2026-01-01T00:00:00Z' },
		'start_time',
		/YYYY-MM-DD HH:MM:SS/,
	],
	[
		'ddos impossible date',
		'dashboard.ddosEvents',
		{ start_time: '2026-02-30 00:00:00' },
		'start_time',
		/YYYY-MM-DD HH:MM:SS/,
	],
	[
		'flow-down window ≤ 90 days',
		'dashboard.flowDownEvents',
		{ start_time: '1700000000', end_time: String(1700000000 + 90 * 86400 + 1) },
		'end_time',
		/at most 90 days/,
	],
	[
		'flow-down 10-digit timestamps',
		'dashboard.flowDownEvents',
		{ start_time: '170000000' },
		'start_time',
		/10-digit Unix timestamp/,
	],
	[
		'flow-down status 0/1/2',
		'dashboard.flowDownEvents',
		{ status: 3 },
		'status',
		/0 \(ongoing\), 1 \(stopped\) or 2 \(all\)/,
	],
	// IP lists
	[
		'blacklist entry valid IPv4',
		'applicationProtection.ipBlacklist.add',
		{ ip_black_list: '1.2.3.4-1.2.3' },
		'ip_black_list',
		/IPv4 address, a range/,
	],
	[
		'whitelist entry required',
		'applicationProtection.ipWhitelist.add',
		{ ip_white_list: del },
		'ip_white_list',
		/is required/,
	],
	[
		'whitelist delete entries valid',
		'applicationProtection.ipWhitelist.remove',
		{ ip_white_list: '10.0.0.1,999.1.1.1' },
		'ip_white_list.1',
		/IPv4 address/,
	],
	// generic
	['required path id', 'applicationProtection.authBase.get', { site_id: del }, 'site_id', /is required/],
	['path id without slash', 'customer.get', { customer_id: '../admin' }, 'customer_id', /without '\/'/],
	['unknown field', 'dashboard.isUnderAttack', { sit_id: 'x' }, '(request)', /unknown field\(s\) 'sit_id'/],
	['integer fields', 'applicationProtection.authBase.set', { duration: '10m' }, 'duration', /integer/],
	[
		'header switch name enum',
		'applicationProtection.headerCompliance.set',
		{ name: 'cookie_required' },
		'name',
		/one of host_required/,
	],
];

for (const [title, opId, change, field, rule] of cases) {
	test(`rule: ${opId} — ${title}`, async () => {
		const params: Record<string, unknown> = { ...samples[opId] };
		for (const [k, v] of Object.entries(change))
			if (v === undefined) delete params[k];
			else params[k] = v;
		const before = sent.length;
		await assert.rejects(client.call(opId, params), (e: unknown) => {
			assert.ok(e instanceof ValidationError, `ValidationError, got ${e}`);
			const hit = e.issues.find((i) => i.field === field);
			assert.ok(hit, `issue on ${field}; got ${JSON.stringify(e.issues)}`);
			assert.match(hit.rule, rule);
			assert.match(e.message, new RegExp(`${field.replace(/[.()]/g, '\\$&')}: `));
			return true;
		});
		assert.equal(sent.length, before, 'no request was sent');
	});
}

test('valid samples pass the same rules (control)', () => {
	for (const opId of new Set(cases.map((c) => c[1])))
		assert.doesNotThrow(() => client.validate(opId, samples[opId]), opId);
});

test('normalisation: one consistent user form, documented wire form', () => {
	const hf = client.validate('applicationProtection.httpFilter.get' as string, {
		...samples['applicationProtection.httpFilter.get'],
		p_flag_id: 12,
	});
	assert.equal(hf.p_flag_id, '12');
	const sc = client.validate('applicationProtection.statusCodes.update' as string, {
		...samples['applicationProtection.statusCodes.update'],
		error_page_type: '1',
	});
	assert.equal(sc.error_page_type, 1);
	const bl = client.validate('applicationProtection.ipBlacklist.add' as string, {
		...samples['applicationProtection.ipBlacklist.add'],
		ip_black_list: '10.1.2.0/24',
	});
	assert.equal(bl.ip_black_list, '10.1.2.0-10.1.2.255');
	const m = client.validate('detection.setMode' as string, { ...samples['detection.setMode'], model: 1 });
	assert.equal(m.model, '1');
});

test('listed IP-list entries: one reading of their text, range and key for the node, the worker and the runbooks', () => {
	// A 'range' entry is named start-end; a 'network' entry by its address or CIDR, as the service lists it.
	assert.equal(
		listEntryText({ type: 'range', start_ip: '203.0.113.0', end_ip: '203.0.113.3' }),
		'203.0.113.0-203.0.113.3',
	);
	assert.equal(listEntryText({ type: 'network', ip: '198.51.100.0/30' }), '198.51.100.0/30');
	assert.equal(listEntryText({}), '');
	// The same addresses in any notation give the same key, so a CIDR the user typed finds the range the list shows.
	const listed = listEntryRange({ type: 'range', start_ip: '198.51.100.0', end_ip: '198.51.100.3' });
	assert.deepEqual(listed, { start: 3325256704, end: 3325256707 });
	assert.equal(entryRangeKey('198.51.100.2/30'), `${listed?.start}-${listed?.end}`);
	assert.equal(entryRangeKey('198.51.100.7'), '3325256711-3325256711');
	// Not an entry: no key, so nothing is matched or removed by it.
	for (const bad of ['198.51.100.9-198.51.100.1', '256.0.0.1', '010.0.0.1', '1.2.3.4/33', 'x'])
		assert.equal(entryRangeKey(bad), undefined, bad);
	assert.equal(listEntryRange({ type: 'range' }), undefined);
});
