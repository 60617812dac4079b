import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { boot, call, del, get, isInvalid, post, put, type Env } from './helpers.mts';

let e: Env;
before(async () => {
	e = await boot({ httpFilterProcessingMs: 60 });
});
after(() => e.close());

const ok = (r: { code: number; msg: string }) => assert.equal(r.code, 0, r.msg);

test('authentication base: POST then GET returns it; recaptcha_per_ip_tps kept; rules', async () => {
	ok(await post(e, `${e.ap}/authentication/base`, { duration: 900, threshold_tps: 250 }));
	const g = await get(e, `${e.ap}/authentication/base`);
	ok(g);
	assert.deepEqual(g.result, { duration: 900, recaptcha_per_ip_tps: 0, threshold_tps: 250 });
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/base`, { duration: 900 }), 'threshold_tps'));
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/base`, { duration: 'x', threshold_tps: 1 }), 'duration'));
	assert.ok(
		isInvalid(await post(e, `${e.ap}/authentication/base`, { duration: 1, threshold_tps: 1, extra: 1 }), 'extra'),
	);
	// nothing changed by the rejected requests
	assert.deepEqual((await get(e, `${e.ap}/authentication/base`)).result.duration, 900);
});

test('authentication bypass: add, list with url_id, no duplicate, delete, unknown id', async () => {
	ok(await post(e, `${e.ap}/authentication/bypass`, { host: 'www.a.example', scheme: 'https', uri: '/login' }));
	ok(await post(e, `${e.ap}/authentication/bypass`, { host: 'www.a.example', scheme: 'https', uri: '/login' }));
	ok(await post(e, `${e.ap}/authentication/bypass`, { host: 'www.a.example', scheme: 'http', uri: '/api' }));
	const l = await get(e, `${e.ap}/authentication/bypass`);
	assert.equal(l.result.length, 2);
	assert.deepEqual(Object.keys(l.result[0]).sort(), ['host', 'scheme', 'uri', 'url_id']);
	assert.equal(typeof l.result[0].url_id, 'number');
	ok(await del(e, `${e.ap}/authentication/bypass/${l.result[0].url_id}`));
	const l2 = await get(e, `${e.ap}/authentication/bypass`);
	assert.deepEqual(l2.result, [l.result[1]]);
	assert.equal((await del(e, `${e.ap}/authentication/bypass/${l.result[0].url_id}`)).code, CODES.NOT_FOUND);
	assert.ok(isInvalid(await del(e, `${e.ap}/authentication/bypass/abc`), 'url_id'));
	assert.ok(
		isInvalid(await post(e, `${e.ap}/authentication/bypass`, { host: 'h', scheme: 'ftp', uri: '/' }), 'scheme'),
	);
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/bypass`, { scheme: 'http', uri: '/' }), 'host'));
});

test('HTTP authentication: round trip and enumerated fields', async () => {
	const rec = {
		enforce_protect: 3,
		max_http_request: 120,
		mode: 2,
		p3p_enabled: 1,
		p3p_string: 'CP="NOI DSP"',
		trust_duration: 600,
	};
	ok(await post(e, `${e.ap}/authentication/http`, rec));
	assert.deepEqual((await get(e, `${e.ap}/authentication/http`)).result, rec);
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/http`, { ...rec, enforce_protect: 4 }), 'enforce_protect'));
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/http`, { ...rec, mode: 3 }), 'mode'));
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/http`, { ...rec, p3p_enabled: 2 }), 'p3p_enabled'));
	const { trust_duration: _t, ...noTrust } = rec;
	assert.ok(isInvalid(await post(e, `${e.ap}/authentication/http`, noTrust), 'trust_duration'));
});

