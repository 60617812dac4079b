// The client against a loopback server: wire encoding, envelope handling, errors, retries, timeouts.
import { test, after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { createClient, type ClientOptions } from '../../api/client.ts';
import { ApiError, TransportError, ValidationError } from '../../api/errors.ts';
import { multipartBody } from '../../api/transport/multipart.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { envelope, startLoopback, tokenAwareHandler } from '../helpers/loopback.mts';
import { samples } from '../helpers/samples.mts';

const transport = createUndiciTransport();
after(() => transport.close());

async function setup(api: Parameters<typeof tokenAwareHandler>[0], extra: Partial<ClientOptions> = {}) {
	const { handler, state } = tokenAwareHandler(api);
	const srv = await startLoopback(handler);
	const client = createClient({
		baseUrl: srv.url,
		transport,
		credentials: { appId: 'demo-app', secret: 'demo-secret-value', tokenKind: 'app' },
		backoff: { baseMs: 1, maxMs: 5 },
		sleep: (ms) => delay(ms),
		...extra,
	});
	return { srv, client, state };
}

const apiCalls = (srv: Awaited<ReturnType<typeof startLoopback>>) =>
	srv.requests.filter((r) => r.url.pathname.startsWith('/api/'));

test('multipart boundary: one that appears in a part is skipped', () => {
	const boundaryOf = (m: { contentType: string }) => m.contentType.slice(m.contentType.indexOf('boundary=') + 9);
	const b1 = boundaryOf(multipartBody([['a', 'x']]));
	// b1 is a prefix and a base-36 counter: every split of it gives a candidate, the next boundary among them
	const next = [...b1].map((_, i) => b1.slice(0, i) + (parseInt(b1.slice(i), 36) + 1).toString(36)).join(' ');
	const m = multipartBody([['a', next]]);
	const b2 = boundaryOf(m);
	assert.ok(!next.includes(b2), `${b2} appears in the part`);
	assert.equal(m.body, `--${b2}\r\nContent-Disposition: form-data; name="a"\r\n\r\n${next}\r\n--${b2}--\r\n`);
});

test('multipart body with repeated array fields, access_token in the query string', async () => {
	const { srv, client } = await setup(() => ({ code: 0, result: { p_flag_id: '7' } }));
	const r = await client.call(
		'applicationProtection.httpFilter.create',
		samples['applicationProtection.httpFilter.create'],
	);
	assert.deepEqual(r, { p_flag_id: '7' });
	const [req] = apiCalls(srv);
	assert.equal(req.method, 'POST');
	assert.equal(req.url.pathname, '/api/specp/policy/appshield/site/site-1/domain-port/dp-1/http-filter');
	assert.match(String(req.headers['content-type']), /^multipart\/form-data; boundary=/);
	assert.deepEqual(
		req.fields.filter(([k]) => k === 'methods').map(([, v]) => v),
		['GET', 'POST'],
	);
	assert.deepEqual(
		req.fields.find(([k]) => k === 'other_iprange'),
		['other_iprange', '10.0.0.1-10.0.0.16'],
	);
	assert.equal(req.fields.find(([k]) => k === 'p_name')?.[1], 'block-admin');
	assert.match(req.url.searchParams.get('access_token') ?? '', /^tok-1-/);
	await srv.close();
});

test('IP authentication is a JSON body; oauth is form-encoded with the grant type', async () => {
	const { srv, client } = await setup(() => ({ code: 0 }));
	await client.call('applicationProtection.authIp.set', samples['applicationProtection.authIp.set']);
	const tokenReq = srv.requests.find((r) => r.url.pathname === '/oauth/credit/token');
	assert.ok(tokenReq);
	assert.equal(tokenReq.method, 'POST');
	assert.match(String(tokenReq.headers['content-type']), /^application\/x-www-form-urlencoded/);
	assert.deepEqual(Object.fromEntries(tokenReq.fields), {
		app_id: 'demo-app',
		secret: 'demo-secret-value',
		grant_type: 'client_credential',
	});
	const [req] = apiCalls(srv);
	assert.match(String(req.headers['content-type']), /^application\/json/);
	assert.deepEqual(req.json, {
		action: 'ratelimit',
		enable: 1,
		mode: 2,
		action_ratelimit: { duration: 300, ratelimit_rps: 50, threshold_rps: 100 },
	});
	await srv.close();
});

test('DELETEs carry their parameters in the query string: IP lists comma-separated, url_bypass repeated', async () => {
	const { srv, client } = await setup(() => ({ code: 0 }));
	await client.call('applicationProtection.ipBlacklist.remove', {
		site_id: 's',
		domain_port_id: 'd',
		ip_black_list: ['1.1.1.1-1.1.1.2', '2.2.2.2'],
	});
	await client.call('applicationProtection.urlBypass.delete', samples['applicationProtection.urlBypass.delete']);
	await client.call('applicationProtection.statusCodes.delete', samples['applicationProtection.statusCodes.delete']);
	const [a, b, c] = apiCalls(srv);
	assert.equal(a.method, 'DELETE');
	assert.equal(a.url.searchParams.get('ip_black_list'), '1.1.1.1-1.1.1.2,2.2.2.2');
	assert.equal(a.body.length, 0);
	assert.deepEqual(b.url.searchParams.getAll('url_bypass'), ['https://www.example.com/a', 'https://www.example.com/b']);
	assert.equal(c.url.searchParams.get('error_code'), '404');
	await srv.close();
});

test('GET query parameters are URL-encoded; path ids outside the safe alphabet never leave; the X-Forwarded-For portal version is never sent', async () => {
	const { srv, client } = await setup((r) => ({
		code: 0,
		result: r.url.pathname.endsWith('ddos_events') ? { events: [], total: 0 } : undefined,
	}));
	for (const bad of ['site:é', '..', '.', 'a%2Fb', '%2E%2E', 'x'.repeat(129)])
		assert.throws(
			() => client.validate('dashboard.ddosEvents', { site_id: bad }),
			(e: unknown) => e instanceof ValidationError && e.issues[0].field === 'site_id',
		);
	await client.call('dashboard.ddosEvents', {
		site_id: 'site.1~a_b-C',
		start_time: '2026-11-01 00:00:00',
		status: 'ongoing',
	});
	await client.call('applicationProtection.xForwardedFor.set', {
		site_id: 's',
		domain_port_id: 'd',
		mode: 'insert',
		portal_version: '2023.2.6',
	});
	const [a, b] = apiCalls(srv);
	assert.equal(a.url.pathname, '/api/specp/op/dashboard/site/site.1~a_b-C/ddos_events');
	assert.equal(a.url.searchParams.get('start_time'), '2026-11-01 00:00:00');
	assert.equal(a.url.searchParams.get('status'), 'ongoing');
	assert.deepEqual(b.fields, [['mode', 'insert']]);
	await srv.close();
});

test('code ≠ 0 → ApiError with operation id, code and msg; not retried', async () => {
	const { srv, client } = await setup(() => ({ code: 40401, msg: 'domain-port not found' }));
	await assert.rejects(
		client.call('applicationProtection.authBase.get', samples['applicationProtection.authBase.get']),
		(e: unknown) => {
			assert.ok(e instanceof ApiError);
			assert.equal(e.opId, 'applicationProtection.authBase.get');
			assert.equal(e.code, 40401);
			assert.equal(e.msg, 'domain-port not found');
			return true;
		},
	);
	assert.equal(apiCalls(srv).length, 1);
	await srv.close();
});

test('a result that does not match the spec is a TransportError(kind result)', async () => {
	const { srv, client } = await setup(() => ({ code: 0, result: { status: 'yes' } }));
	await assert.rejects(
		client.call('dashboard.isUnderAttack', { site_id: 's' }),
		(e: unknown) => e instanceof TransportError && e.kind === 'result' && /status/.test(e.message),
	);
	await srv.close();
});

test('an event detail answered as a list of strings is a TransportError(kind result), not a TypeError', async () => {
	const { srv, client } = await setup(() => ({ code: 0, result: ['a'] }));
	await assert.rejects(
		client.call('dashboard.eventDetail', { event_id: '1', module: 'traffic_patterns' }),
		(e: unknown) => e instanceof TransportError && e.kind === 'result' && /does not match the spec/.test(e.message),
	);
	await srv.close();
});

test('GETs are retried on HTTP 5xx with backoff; then succeed', async () => {
	let n = 0;
	const { srv, client } = await setup(() => ({ code: 0 }));
	srv.setHandler((r, res) => {
		if (r.url.pathname.startsWith('/oauth/'))
			return envelope(res, 0, 'ok', { access_token: 'tok-abcdefgh', expires_in: 7200 });
		if (++n <= 2) return envelope(res, 50001, 'boom', undefined, 503);
		return envelope(res, 0, 'ok', { bps_size: 12 });
	});
	const retries: string[] = [];
	const c2 = createClient({
		...client.options,
		transport,
		credentials: { appId: 'a', secret: 'sssss', tokenKind: 'app' },
		backoff: { baseMs: 1, maxMs: 2 },
		sleep: (ms) => delay(ms),
		onEvent: (e) => e.type === 'retry' && retries.push(e.reason),
	});
	assert.deepEqual(await c2.call('dashboard.currentTraffic', { site_id: 's' }), { bps_size: 12 });
	assert.equal(n, 3);
	assert.deepEqual(retries, ['http 503', 'http 503']);
	await srv.close();
});

test('a write whose outcome is unknown (HTTP 5xx) is never retried blindly', async () => {
	let posts = 0;
	const { srv, client } = await setup(() => ({ code: 0 }));
	srv.setHandler((r, res) => {
		if (r.url.pathname.startsWith('/oauth/'))
			return envelope(res, 0, 'ok', { access_token: 'tok-abcdefgh', expires_in: 7200 });
		posts++;
		return envelope(res, 50001, 'boom', undefined, 502);
	});
	await assert.rejects(
		client.call('applicationProtection.httpFilter.create', samples['applicationProtection.httpFilter.create']),
		(e: unknown) => e instanceof TransportError && e.status === 502 && e.maybeApplied,
	);
	assert.equal(posts, 1);
	await srv.close();
});

test('rate limiting (HTTP 429 or the rate-limit code) is retried even for writes: the request was not applied', async () => {
	let n = 0;
	const { srv, client } = await setup(() => ({ code: 0 }));
	srv.setHandler((r, res) => {
		if (r.url.pathname.startsWith('/oauth/'))
			return envelope(res, 0, 'ok', { access_token: 'tok-abcdefgh', expires_in: 7200 });
		n++;
		if (n === 1) return envelope(res, 42901, 'slow down', undefined, 429);
		if (n === 2) return envelope(res, 42901, 'slow down');
		return envelope(res, 0, 'ok', { p_flag_id: '3' });
	});
	assert.deepEqual(
		await client.call('applicationProtection.httpFilter.create', samples['applicationProtection.httpFilter.create']),
		{ p_flag_id: '3' },
	);
	assert.equal(n, 3);
	await srv.close();
});

test('every call has a timeout: a hung server gives TransportError(timeout)', async () => {
	const { srv } = await setup(() => ({ code: 0 }));
	srv.setHandler((r, res) => {
		if (r.url.pathname.startsWith('/oauth/'))
			return envelope(res, 0, 'ok', { access_token: 'tok-abcdefgh', expires_in: 7200 });
		/* never answers */
	});
	const c = createClient({
		baseUrl: srv.url,
		transport,
		credentials: { appId: 'a', secret: 'sssss', tokenKind: 'app' },
		timeoutMs: 150,
		retries: 0,
	});
	const t0 = Date.now();
	await assert.rejects(
		c.call('dashboard.isUnderAttack', { site_id: 's' }),
		(e: unknown) => e instanceof TransportError && e.kind === 'timeout',
	);
	assert.ok(Date.now() - t0 < 3000);
	await srv.close();
});

test('connection refused is retried for writes too (nothing reached the service)', async () => {
	const attempts: number[] = [];
	const c2 = createClient({
		baseUrl: 'http://127.0.0.1:9',
		transport,
		retries: 2,
		backoff: { baseMs: 1, maxMs: 2 },
		sleep: (ms) => delay(ms),
		onEvent: (e) => e.type === 'request' && attempts.push(e.attempt),
	});
	await assert.rejects(
		c2.call('authorization.accessToken', samples['authorization.accessToken']),
		(e: unknown) => e instanceof TransportError && e.kind === 'network' && !e.maybeApplied,
	);
	assert.deepEqual(attempts, [0, 1, 2]);
});

test('ops tree: methods derived from every catalog id', async () => {
	const { srv, client } = await setup(() => ({ code: 0, result: { status: 1, bps_size: 5 } }));
	assert.deepEqual(await client.ops.dashboard.isUnderAttack({ site_id: 's' }), { status: 1, bps_size: 5 });
	assert.equal(typeof client.ops.applicationProtection.ipBlacklist.add, 'function');
	assert.equal(typeof client.ops.overview.getSwitch, 'function');
	await srv.close();
});

test('integers must be safe: an id past 2^53 − 1 or of 400 digits is refused naming the field, nothing is sent', async () => {
	const { srv, client } = await setup(() => ({ code: 0 }));
	after(() => srv.close());
	const base = { site_id: 's', domain_port_id: 'd' };
	for (const url_id of ['9007199254740993', '9'.repeat(400), '-9007199254740992', 2 ** 53])
		await assert.rejects(client.call('applicationProtection.authBypass.delete', { ...base, url_id }), (e: unknown) => {
			assert.ok(e instanceof ValidationError);
			assert.equal(e.issues[0].field, 'url_id');
			assert.match(e.issues[0].rule, /safe integer: at most 9007199254740991/);
			return true;
		});
	assert.equal(srv.requests.length, 0);
	await client.call('applicationProtection.authBypass.delete', { ...base, url_id: '9007199254740991' });
	assert.equal(apiCalls(srv)[0].url.pathname.endsWith('/authentication/bypass/9007199254740991'), true);
});
