import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { catalog } from '../../api/catalog/index.ts';
import { CODES } from '../../simulator/codes.mts';
import { handlers } from '../../simulator/handlers.mts';
import { parseMultipart } from '../../simulator/multipart.mts';
import { specOperationCount } from '../helpers/spec.mts';
import { boot, call, ctl, del, get, post, put, type Env } from './helpers.mts';

let e: Env;
before(async () => {
	e = await boot({ httpFilterProcessingMs: 0 });
});
after(() => e.close());

test('every catalog operation has a route and a handler, and nothing else', () => {
	assert.equal(catalog.length, specOperationCount());
	assert.deepEqual(Object.keys(handlers).sort(), catalog.map((o) => o.id).sort());
	for (const op of catalog) {
		const path = op.path.replace(/\{(\w+)\}/g, (_m, n) => `${n}-1`);
		const m = e.sim.router.match(op.method, path);
		assert.ok(m && 'opId' in m && m.opId === op.id, `${op.id}: ${op.method} ${path}`);
	}
});

test('every operation succeeds once with valid input (request log proves it)', async () => {
	await ctl(e, 'DELETE', '/requests');
	const a = await ctl(e, 'POST', '/attacks', { site_id: e.ids.site_id, sources: [{ ip: '198.18.1.1' }] });
	const ap = e.ap;
	// authorization
	const res = await fetch(
		`${e.url}/oauth/connect?${new URLSearchParams({ app_id: 'test-app', redirect_uri: 'https://x.example.com/cb', state: 's', response_type: 'code', scope: 'install_login' })}`,
		{ redirect: 'manual' },
	);
	assert.equal(res.status, 302);
	const code = new URL(res.headers.get('location') as string).searchParams.get('code') as string;
	const tokenRes = await fetch(`${e.url}/oauth/access_token`, {
		method: 'POST',
		body: new URLSearchParams({
			app_id: 'test-app',
			secret: 'test-secret-value',
			code,
			grant_type: 'authorization_code',
		}),
	});
	const user = (await tokenRes.json()) as { code: number; result: { refresh_token: string } };
	assert.equal(user.code, 0);
	const rr = await fetch(`${e.url}/oauth/refresh_token`, {
		method: 'POST',
		body: new URLSearchParams({
			app_id: 'test-app',
			refresh_token: user.result.refresh_token,
			grant_type: 'refresh_code',
		}),
	});
	assert.equal(((await rr.json()) as { code: number }).code, 0);
	const at = await fetch(`${e.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: 'test-app', secret: 'test-secret-value', grant_type: 'client_credential' }),
	});
	assert.equal(((await at.json()) as { code: number }).code, 0);
	const calls = [
		() => get(e, `/api/spe/customer/${e.ids.customer_id}`),
		() => get(e, '/api/spe/customers', { page: 2 }),
		() => post(e, `${ap}/authentication/base`, { duration: 60, threshold_tps: 10 }),
		() => get(e, `${ap}/authentication/base`),
		() => post(e, `${ap}/authentication/bypass`, { host: 'h', scheme: 'http', uri: '/' }),
		async () => {
			const l = await get(e, `${ap}/authentication/bypass`);
			return del(e, `${ap}/authentication/bypass/${l.result[0].url_id}`);
		},
		() =>
			post(e, `${ap}/authentication/http`, {
				enforce_protect: 1,
				max_http_request: 1,
				mode: 0,
				p3p_enabled: 0,
				trust_duration: 1,
			}),
		() => get(e, `${ap}/authentication/http`),
		() => call(e, 'POST', `${ap}/authentication/ip`, { json: { action: 'ratelimit', enable: 0, mode: 0 } }),
		() => get(e, `${ap}/authentication/ip`),
		() => post(e, `${ap}/compliance/request-header`, { http_type: 'http09', name: 'accept_required', value: 1 }),
		() => get(e, `${ap}/compliance/request-header`),
		async () => {
			const c = await post(e, `${ap}/http-filter`, { action: 'ACCEPT', host: 'h', uri: '/', p_name: 'p' });
			const id = c.result.p_flag_id;
			for (const r of [
				await get(e, `${ap}/http-filter`),
				await get(e, `${ap}/http-filter/${id}`),
				await put(e, `${ap}/http-filter/${id}`, { action: 'PASS', host: 'h', uri: '/', p_name: 'p' }),
			])
				assert.equal(r.code, 0, r.msg);
			return del(e, `${ap}/http-filter/${id}`);
		},
		() => post(e, `${ap}/ip-black-list`, { ip_black_list: '1.2.3.4-1.2.3.5' }),
		() => get(e, `${ap}/ip-black-list`),
		() => del(e, `${ap}/ip-black-list`, { ip_black_list: '1.2.3.4-1.2.3.5' }),
		() => post(e, `${ap}/ip-white-list`, { ip_white_list: '1.2.3.4-1.2.3.5' }),
		() => get(e, `${ap}/ip-white-list`),
		() => del(e, `${ap}/ip-white-list`, { ip_white_list: '1.2.3.4-1.2.3.5' }),
		() => post(e, `${ap}/request-header/x-forward-for`, { mode: 'insert' }),
		() => get(e, `${ap}/request-header/x-forward-for`),
		() => post(e, `${ap}/status-codes`, { error_code: 502, error_code_rewrite: 200, error_page_type: 1 }),
		() => get(e, `${ap}/status-codes`),
		() => put(e, `${ap}/status-codes`, { error_code: 502, error_code_rewrite: 204, error_page_type: 0 }),
		() => del(e, `${ap}/status-codes`, { error_code: 502 }),
		() => post(e, `${ap}/switch`, { name: 'p_filt', enable: 1 }),
		() => get(e, `${ap}/switches`),
		() => post(e, `${ap}/ua-black-list`, { ua_regex: 'x' }),
		() => del(e, `${ap}/url-bypass`, { url_bypass: ['https://none.example/'] }),
		() => get(e, `/api/specp/op/dashboard/ddos_event/${a.id}/detail`, { module: 'characterization' }),
		() => get(e, `${e.siteDash}/active_mitigation`),
		() => get(e, `${e.siteDash}/current_traffic`),
		() => get(e, `${e.siteDash}/ddos_events`),
		() => get(e, `${e.siteDash}/flow_down_events`),
		() => get(e, `${e.siteDash}/is_under_attack`),
		() => get(e, `${e.siteDash}/network_summary`),
		() => post(e, `${e.op}/detection/mode`, { model: '0' }),
		() =>
			post(e, `${e.op}/detection/policy`, {
				name: 'sip_flood',
				type: 'sip',
				is_enabled: '1',
				high_pps: '2K',
				low_pps: '1K',
			}),
		() => get(e, `${e.op}/detection/policy`),
		() => post(e, `${e.op}/policy/profile`, { profile_id: 'auto-dns' }),
		() => post(e, `${e.op}/policy/switch`, { is_enable: 1, switch_type: 'detection' }),
		() => get(e, `${e.op}/policy/switch`),
	];
	for (const c of calls) {
		const r = await c();
		assert.equal(r.code, 0, r.msg);
	}
	const log = (await ctl(e, 'GET', '/requests')) as { opId: string; code: number }[];
	const succeeded = new Set(log.filter((x) => x.code === 0).map((x) => x.opId));
	const missing = catalog.map((o) => o.id).filter((id) => !succeeded.has(id));
	assert.deepEqual(missing, []);
});

test('request log records op, method, path, query and decoded body (arrays for repeated names)', async () => {
	await ctl(e, 'DELETE', '/requests');
	await post(e, `${e.ap}/http-filter`, { action: 'PASS', host: 'h', uri: '/', p_name: 'log', methods: ['GET', 'PUT'] });
	await del(e, `${e.ap}/url-bypass`, { url_bypass: ['a', 'b'] });
	const log = await ctl(e, 'GET', '/requests');
	assert.equal(log.length, 2);
	assert.equal(log[0].opId, 'applicationProtection.httpFilter.create');
	assert.equal(log[0].method, 'POST');
	assert.equal(log[0].path, `${e.ap}/http-filter`);
	assert.deepEqual(log[0].body, { action: 'PASS', host: 'h', uri: '/', p_name: 'log', methods: ['GET', 'PUT'] });
	assert.equal(log[0].query.access_token, '***');
	assert.deepEqual(log[1].query.url_bypass, ['a', 'b']);
	assert.equal(typeof log[1].time, 'number');
	const filtered = await ctl(e, 'GET', '/requests?op=applicationProtection.urlBypass.delete');
	assert.equal(filtered.length, 1);
	await ctl(e, 'DELETE', '/requests');
	assert.deepEqual(await ctl(e, 'GET', '/requests'), []);
});

test('faults: code, http5xx, ratelimit, delay, reset, expireToken — for N calls of one op or all', async () => {
	const path = `${e.siteDash}/is_under_attack`;
	await ctl(e, 'POST', '/faults', { op: 'dashboard.isUnderAttack', kind: 'code', code: 50099, count: 2 });
	assert.equal((await get(e, path)).code, 50099);
	assert.equal((await get(e, `${e.siteDash}/current_traffic`)).code, 0); // other ops unaffected
	assert.equal((await get(e, path)).code, 50099);
	assert.equal((await get(e, path)).code, 0);

	await ctl(e, 'POST', '/faults', { op: '*', kind: 'http5xx' });
	const r5 = await fetch(`${e.url}${path}?access_token=${e.token}`);
	assert.equal(r5.status, 503);
	assert.equal((await get(e, path)).code, 0);

	await ctl(e, 'POST', '/faults', { op: 'dashboard.isUnderAttack', kind: 'ratelimit' });
	assert.equal((await get(e, path)).code, CODES.RATE_LIMITED);

	await ctl(e, 'POST', '/faults', { op: 'dashboard.isUnderAttack', kind: 'delay', delayMs: 300 });
	const t0 = Date.now();
	assert.equal((await get(e, path)).code, 0);
	assert.ok(Date.now() - t0 >= 280);

	// pathContains: only requests whose path contains the text (a fault on one site)
	await ctl(e, 'POST', '/faults', { op: '*', kind: 'code', code: 50098, pathContains: '/current_traffic' });
	assert.equal((await get(e, path)).code, 0);
	assert.equal((await get(e, `${e.siteDash}/current_traffic`)).code, 50098);
	await assert.rejects(ctl(e, 'POST', '/faults', { op: '*', kind: 'code', pathContains: '' }));

	await ctl(e, 'POST', '/faults', { op: 'dashboard.isUnderAttack', kind: 'reset' });
	await assert.rejects(fetch(`${e.url}${path}?access_token=${e.token}`));
	assert.equal((await get(e, path)).code, 0);

	const tok = (await (
		await fetch(`${e.url}/oauth/credit/token`, {
			method: 'POST',
			body: new URLSearchParams({ app_id: 'test-app', secret: 'test-secret-value', grant_type: 'client_credential' }),
		})
	).json()) as { result: { access_token: string } };
	await ctl(e, 'POST', '/faults', { op: 'customer.list', kind: 'expireToken' });
	assert.equal((await get(e, '/api/spe/customers', {}, tok.result.access_token)).code, CODES.INVALID_TOKEN);
	assert.equal((await get(e, '/api/spe/customers', {}, tok.result.access_token)).code, CODES.INVALID_TOKEN);
	assert.equal((await get(e, '/api/spe/customers')).code, 0);

	// a fault on an oauth operation
	await ctl(e, 'POST', '/faults', { op: 'authorization.appToken', kind: 'code' });
	const f = await fetch(`${e.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: 'test-app', secret: 'test-secret-value', grant_type: 'client_credential' }),
	});
	assert.equal(((await f.json()) as { code: number }).code, CODES.INTERNAL);

	const log = await ctl(e, 'GET', '/requests?op=dashboard.isUnderAttack');
	assert.ok(log.some((x: { fault?: string }) => x.fault === 'reset'));
	await assert.rejects(ctl(e, 'POST', '/faults', { op: 'nope', kind: 'code' }));
	await assert.rejects(ctl(e, 'POST', '/faults', { op: '*', kind: 'explode' }));
	assert.deepEqual(await ctl(e, 'GET', '/faults'), []);
});

