// The blast-radius guard's allow side (IP whitelist, accepting HTTP filters), its user-agent rule (api/uaPatterns.ts)
// and every source of the site's own addresses (api/ownAddresses.ts), through the client against a loopback recorder:
// a refusal sends nothing (0 requests, not even a token request).
import { test, after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { matchesEveryUserAgent, UA_SAMPLES } from '../../api/uaPatterns.ts';
import { checkDesiredState } from '../../api/runbook/desired.ts';
import { createClient, type ClientEvent, type ClientOptions } from '../../api/client.ts';
import { ValidationError } from '../../api/errors.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { startSimulator } from '../../simulator/index.mts';
import { startLoopback, tokenAwareHandler, type Recorded } from '../helpers/loopback.mts';

const transport = createUndiciTransport();
after(() => transport.close());

async function setup(api: (r: Recorded) => { code: number; result?: unknown }, extra: Partial<ClientOptions> = {}) {
	const { handler } = tokenAwareHandler(api);
	const srv = await startLoopback(handler);
	const events: ClientEvent[] = [];
	const client = createClient({
		baseUrl: srv.url,
		transport,
		credentials: { appId: 'demo-app', secret: 'demo-secret-value', tokenKind: 'app' },
		backoff: { baseMs: 1, maxMs: 5 },
		sleep: (ms) => delay(ms),
		onEvent: (e) => events.push(e),
		...extra,
	});
	return { srv, client, events };
}
const at = { site_id: '20001', domain_port_id: '30001' };
const apiCalls = (rs: Recorded[]) =>
	rs.filter((r) => r.url.pathname.startsWith('/api/')).map((r) => `${r.method} ${r.url.pathname.split('/').pop()}`);

test('user-agent patterns: what matches every client is refused, what picks some is not', () => {
	for (const p of ['.*', '^.*$', '.+', '.', '\\S', '[a-z]', 'x*', '(.*)', '(?i).*', '*', '**', 'a|'])
		assert.equal(matchesEveryUserAgent(p).every, true, p);
	for (const p of ['^$', 'curl', 'bot', '^Mozilla', '.*bot.*', '*bot*', 'python-requests/2\\.'])
		assert.equal(matchesEveryUserAgent(p).every, false, p);
	assert.deepEqual(matchesEveryUserAgent('.*'), { every: true, empty: true }, 'also a client sending no user agent');
	assert.deepEqual(matchesEveryUserAgent('.+'), { every: true, empty: false });
	// the samples are very different clients: no word is common to all of them
	for (const w of ['mozilla', 'bot', 'http', 'curl', '/2', ' '])
		assert.ok(!UA_SAMPLES.every((ua) => ua.toLowerCase().includes(w)), w);
});

test("drift enforce's desired lists obey the same rules before anything starts (the allow side: width and special ranges)", () => {
	const desired = (dp: Record<string, unknown>) => () =>
		checkDesiredState({ site_id: '20001', domain_ports: { '30001': dp } });
	assert.throws(
		desired({ whitelistIncludes: ['192.0.2.10', '0.0.0.0/0'] }),
		/domain_ports\.30001\.whitelistIncludes\.1: 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest entry an allow list may take \(\/16, 65536 addresses; maxPrefix\); domain_ports\.30001\.whitelistIncludes\.1: 0\.0\.0\.0\/0 overlaps the special range 0\.0\.0\.0\/8, "this network" \(RFC 1122\): never allowed/,
	);
	assert.throws(
		desired({ blacklistIncludes: ['127.0.0.1'] }),
		/blacklistIncludes\.0: 127\.0\.0\.1 overlaps the special range 127\.0\.0\.0\/8.*never blocked/,
	);
	assert.doesNotThrow(desired({ whitelistIncludes: ['192.0.2.0/24'], blacklistIncludes: ['203.0.113.0/24'] }));
});

test('client: IP Whitelist 0.0.0.0/0, a special range and a user-agent pattern matching everything refused naming the field and the rule; nothing sent', async () => {
	const { srv, client } = await setup(() => ({ code: 0 }), { blastRadius: { ownAddresses: 'lookup' } });
	try {
		const refused = async (opId: string, params: Record<string, unknown>, re: RegExp) => {
			await assert.rejects(
				client.call(opId, { ...at, ...params }),
				(e: unknown) => e instanceof ValidationError && re.test(e.message),
			);
			assert.throws(() => client.validate(opId, { ...at, ...params }), ValidationError);
		};
		await refused(
			'applicationProtection.ipWhitelist.add',
			{ ip_white_list: '0.0.0.0/0' },
			/ip_white_list: 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest entry an allow list may take \(\/16, 65536 addresses; maxPrefix\); an audited override \(allowWideBlock with a reason\) may lift this rule; ip_white_list: 0\.0\.0\.0\/0 overlaps the special range 0\.0\.0\.0\/8, "this network" \(RFC 1122\): never allowed/,
		);
		await refused(
			'applicationProtection.ipWhitelist.add',
			{ ip_white_list: '0.0.0.0/0', allowWideBlock: { reason: 'x' } },
			/^[^;]*0\.0\.0\.0\/0 overlaps the special range 0\.0\.0\.0\/8/,
		);
		await refused(
			'applicationProtection.ipWhitelist.add',
			{ ip_white_list: '10.0.0.0/15' },
			/ip_white_list: 10\.0\.0\.0\/15 covers 131072 addresses/,
		);
		await refused(
			'applicationProtection.uaBlacklist.add',
			{ ua_regex: ['BadBot', '^.*$'] },
			/ua_regex\.1: "\^\.\*\$" matches every user agent \(all of 10 very different clients tried: browsers, a crawler, curl, HTTP libraries, and a client sending none\): it would block every client of the site; never sent/,
		);
		await refused(
			'applicationProtection.httpFilter.create',
			{ action: 'PASS', host: 'www.example.com', uri: '/', p_name: 'p', other_iprange: ['224.0.0.1'] },
			/other_iprange\.0: 224\.0\.0\.1 overlaps the special range 224\.0\.0\.0\/4, multicast \(RFC 5771\): never allowed/,
		);
		assert.equal(srv.requests.length, 0, 'nothing was sent, not even a token request');
	} finally {
		await srv.close();
	}
});

test('client: an allowed entry under the override is sent and audited; the allow side needs no own-address lookup', async () => {
	const { srv, client, events } = await setup(() => ({ code: 0 }), {
		blastRadius: { ownAddresses: 'lookup', protectedRanges: [{ range: '192.0.2.0/24', source: 'cfg' }] },
	});
	try {
		await client.call('applicationProtection.ipWhitelist.add', {
			...at,
			ip_white_list: '10.0.0.0/15',
			allowWideBlock: { reason: 'the partner network', by: 'oncall' },
		} as Record<string, unknown>);
		await client.call('applicationProtection.ipWhitelist.add', { ...at, ip_white_list: '192.0.2.10' });
		await client.call('applicationProtection.uaBlacklist.add', { ...at, ua_regex: ['BadBot/\\d+'] });
		assert.deepEqual(apiCalls(srv.requests), ['POST ip-white-list', 'POST ip-white-list', 'POST ua-black-list']);
		assert.deepEqual(srv.requests.find((r) => r.url.pathname.endsWith('/ip-white-list'))?.fields, [
			['ip_white_list', '10.0.0.0-10.1.255.255'],
		]);
		assert.deepEqual(
			events.filter((e) => e.type === 'override'),
			[
				{
					type: 'override',
					opId: 'applicationProtection.ipWhitelist.add',
					rule: 'widest-prefix',
					entries: ['10.0.0.0/15'],
					reason: 'the partner network',
					by: 'oncall',
				},
			],
		);
	} finally {
		await srv.close();
	}
});

const event = (alert_id: string, site_ip: string, status: number) => ({
	alert_id,
	attack_type: 'TCP SYN',
	duration: 60,
	start_time: 1700000000,
	end_time: status ? 0 : 1700000060,
	max_bps: 1,
	max_pps: 1,
	profile_desc: '',
	profile_name: '',
	severity: 0,
	site_ip,
	site_name: 'web',
	status,
});
const row = (element: string, item: string, value: string) => ({ country: '', element, item, value, percent: 100 });

test('client: own addresses from every source the service shows (events, mitigations, ongoing events’ destinations), read once per site', async () => {
	const { srv, client } = await setup(
		(r) => {
			const p = r.url.pathname;
			if (p.endsWith('/ddos_events'))
				return {
					code: 0,
					result: { events: [event('a-2', '203.0.113.7', 1), event('a-1', '203.0.113.5', 0)], total: 2 },
				};
			if (p.endsWith('/active_mitigation'))
				return {
					code: 0,
					result: [
						{ cidr: '192.0.2.0/28', name: 'web', bps: { bot: 0, clean: 0 }, pps: { bot: 0, clean: 0 } },
						{ cidr: '192.0.2.64/28', name: '198.51.100.17', bps: { bot: 0, clean: 0 }, pps: { bot: 0, clean: 0 } },
					],
				};
			if (p.endsWith('/a-2/detail'))
				return {
					code: 0,
					result: {
						characterization: [
							row('src_country', 'Source country', 'CN'),
							row('dst_ip', 'Destination IP', '198.51.100.18'),
							row('protocol', 'Protocol', 'TCP'),
						],
					},
				};
			return { code: 0 };
		},
		{ blastRadius: { ownAddresses: 'lookup' } },
	);
	try {
		const add = (ip_black_list: string) =>
			client.call('applicationProtection.ipBlacklist.add', { ...at, ip_black_list });
		for (const [entry, re] of [
			[
				'203.0.113.0/29',
				/203\.0\.113\.0\/29 overlaps the site's own address 203\.0\.113\.5 \(site_ip of DDoS event a-1\)/,
			],
			['192.0.2.5', /overlaps the site's own address 192\.0\.2\.0\/28 \(cidr of active mitigation web\)/],
			['198.51.100.17', /overlaps the site's own address 198\.51\.100\.17 \(name of an active mitigation\)/],
			[
				'198.51.100.16/28',
				/198\.51\.100\.16\/28 overlaps the site's own address 198\.51\.100\.18 \(destination of DDoS event a-2 \(characterization\)\)/,
			],
		] as const)
			await assert.rejects(add(entry), (e: unknown) => e instanceof ValidationError && re.test(e.message), entry);
		await add('198.18.0.1');
		assert.deepEqual(
			apiCalls(srv.requests),
			['GET ddos_events', 'GET active_mitigation', 'GET detail', 'POST ip-black-list'],
			'one lookup for five calls (the detail of the ongoing event only); only the allowed write sent',
		);
		const detail = srv.requests.find((r) => r.url.pathname.endsWith('/detail'));
		assert.equal(detail?.url.searchParams.get('module'), 'characterization');
	} finally {
		await srv.close();
	}
});

test('against the simulator: an ongoing attack’s characterization is read and its destination (the site) refused; an attacker is blocked', async () => {
	const s = await startSimulator({
		port: 0,
		appId: 'demo-app',
		secret: 'demo-secret-value',
		clock: 'manual',
		seed: 11,
	});
	const client = createClient({
		baseUrl: s.url,
		transport,
		credentials: { appId: 'demo-app', secret: 'demo-secret-value', tokenKind: 'app' },
		blastRadius: { ownAddresses: 'lookup' },
		now: () => s.sim.nowSec() * 1000, // the lookup's 30-day window on the simulator's manual clock
	});
	try {
		const ids = s.sim.firstIds();
		const site = s.sim.world.sites.get(ids.site_id) as { site_ip: string };
		s.sim.startAttack({ site_id: ids.site_id, curve: { peakBps: 5e9 }, sources: [{ ip: '198.18.0.1' }] });
		s.sim.advance(60);
		const mark = s.sim.requests().length;
		const add = (ip_black_list: string) =>
			client.call('applicationProtection.ipBlacklist.add', {
				site_id: ids.site_id,
				domain_port_id: ids.domain_port_id,
				ip_black_list,
			});
		await assert.rejects(add(site.site_ip), /overlaps the site's own address/);
		await add('198.18.0.1');
		const sent = s.sim
			.requests()
			.slice(mark)
			.filter((r) => !r.opId?.startsWith('authorization.'));
		assert.deepEqual(
			sent.map((r) => `${r.opId} ${r.code}`),
			[
				'dashboard.ddosEvents 0',
				'dashboard.activeMitigation 0',
				'dashboard.eventDetail 0',
				'applicationProtection.ipBlacklist.add 0',
			],
		);
		assert.equal((sent[2].query as Record<string, string>).module, 'characterization');
	} finally {
		await s.close();
	}
});

test('client: ranges declared only at call time (n8n with a cluster token) guard blocks, not allowed entries; a failed read refuses', async () => {
	let asked = 0;
	let fail = false;
	const { srv, client } = await setup(() => ({ code: 0 }), {
		blastRadius: {
			declaredRanges: async () => {
				asked++;
				if (fail) throw new Error('no token from the cluster');
				return [{ range: '198.51.100.16/28', source: 'tenant 10001 --protected' }];
			},
		},
	});
	try {
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.add', { ...at, ip_black_list: '198.51.100.17' }),
			/198\.51\.100\.17 overlaps the protected range 198\.51\.100\.16\/28 \(tenant 10001 --protected\): never blocked/,
		);
		await client.call('applicationProtection.ipWhitelist.add', { ...at, ip_white_list: '198.51.100.17' });
		assert.equal(asked, 1, 'the allow side does not ask');
		fail = true;
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.add', { ...at, ip_black_list: '198.18.0.1' }),
			/could not read the site's own addresses .*no token from the cluster.*nothing was sent/,
		);
		assert.deepEqual(apiCalls(srv.requests), ['POST ip-white-list']);
	} finally {
		await srv.close();
	}
});