test('IP authentication (JSON body): round trip and §4.3.3 exclusive objects', async () => {
	const body = { action: 'blacklist', enable: 2, mode: 2, action_blacklist: { duration: 120, threshold_rps: 50 } };
	ok(await call(e, 'POST', `${e.ap}/authentication/ip`, { json: body }));
	assert.deepEqual((await get(e, `${e.ap}/authentication/ip`)).result, body);
	let r = await call(e, 'POST', `${e.ap}/authentication/ip`, {
		json: { action: 'ratelimit', enable: 1, mode: 1, action_blacklist: { duration: 1, threshold_rps: 1 } },
	});
	assert.ok(isInvalid(r, 'action_blacklist'));
	assert.match(r.msg, /only action_ratelimit may be set/);
	r = await call(e, 'POST', `${e.ap}/authentication/ip`, {
		json: { action: 'ratelimit', enable: 1, mode: 1, action_ratelimit: { duration: 1, ratelimit_rps: 1 } },
	});
	assert.ok(isInvalid(r, 'action_ratelimit.threshold_rps'));
	r = await call(e, 'POST', `${e.ap}/authentication/ip`, { json: { action: 'drop', enable: 5, mode: 1 } });
	assert.ok(isInvalid(r, 'action') && isInvalid(r, 'enable'));
	// multipart is not the declared content type for this operation
	r = await post(e, `${e.ap}/authentication/ip`, { action: 'ratelimit', enable: 1, mode: 1 });
	assert.equal(r.code, CODES.BAD_CONTENT_TYPE);
	assert.deepEqual((await get(e, `${e.ap}/authentication/ip`)).result, body);
});

test('request-header compliance: one switch at a time', async () => {
	ok(
		await post(e, `${e.ap}/compliance/request-header`, { http_type: 'http10', name: 'user_agent_required', value: 1 }),
	);
	const g = (await get(e, `${e.ap}/compliance/request-header`)).result;
	assert.deepEqual(Object.keys(g).sort(), ['http09', 'http10', 'http11']);
	assert.equal(g.http10.user_agent_required, 1);
	assert.equal(g.http09.user_agent_required, 0);
	assert.deepEqual(Object.keys(g.http11).sort(), [
		'accept_encoding_required',
		'accept_required',
		'connection_required',
		'host_required',
		'user_agent_required',
	]);
	assert.ok(
		isInvalid(
			await post(e, `${e.ap}/compliance/request-header`, { http_type: 'http2', name: 'host_required', value: 1 }),
			'http_type',
		),
	);
	assert.ok(
		isInvalid(
			await post(e, `${e.ap}/compliance/request-header`, { http_type: 'http11', name: 'cookie_required', value: 1 }),
			'name',
		),
	);
	assert.ok(
		isInvalid(
			await post(e, `${e.ap}/compliance/request-header`, { http_type: 'http11', name: 'host_required', value: 2 }),
			'value',
		),
	);
});

const filter = {
	action: 'URL_REDIRECTION',
	host: 'www.a.example',
	uri: '^/old/.*',
	p_name: 'move-old',
	p_desc: 'redirect old paths',
	methods: ['GET', 'HEAD'],
	other_iprange: ['10.0.0.0-10.0.0.99', '192.0.2.1-192.0.2.1'],
	redirect_host: 'new.a.example',
	redirect_url: '/new',
	rp_code: 301,
	scheme: 'https',
};