test('control: state, clock, reset; unknown routes and methods', async () => {
	const s = await ctl(e, 'GET', '/state');
	for (const k of ['now', 'ids', 'customers', 'sites', 'domainPorts', 'attacks', 'flowDowns', 'tokens', 'profiles'])
		assert.ok(k in s, k);
	assert.equal(s.customers.length, 23);
	const c0 = (await ctl(e, 'GET', '/clock')).now;
	const c1 = (await ctl(e, 'POST', '/clock/advance', { seconds: 90 })).now;
	assert.equal(c1 - c0, 90_000);
	await assert.rejects(ctl(e, 'POST', '/clock/advance', { seconds: -1 }));
	await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '9.9.9.9' });
	await ctl(e, 'POST', '/reset', {});
	// reset drops tokens and policy changes
	assert.equal((await get(e, `${e.ap}/ip-black-list`)).code, CODES.INVALID_TOKEN);
	const tok = (await (
		await fetch(`${e.url}/oauth/credit/token`, {
			method: 'POST',
			body: new URLSearchParams({ app_id: 'test-app', secret: 'test-secret-value', grant_type: 'client_credential' }),
		})
	).json()) as { result: { access_token: string } };
	e.token = tok.result.access_token;
	assert.deepEqual((await get(e, `${e.ap}/ip-black-list`)).result.p_info.ipv4.black_soc, []);
	// vendor API: unknown path 404, wrong method 405, both with an envelope
	const r404 = await fetch(`${e.url}/api/nope?access_token=${e.token}`);
	assert.equal(r404.status, 404);
	assert.equal(((await r404.json()) as { code: number }).code, CODES.NOT_FOUND);
	const r405 = await fetch(`${e.url}${e.ap}/switches?access_token=${e.token}`, { method: 'DELETE' });
	assert.equal(r405.status, 405);
	const c404 = await fetch(`${e.url}/__sim/nope`);
	assert.equal(c404.status, 404);
});

