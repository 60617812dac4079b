// The blast-radius guard (api/blastRadius.ts): its rules, and the client refusing before anything is sent
// (loopback recorder: 0 requests), a failed own-address lookup refuses, the audited override. The allow side, user-agent
// patterns and the own-address sources: guardAllowOwn.test.mts.
import { test, after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { blastRadiusIssues, callIssues, parseProtectedRanges, SPECIAL_RANGES } from '../../api/blastRadius.ts';
import { checkBlockRequest, normalizeEntry } from '../../api/blockRules.ts';
import { createClient, type ClientEvent, type ClientOptions } from '../../api/client.ts';
import { ApiError, ValidationError } from '../../api/errors.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { startLoopback, tokenAwareHandler, type Recorded } from '../helpers/loopback.mts';

const transport = createUndiciTransport();
after(() => transport.close());

const kinds = (entry: string, policy = {}) => blastRadiusIssues(entry, 'ip_black_list', policy).map((i) => i.kind);

test('guard rules: widest prefix /16 by default, configurable; the override lifts only the width', () => {
	assert.deepEqual(kinds('203.0.113.0/24'), []);
	assert.deepEqual(kinds('198.51.0.0/16'), []);
	assert.deepEqual(kinds('198.50.0.0/15'), ['widest-prefix']);
	assert.deepEqual(kinds('198.51.100.0/24', { widestPrefix: 28 }), ['widest-prefix']);
	assert.deepEqual(kinds('198.50.0.0/15', { allowWideBlock: { reason: 'botnet in one /15' } }), []);
	assert.deepEqual(
		kinds('198.50.0.0/15', { allowWideBlock: { reason: '  ' } }),
		['widest-prefix'],
		'a blank reason is no override',
	);
	const [w] = blastRadiusIssues('198.50.0.0/15', 'ip_black_list');
	assert.equal(
		w.rule,
		'198.50.0.0/15 covers 131072 addresses: wider than the widest block allowed (/16, 65536 addresses; maxPrefix); an audited override (allowWideBlock with a reason) may lift this rule',
	);
});

test('guard rules: every special range refused (any overlap), the override does not lift it', () => {
	const inside: Record<string, string> = {
		'0.0.0.0/8': '0.1.2.3',
		'127.0.0.0/8': '127.0.0.1',
		'169.254.0.0/16': '169.254.10.1',
		'224.0.0.0/4': '239.255.255.250',
		'240.0.0.0/4': '255.255.255.255',
	};
	for (const s of SPECIAL_RANGES) {
		const k = kinds(inside[s.cidr], { allowWideBlock: { reason: 'x' } });
		assert.deepEqual(k, ['special-range'], s.cidr);
	}
	const all = blastRadiusIssues('0.0.0.0/0', 'ip_black_list', { allowWideBlock: { reason: 'x' } });
	assert.equal(all.length, SPECIAL_RANGES.length, 'the whole Internet overlaps every special range');
	assert.match(
		all[0].rule,
		/^0\.0\.0\.0\/0 overlaps the special range 0\.0\.0\.0\/8, "this network" \(RFC 1122\): never blocked$/,
	);
	assert.match(blastRadiusIssues('255.255.255.255', 'f')[0].rule, /broadcast address 255\.255\.255\.255/);
	// the neighbours stay allowed
	for (const ok of ['1.0.0.0', '126.255.255.255', '128.0.0.1', '169.253.255.255', '169.255.0.0', '223.255.255.255'])
		assert.deepEqual(kinds(ok), [], ok);
});

test('guard rules: protected ranges and own addresses (any overlap), named with their source', () => {
	const policy = {
		protectedRanges: [{ range: '198.51.100.0/24', source: 'credential Protected Ranges' }],
		ownAddresses: [{ range: '203.0.113.7', source: 'site_ip of DDoS event a-1' }],
	};
	assert.deepEqual(kinds('198.51.100.200', policy), ['protected-range']);
	assert.deepEqual(kinds('198.51.0.0/16', policy), ['protected-range'], 'a block covering a protected range');
	assert.deepEqual(kinds('203.0.113.0/24', { ...policy, allowWideBlock: { reason: 'x' } }), ['own-address']);
	assert.deepEqual(kinds('192.0.2.1', policy), []);
	assert.equal(
		blastRadiusIssues('203.0.113.0-203.0.113.9', 'ip_black_list', policy)[0].rule,
		"203.0.113.0-203.0.113.9 overlaps the site's own address 203.0.113.7 (site_ip of DDoS event a-1): never blocked",
	);
	assert.deepEqual(parseProtectedRanges('198.51.100.0/24, 192.0.2.1\nnope', 'x'), {
		ranges: [
			{ range: '198.51.100.0/24', source: 'x' },
			{ range: '192.0.2.1', source: 'x' },
		],
		invalid: ['nope'],
	});
});

test('which writes are guarded: blacklist add and HTTP filters that keep sources out (block side), the whitelist and accepting filters (allow side: width and special ranges only)', () => {
	assert.equal(
		callIssues('applicationProtection.ipBlacklist.add', { ip_black_list: '0.0.0.0-255.255.255.255' }, {}).length > 0,
		true,
	);
	const own = {
		ownAddresses: [{ range: '203.0.113.7', source: 's' }],
		protectedRanges: [{ range: '192.0.2.0/24', source: 'p' }],
	};
	assert.deepEqual(
		callIssues('applicationProtection.ipWhitelist.add', { ip_white_list: '127.0.0.1' }, own).map((i) => i.rule),
		['127.0.0.1 overlaps the special range 127.0.0.0/8, loopback (RFC 1122): never allowed'],
	);
	assert.deepEqual(
		callIssues('applicationProtection.ipWhitelist.add', { ip_white_list: '192.0.2.0-203.0.113.255' }, own).map(
			(i) => i.kind,
		),
		['widest-prefix'],
		'letting a protected range or the site itself through is no risk to the site',
	);
	assert.equal(callIssues('applicationProtection.ipBlacklist.remove', { ip_black_list: ['127.0.0.1'] }, {}).length, 0);
	assert.equal(
		callIssues(
			'applicationProtection.httpFilter.create',
			{ action: 'BLOCK_HTTP', other_iprange: ['10.0.0.1-10.0.0.16', '127.0.0.1-127.0.0.2'] },
			{},
		)[0].field,
		'other_iprange.1',
	);
	const accept = callIssues(
		'applicationProtection.httpFilter.update',
		{ action: 'ACCEPT', other_iprange: ['203.0.113.7', '127.0.0.1-127.0.0.2'] },
		own,
	);
	assert.deepEqual(
		accept.map((i) => `${i.field}: ${i.rule}`),
		['other_iprange.1: 127.0.0.1-127.0.0.2 overlaps the special range 127.0.0.0/8, loopback (RFC 1122): never allowed'],
	);
});

test('expiring blocks: the same rule (same /15 message as before, and special ranges)', () => {
	assert.throws(() => normalizeEntry('10.0.0.0/15'), {
		message:
			'entry: 10.0.0.0/15 covers 131072 addresses: wider than the widest block allowed (/16, 65536 addresses; maxPrefix)',
	});
	assert.throws(() => checkBlockRequest({ entry: '127.0.0.1', seconds: 60, by: 'a', reason: 'b' }), {
		message: 'entry: 127.0.0.1 overlaps the special range 127.0.0.0/8, loopback (RFC 1122): never blocked',
	});
	assert.throws(
		() => normalizeEntry('0.0.0.0/0', 0),
		/overlaps the special range 0\.0\.0\.0\/8/,
		'maxPrefix 0 lifts the width, never the special ranges',
	);
	assert.equal(
		normalizeEntry('127.0.0.1', null),
		'127.0.0.1',
		'a change or removal of an existing entry is not a new block',
	);
});

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
const add = (ip_black_list: string, more: Record<string, unknown> = {}) => ({
	site_id: '20001',
	domain_port_id: '30001',
	ip_black_list,
	...more,
});

test('client: 0.0.0.0/0, a /15 and a protected range refused before anything is sent (0 requests), naming field, rule and range', async () => {
	const { srv, client } = await setup(() => ({ code: 0 }), {
		blastRadius: { protectedRanges: [{ range: '198.51.100.0/24', source: 'worker api.protectedRanges' }] },
	});
	try {
		for (const [entry, re] of [
			[
				'0.0.0.0/0',
				/ip_black_list: 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest block allowed \(\/16/,
			],
			['0.0.0.0/0', /ip_black_list: 0\.0\.0\.0\/0 overlaps the special range 240\.0\.0\.0\/4/],
			['10.0.0.0/15', /wider than the widest block allowed/],
			[
				'198.51.100.9',
				/ip_black_list: 198\.51\.100\.9 overlaps the protected range 198\.51\.100\.0\/24 \(worker api\.protectedRanges\)/,
			],
		] as const) {
			await assert.rejects(
				client.call('applicationProtection.ipBlacklist.add', add(entry)),
				(e: unknown) => e instanceof ValidationError && re.test(e.message),
			);
			assert.throws(() => client.validate('applicationProtection.ipBlacklist.add', add(entry)), ValidationError);
		}
		assert.equal(srv.requests.length, 0, 'nothing was sent, not even a token request');
	} finally {
		await srv.close();
	}
});

test('client: a failed own-address lookup refuses the block (nothing written)', async () => {
	const { srv, client } = await setup(
		(r) => (r.url.pathname.endsWith('/ddos_events') ? { code: 40301 } : { code: 0, result: [] }),
		{ blastRadius: { ownAddresses: 'lookup' } },
	);
	try {
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.add', add('198.51.100.1')),
			(e: unknown) =>
				// The service's answer first (a host labels its field), then why it was read and that nothing was sent.
				e instanceof ApiError &&
				e.code === 40301 &&
				/: the service answered code 40301: .*\(read to check the site's own addresses; nothing was sent\)$/.test(
					e.message,
				),
		);
		assert.equal(srv.requests.filter((r) => r.method === 'POST' && r.url.pathname.startsWith('/api/')).length, 0);
	} finally {
		await srv.close();
	}
});

test('client: the override needs a reason, lifts only the width, is never sent, and is reported as an audit event', async () => {
	const { srv, client, events } = await setup(() => ({ code: 0 }));
	try {
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.add', add('10.0.0.0/15', { allowWideBlock: {} })),
			/allowWideBlock\.reason: is required/,
		);
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.add', add('127.0.0.0/8', { allowWideBlock: { reason: 'x' } })),
			/special range 127\.0\.0\.0\/8/,
		);
		await assert.rejects(
			client.call('applicationProtection.ipBlacklist.remove', {
				site_id: '1',
				domain_port_id: '2',
				ip_black_list: '1.2.3.4',
				allowWideBlock: { reason: 'x' },
			} as Record<string, unknown>),
			/allowWideBlock: is only for operations that add address entries/,
		);
		assert.equal(srv.requests.length, 0);
		await client.call(
			'applicationProtection.ipBlacklist.add',
			add('10.0.0.0/15', { allowWideBlock: { reason: 'botnet spread over a /15', by: 'oncall-alice' } }),
		);
		const post = srv.requests.find((r) => r.method === 'POST' && r.url.pathname.startsWith('/api/'));
		assert.deepEqual(post?.fields, [['ip_black_list', '10.0.0.0-10.1.255.255']], 'the override is not sent');
		assert.deepEqual(
			events.find((e) => e.type === 'override'),
			{
				type: 'override',
				opId: 'applicationProtection.ipBlacklist.add',
				rule: 'widest-prefix',
				entries: ['10.0.0.0/15'],
				reason: 'botnet spread over a /15',
				by: 'oncall-alice',
			},
		);
	} finally {
		await srv.close();
	}
});