test('HTTP filter: create, list, get (without p_flag_id), update, delete', async () => {
	const c = await post(e, `${e.ap}/http-filter`, filter);
	ok(c);
	assert.equal(typeof c.result.p_flag_id, 'string');
	const id = c.result.p_flag_id;
	const list = (await get(e, `${e.ap}/http-filter`)).result;
	const mine = list.find((x: { p_flag_id: string }) => x.p_flag_id === id);
	assert.equal(mine.p_name, 'move-old');
	assert.equal(mine.p_desc, 'redirect old paths');
	assert.equal(mine.url, 'www.a.example^/old/.*');
	assert.deepEqual(mine.action, ['URL_REDIRECTION']);
	assert.deepEqual(mine.action_annex, { http_code: 301, page: '', url: 'https://new.a.example/new' });
	assert.deepEqual(mine.methods, ['GET', 'HEAD']);
	assert.deepEqual(mine.other_iprange, [
		{ start_ip: '10.0.0.0', end_ip: '10.0.0.99' },
		{ start_ip: '192.0.2.1', end_ip: '192.0.2.1' },
	]);
	const one = (await get(e, `${e.ap}/http-filter/${id}`)).result;
	assert.equal(one.p_flag_id, undefined);
	const { p_flag_id: _x, ...rest } = mine;
	assert.deepEqual(one, rest);
	ok(
		await put(e, `${e.ap}/http-filter/${id}`, {
			action: 'BUSY_PAGE',
			host: 'www.a.example',
			uri: '/busy',
			p_name: 'busy',
			page: 'maintenance',
		}),
	);
	const after = (await get(e, `${e.ap}/http-filter/${id}`)).result;
	assert.deepEqual(after.action, ['BUSY_PAGE']);
	assert.equal(after.action_annex.page, 'maintenance');
	assert.deepEqual(after.methods, []);
	ok(await del(e, `${e.ap}/http-filter/${id}`));
	assert.equal((await get(e, `${e.ap}/http-filter/${id}`)).code, CODES.NOT_FOUND);
	assert.equal((await del(e, `${e.ap}/http-filter/${id}`)).code, CODES.NOT_FOUND);
	assert.equal(
		(await put(e, `${e.ap}/http-filter/${id}`, { action: 'PASS', host: 'h', uri: '/', p_name: 'n' })).code,
		CODES.NOT_FOUND,
	);
	assert.ok(isInvalid(await get(e, `${e.ap}/http-filter/abc`), 'p_flag_id'));
});

test('HTTP filter rules (§4.3.1, §8)', async () => {
	const base = { host: 'h.example', uri: '/', p_name: 'n' };
	const bad = async (f: Record<string, unknown>, field: string) => {
		const r = await post(e, `${e.ap}/http-filter`, f as never);
		assert.ok(isInvalid(r, field), `${field}: ${r.code} ${r.msg}`);
	};
	await bad({ ...base, action: 'DROP' }, 'action');
	await bad({ host: 'h', uri: '/', action: 'PASS' }, 'p_name');
	await bad({ ...base, action: 'PASS', host: undefined }, 'host');
	await bad({ ...base, action: 'PASS', uri: undefined }, 'uri');
	await bad({ ...base, action: 'BUSY_PAGE' }, 'page');
	await bad({ ...base, action: 'DOMAIN_REDIRECTION', rp_code: 301, scheme: 'https' }, 'redirect_host');
	await bad({ ...base, action: 'DOMAIN_REDIRECTION', redirect_host: 'x', scheme: 'https' }, 'rp_code');
	await bad({ ...base, action: 'DOMAIN_REDIRECTION', redirect_host: 'x', rp_code: 301 }, 'scheme');
	await bad({ ...base, action: 'URL_REDIRECTION', redirect_host: 'x', rp_code: 302, scheme: 'http' }, 'redirect_url');
	await bad({ ...base, action: 'DOMAIN_REDIRECTION', redirect_host: 'x', rp_code: 303, scheme: 'http' }, 'rp_code');
	await bad({ ...base, action: 'PASS', methods: ['GET', 'FETCH'] }, 'methods');
	await bad({ ...base, action: 'PASS', other_iprange: ['10.0.0.9-10.0.0.1'] }, 'other_iprange');
	// 256 IPs are allowed, 257 are not
	ok(await post(e, `${e.ap}/http-filter`, { ...base, action: 'PASS', other_iprange: ['10.1.0.0-10.1.0.255'] }));
	await bad({ ...base, action: 'PASS', other_iprange: ['10.1.0.0-10.1.0.255', '10.2.0.1-10.2.0.1'] }, 'other_iprange');
	ok(
		await post(e, `${e.ap}/http-filter`, {
			...base,
			action: 'DOMAIN_REDIRECTION',
			redirect_host: 'x.example',
			rp_code: 302,
			scheme: 'http',
		}),
	);
});