test('content types: multipart ops refuse urlencoded; malformed multipart is a validation error', async () => {
	const r = await call(e, 'POST', `${e.ap}/authentication/base`, { urlencoded: { duration: 1, threshold_tps: 1 } });
	assert.equal(r.code, CODES.BAD_CONTENT_TYPE);
	const bad = await fetch(`${e.url}${e.ap}/authentication/base?access_token=${e.token}`, {
		method: 'POST',
		headers: { 'content-type': 'multipart/form-data; boundary=XYZ' },
		body: 'garbage',
	});
	assert.equal(((await bad.json()) as { code: number }).code, CODES.VALIDATION);
	const lenient = await boot({ strictContentType: false });
	try {
		assert.equal(
			(
				await call(lenient, 'POST', `${lenient.ap}/authentication/base`, {
					urlencoded: { duration: 1, threshold_tps: 1 },
				})
			).code,
			0,
		);
	} finally {
		await lenient.close();
	}
});

test('multipart parser: repeated names, quoted boundary, empty values, CRLF inside values', () => {
	const b = 'b0undary';
	const body = Buffer.from(
		[
			`--${b}`,
			'Content-Disposition: form-data; name="m"',
			'',
			'GET',
			`--${b}`,
			'Content-Disposition: form-data; name="m"',
			'',
			'POST',
			`--${b}`,
			'Content-Disposition: form-data; name="e"',
			'',
			'',
			`--${b}`,
			'Content-Disposition: form-data; name="t"',
			'Content-Type: text/plain',
			'',
			'a\r\nb',
			`--${b}--`,
			'',
		].join('\r\n'),
	);
	const m = parseMultipart(body, b);
	assert.deepEqual(m.get('m'), ['GET', 'POST']);
	assert.deepEqual(m.get('e'), ['']);
	assert.deepEqual(m.get('t'), ['a\r\nb']);
	assert.throws(() =>
		parseMultipart(Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="x"\r\n\r\nunterminated`), b),
	);
});

test('control API: a web page cannot reach it — a non-loopback Origin is refused (403), a body must be JSON (415); state unchanged', async () => {
	const tokensBefore = e.sim.tokens.size;
	const faultsBefore = e.sim.faults.length;
	const attacksBefore = e.sim.world.attacks.length;
	const evil = { origin: 'http://evil.example', 'content-type': 'text/plain' };
	const send = (path: string, headers: Record<string, string>, body = '{}') =>
		fetch(`${e.url}/__sim${path}`, { method: 'POST', headers, body });
	for (const [path, body] of [
		['/faults', JSON.stringify({ op: 'applicationProtection.ipBlacklist.add', kind: 'http5xx', count: 5 })],
		['/reset', '{}'],
		['/tokens/expire', '{}'],
		['/attacks', JSON.stringify({ site_id: e.ids.site_id })],
	] as const) {
		const r = await send(path, evil, body);
		assert.equal(r.status, 403, `${path}: cross-origin text/plain`);
		assert.match(((await r.json()) as { error: string }).error, /origin "http:\/\/evil\.example" is not loopback/);
		assert.equal(
			(await send(path, { origin: 'http://evil.example', 'content-type': 'application/json' }, body)).status,
			403,
			`${path}: cross-origin JSON`,
		);
		assert.equal(
			(await send(path, { 'content-type': 'text/plain' }, body)).status,
			415,
			`${path}: text/plain without Origin`,
		);
		assert.equal(
			(await send(path, { 'content-type': 'application/x-www-form-urlencoded' }, body)).status,
			415,
			`${path}: form without Origin`,
		);
		assert.equal(
			(await send(path, { origin: 'null', 'content-type': 'application/json' }, body)).status,
			403,
			`${path}: Origin null (sandboxed page, file://)`,
		);
		assert.equal(
			(await send(path, { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' }, body)).status,
			403,
			`${path}: marked cross-site by the browser`,
		);
	}
	assert.equal(e.sim.faults.length, faultsBefore, 'no fault added');
	assert.equal(e.sim.world.attacks.length, attacksBefore, 'no attack started');
	assert.equal(e.sim.tokens.size, tokensBefore);
	// loopback pages and plain clients keep working
	const local = await send(
		'/faults',
		{ origin: 'http://127.0.0.1:5678', 'content-type': 'application/json' },
		JSON.stringify({ op: 'applicationProtection.ipBlacklist.add', kind: 'http5xx', count: 1 }),
	);
	assert.equal(local.status, 200);
	assert.equal(
		(
			await send(
				'/faults',
				{ origin: 'http://localhost:5678', 'content-type': 'application/json; charset=utf-8' },
				JSON.stringify({ op: 'applicationProtection.ipBlacklist.add', kind: 'http5xx', count: 1 }),
			)
		).status,
		200,
	);
	assert.equal(
		(await fetch(`${e.url}/__sim/faults`, { method: 'DELETE' })).status,
		200,
		'a bodiless DELETE from a plain client',
	);
});
