/**
 * The vendor's console (`POST /__sim/console`) and the request log's `caller`: a console write changes the setting
 * through the operation's own rules and is logged as `console`; API calls are logged with their token's caller.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { boot, ctl, del, get, post, type Env } from './helpers.mts';

let e: Env;
before(async () => {
	e = await boot();
});
after(() => e.close());

test('a console write is a setting change logged as the console; a refused one changes nothing', async () => {
	const dp = { site_id: e.ids.site_id, domain_port_id: e.ids.domain_port_id };
	const list = async () =>
		((await get(e, `${e.ap}/ip-black-list`)).result.p_info.ipv4.black_soc as { ip?: string }[]).map((x) => x.ip);
	const before = await list();
	assert.deepEqual(
		await ctl(e, 'POST', '/console', {
			op: 'applicationProtection.ipBlacklist.add',
			params: { ...dp, ip_black_list: '198.18.9.9' },
		}),
		{
			code: 0,
			msg: 'success',
		},
	);
	assert.deepEqual(await list(), [...before, '198.18.9.9']);
	const bad = await ctl(e, 'POST', '/console', {
		op: 'applicationProtection.switch.set',
		params: { ...dp, name: 'p_auth', enable: 7 },
	});
	assert.equal(bad.code, 40001);
	assert.match(bad.msg, /enable:/);
	const sw = (await get(e, `${e.ap}/switches`)).result.p_auth.enable;
	assert.equal(sw, 0, 'the refused console write changed nothing');
	await assert.rejects(ctl(e, 'POST', '/console', { op: 'authorization.appToken' }), /op: must be an operation id/);
	await assert.rejects(ctl(e, 'POST', '/console', { op: 'nope' }), /op: must be an operation id/);

	const log = e.sim.requests().filter((r) => r.opId?.startsWith('applicationProtection.'));
	const consoleAdd = log.find((r) => r.caller === 'console' && r.opId === 'applicationProtection.ipBlacklist.add');
	assert.equal(consoleAdd?.code, 0);
	assert.equal(consoleAdd?.path, `${e.ap}/ip-black-list`);
	assert.deepEqual(consoleAdd?.body, { ip_black_list: '198.18.9.9' });
	assert.ok(
		log.some((r) => r.caller === 'console' && r.code === 40001),
		'the refusal is logged too',
	);
});

test('API calls are logged with their caller: the app token, a user token of a customer; none when refused', async () => {
	await post(e, `${e.ap}/switch`, { name: 'p_auth', enable: 1 });
	await del(e, `${e.ap}/ip-black-list`, { ip_black_list: '198.18.9.9' });
	await get(e, `${e.ap}/switches`, {}, 'not-a-token');
	const last = e.sim.requests().slice(-3);
	assert.deepEqual(
		last.map((r) => [r.opId, r.caller]),
		[
			['applicationProtection.switch.set', 'app'],
			['applicationProtection.ipBlacklist.remove', 'app'],
			['applicationProtection.switch.list', undefined],
		],
	);
	const res = await fetch(
		`${e.url}/oauth/connect?${new URLSearchParams({ app_id: 'test-app', redirect_uri: 'https://x.example.com/cb', state: 's', response_type: 'code', scope: 'install_login', customer_id: '10002' })}`,
		{ redirect: 'manual' },
	);
	const code = new URL(res.headers.get('location') as string).searchParams.get('code') as string;
	const t = (await (
		await fetch(`${e.url}/oauth/access_token`, {
			method: 'POST',
			body: new URLSearchParams({
				app_id: 'test-app',
				secret: 'test-secret-value',
				code,
				grant_type: 'authorization_code',
			}),
		})
	).json()) as { result: { access_token: string } };
	await get(e, `${e.ap}/switches`, {}, t.result.access_token);
	assert.equal(e.sim.requests().at(-1)?.caller, 'user:10002');
});