test('HTTP filter: concurrent create/edit on one domain-port is rejected with the conflict code', async () => {
	const base = { host: 'h.example', uri: '/', p_name: 'n', action: 'PASS' };
	const [a, b] = await Promise.all([
		post(e, `${e.ap}/http-filter`, base),
		post(e, `${e.ap}/http-filter`, { ...base, p_name: 'm' }),
	]);
	const codes = [a.code, b.code].sort();
	assert.deepEqual(codes, [0, CODES.CONFLICT_BUSY]);
	// sequential requests both succeed
	ok(await post(e, `${e.ap}/http-filter`, base));
	ok(await post(e, `${e.ap}/http-filter`, base));
	// another domain-port of the same site is independent
	const other = e.ap.replace(
		`/domain-port/${e.ids.domain_port_id}`,
		`/domain-port/${Number(e.ids.domain_port_id) + 1}`,
	);
	const [c, d] = await Promise.all([post(e, `${e.ap}/http-filter`, base), post(e, `${other}/http-filter`, base)]);
	assert.deepEqual([c.code, d.code], [0, 0]);
});

test('IP blacklist: add range / address / CIDR, no duplicates, comma-separated delete, rules', async () => {
	ok(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '198.51.100.1-198.51.100.20' }));
	ok(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '198.51.100.1-198.51.100.20' }));
	ok(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '203.0.113.7' }));
	ok(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '192.0.2.0/24' }));
	let g = (await get(e, `${e.ap}/ip-black-list`)).result;
	assert.equal(g.p_info.enable, 0);
	assert.deepEqual(g.p_info.ipv4.black_soc, [
		{ type: 'range', start_ip: '198.51.100.1', end_ip: '198.51.100.20' },
		{ type: 'network', ip: '203.0.113.7' },
		{ type: 'network', ip: '192.0.2.0/24' },
	]);
	ok(await del(e, `${e.ap}/ip-black-list`, { ip_black_list: '203.0.113.7,198.51.100.1-198.51.100.20,10.9.9.9' }));
	g = (await get(e, `${e.ap}/ip-black-list`)).result;
	assert.deepEqual(g.p_info.ipv4.black_soc, [{ type: 'network', ip: '192.0.2.0/24' }]);
	assert.ok(isInvalid(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '1.2.3.300' }), 'ip_black_list'));
	assert.ok(isInvalid(await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '1.2.3.9-1.2.3.1' }), 'ip_black_list'));
	assert.ok(isInvalid(await post(e, `${e.ap}/ip-black-list`, {}), 'ip_black_list'));
	assert.ok(isInvalid(await del(e, `${e.ap}/ip-black-list`), 'ip_black_list'));
	assert.ok(isInvalid(await del(e, `${e.ap}/ip-black-list`, { ip_black_list: 'nope' }), 'ip_black_list'));
});

test('IP whitelist: required field, round trip, delete', async () => {
	ok(await post(e, `${e.ap}/ip-white-list`, { ip_white_list: '10.10.0.1-10.10.0.9' }));
	let g = (await get(e, `${e.ap}/ip-white-list`)).result;
	assert.deepEqual(g.p_info.ipv4.white_soc, [{ type: 'range', start_ip: '10.10.0.1', end_ip: '10.10.0.9' }]);
	assert.ok(isInvalid(await post(e, `${e.ap}/ip-white-list`, {}), 'ip_white_list'));
	assert.ok(isInvalid(await del(e, `${e.ap}/ip-white-list`), 'ip_white_list'));
	ok(await del(e, `${e.ap}/ip-white-list`, { ip_white_list: '10.10.0.1-10.10.0.9' }));
	g = (await get(e, `${e.ap}/ip-white-list`)).result;
	assert.deepEqual(g.p_info.ipv4.white_soc, []);
});

test('X-Forwarded-For (§4.3.2): modes, name required for secure; portal 2023.2.6 drops secure', async () => {
	ok(await post(e, `${e.ap}/request-header/x-forward-for`, { mode: 'secure', name: 'X-Real-IP' }));
	assert.deepEqual((await get(e, `${e.ap}/request-header/x-forward-for`)).result, {
		mode: 'secure',
		name: 'X-Real-IP',
	});
	ok(await post(e, `${e.ap}/request-header/x-forward-for`, { mode: 'append' }));
	assert.deepEqual((await get(e, `${e.ap}/request-header/x-forward-for`)).result, { mode: 'append', name: '' });
	assert.ok(isInvalid(await post(e, `${e.ap}/request-header/x-forward-for`, { mode: 'secure' }), 'name'));
	assert.ok(isInvalid(await post(e, `${e.ap}/request-header/x-forward-for`, { mode: 'drop' }), 'mode'));
	const e2 = await boot({ portalVersion: '2023.2.6' });
	try {
		assert.equal((await get(e2, `${e2.ap}/request-header/x-forward-for`)).result.mode, 'insert');
		assert.ok(
			isInvalid(await post(e2, `${e2.ap}/request-header/x-forward-for`, { mode: 'secure', name: 'X' }), 'mode'),
		);
		assert.equal((await post(e2, `${e2.ap}/request-header/x-forward-for`, { mode: 'reset' })).code, 0);
	} finally {
		await e2.close();
	}
});

test('status code overwrite (§4.3.4): create, list, update, delete and every rule', async () => {
	ok(await post(e, `${e.ap}/status-codes`, { error_code: 404, error_code_rewrite: 200, error_page_type: 0 }));
	ok(
		await post(e, `${e.ap}/status-codes`, {
			error_code: 503,
			error_code_rewrite: 503,
			error_page_type: 2,
			error_page_info: 'https://x.example/503.html',
		}),
	);
	let g = (await get(e, `${e.ap}/status-codes`)).result;
	assert.equal(g.enable, 1);
	assert.deepEqual(g.error_page, [
		{ error_code: 404, error_code_rewrite: 200, error_page_type: 0, error_page_info: '' },
		{ error_code: 503, error_code_rewrite: 503, error_page_type: 2, error_page_info: 'https://x.example/503.html' },
	]);
	assert.equal(
		(await post(e, `${e.ap}/status-codes`, { error_code: 404, error_code_rewrite: 200, error_page_type: 0 })).code,
		CODES.CONFLICT_EXISTS,
	);
	ok(await put(e, `${e.ap}/status-codes`, { error_code: 404, error_code_rewrite: 410, error_page_type: 1 }));
	g = (await get(e, `${e.ap}/status-codes`)).result;
	assert.deepEqual(g.error_page[0], {
		error_code: 404,
		error_code_rewrite: 410,
		error_page_type: 1,
		error_page_info: '',
	});
	assert.equal(
		(await put(e, `${e.ap}/status-codes`, { error_code: 400, error_code_rewrite: 410, error_page_type: 1 })).code,
		CODES.NOT_FOUND,
	);
	ok(await del(e, `${e.ap}/status-codes`, { error_code: 404 }));
	assert.equal((await del(e, `${e.ap}/status-codes`, { error_code: 404 })).code, CODES.NOT_FOUND);
	for (const code of [399, 418, 499, 506])
		assert.ok(
			isInvalid(
				await post(e, `${e.ap}/status-codes`, { error_code: code, error_code_rewrite: 200, error_page_type: 0 }),
				'error_code',
			),
		);
	for (const code of [400, 417, 500, 505])
		ok(await post(e, `${e.ap}/status-codes`, { error_code: code, error_code_rewrite: 200, error_page_type: 0 }));
	for (const rw of [99, 1000])
		assert.ok(
			isInvalid(
				await post(e, `${e.ap}/status-codes`, { error_code: 401, error_code_rewrite: rw, error_page_type: 0 }),
				'error_code_rewrite',
			),
		);
	ok(await post(e, `${e.ap}/status-codes`, { error_code: 401, error_code_rewrite: 999, error_page_type: 0 }));
	ok(await post(e, `${e.ap}/status-codes`, { error_code: 402, error_code_rewrite: 100, error_page_type: 0 }));
	assert.ok(
		isInvalid(
			await post(e, `${e.ap}/status-codes`, { error_code: 403, error_code_rewrite: 200, error_page_type: 2 }),
			'error_page_info',
		),
	);
	assert.ok(
		isInvalid(
			await post(e, `${e.ap}/status-codes`, { error_code: 403, error_code_rewrite: 200, error_page_type: 3 }),
			'error_page_type',
		),
	);
	assert.ok(isInvalid(await del(e, `${e.ap}/status-codes`), 'error_code'));
	assert.ok(isInvalid(await del(e, `${e.ap}/status-codes`, { error_code: 200 }), 'error_code'));
});

test('switches: tree shape, set a child and a root, unknown name', async () => {
	let t = (await get(e, `${e.ap}/switches`)).result;
	assert.deepEqual(Object.keys(t).sort(), ['p_auth', 'p_error_rewrite', 'p_filt', 'p_malf', 'p_wbl']);
	for (const c of ['api', 'file_extension', 'mobile', 'spider', 'ua_black_list']) assert.equal(t.p_wbl[c].name, c);
	for (const c of ['accept_invalid_http_request', 'advanced']) assert.equal(t.p_malf[c].name, c);
	ok(await post(e, `${e.ap}/switch`, { name: 'spider', enable: 0 }));
	ok(await post(e, `${e.ap}/switch`, { name: 'p_auth', enable: 1 }));
	t = (await get(e, `${e.ap}/switches`)).result;
	assert.equal(t.p_wbl.spider.enable, 0);
	assert.equal(t.p_auth.enable, 1);
	assert.ok(isInvalid(await post(e, `${e.ap}/switch`, { name: 'p_nope', enable: 1 }), 'name'));
	assert.ok(isInvalid(await post(e, `${e.ap}/switch`, { name: 'p_auth', enable: 2 }), 'enable'));
});

test('UA blacklist add (repeated ua_regex) and URL bypass delete (unknown skipped, §7)', async () => {
	ok(await post(e, `${e.ap}/ua-black-list`, { ua_regex: ['^curl/', 'BadBot.*'], action: 'block' }));
	ok(await post(e, `${e.ap}/ua-black-list`, { ua_regex: ['^curl/'] }));
	const dp = e.sim.world.domainPorts.get(e.ids.domain_port_id)!;
	assert.deepEqual(dp.policy.uaBlacklist.ua_black_list.ua_regex, ['^curl/', 'BadBot.*']);
	assert.ok(isInvalid(await post(e, `${e.ap}/ua-black-list`, { ua_regex: ['(unclosed'] }), 'ua_regex'));
	assert.ok(isInvalid(await post(e, `${e.ap}/ua-black-list`, { action: 'block' }), 'ua_regex'));
	const before = [...dp.policy.urlBypass];
	assert.ok(before.length >= 2);
	ok(await del(e, `${e.ap}/url-bypass`, { url_bypass: [before[0], 'https://unknown.example/x'] }));
	assert.deepEqual(dp.policy.urlBypass, before.slice(1));
	assert.ok(isInvalid(await del(e, `${e.ap}/url-bypass`), 'url_bypass'));
});

test('unknown site / domain-port answer not found; a domain-port of another site is not found', async () => {
	assert.equal(
		(await get(e, `/api/specp/policy/appshield/site/1/domain-port/${e.ids.domain_port_id}/switches`)).code,
		CODES.NOT_FOUND,
	);
	assert.equal(
		(await get(e, `/api/specp/policy/appshield/site/${e.ids.site_id}/domain-port/1/switches`)).code,
		CODES.NOT_FOUND,
	);
	const otherSite = String(Number(e.ids.site_id) + 1);
	const r = await get(e, `/api/specp/policy/appshield/site/${otherSite}/domain-port/${e.ids.domain_port_id}/switches`);
	assert.equal(r.code, CODES.NOT_FOUND);
	assert.match(r.msg, /domain_port_id/);
});
