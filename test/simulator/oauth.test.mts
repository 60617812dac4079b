import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { APP, boot, ctl, get, type Env, type Envelope } from './helpers.mts';

let e: Env;
before(async () => {
	e = await boot({ registeredHost: 'https://portal-app.example.com' });
});
after(() => e.close());

const oauth = async (path: string, fields: Record<string, string>): Promise<Envelope> => {
	const res = await fetch(`${e.url}${path}`, { method: 'POST', body: new URLSearchParams(fields) });
	assert.equal(res.status, 200);
	return (await res.json()) as Envelope;
};

async function connect(params: Record<string, string>): Promise<Response> {
	return fetch(`${e.url}/oauth/connect?${new URLSearchParams(params)}`, { redirect: 'manual' });
}

async function userTokens() {
	const res = await connect({
		app_id: APP.appId,
		redirect_uri: 'https://cb.example.com/oauth/done?x=1',
		response_type: 'code',
		scope: 'install_login',
		state: 'st-123',
		customer_id: e.ids.customer_id,
		xspe: 'portal',
	});
	assert.equal(res.status, 302);
	const loc = new URL(res.headers.get('location') as string);
	assert.equal(loc.origin + loc.pathname, 'https://cb.example.com/oauth/done');
	assert.equal(loc.searchParams.get('x'), '1');
	assert.equal(loc.searchParams.get('state'), 'st-123');
	const code = loc.searchParams.get('code') as string;
	assert.ok(code.length > 10);
	const r = await oauth('/oauth/access_token', {
		app_id: APP.appId,
		secret: APP.secret,
		code,
		grant_type: 'authorization_code',
	});
	assert.equal(r.code, 0, r.msg);
	return { code, ...r.result };
}

test('client-credential token: access_token and expires_in 7200, usable on /api', async () => {
	const r = await oauth('/oauth/credit/token', {
		app_id: APP.appId,
		secret: APP.secret,
		grant_type: 'client_credential',
	});
	assert.equal(r.code, 0);
	assert.deepEqual(Object.keys(r.result).sort(), ['access_token', 'expires_in']);
	assert.equal(r.result.expires_in, 7200);
	const c = await get(e, '/api/spe/customers', {}, r.result.access_token);
	assert.equal(c.code, 0);
});

test('client-credential: wrong secret, unknown app, wrong grant_type, missing field', async () => {
	let r = await oauth('/oauth/credit/token', { app_id: APP.appId, secret: 'nope', grant_type: 'client_credential' });
	assert.equal(r.code, CODES.INVALID_CLIENT);
	assert.match(r.msg, /^secret:/);
	r = await oauth('/oauth/credit/token', { app_id: 'other', secret: APP.secret, grant_type: 'client_credential' });
	assert.equal(r.code, CODES.INVALID_CLIENT);
	assert.match(r.msg, /^app_id:/);
	r = await oauth('/oauth/credit/token', { app_id: APP.appId, secret: APP.secret, grant_type: 'password' });
	assert.equal(r.code, CODES.VALIDATION);
	assert.match(r.msg, /grant_type: must be one of client_credential/);
	r = await oauth('/oauth/credit/token', { app_id: APP.appId, grant_type: 'client_credential' });
	assert.equal(r.code, CODES.VALIDATION);
	assert.match(r.msg, /secret: is required/);
	// urlencoded is the declared type; multipart is refused
	const fd = new FormData();
	fd.append('app_id', APP.appId);
	const res = await fetch(`${e.url}/oauth/credit/token`, { method: 'POST', body: fd });
	assert.equal(((await res.json()) as Envelope).code, CODES.BAD_CONTENT_TYPE);
});

test('authorization code flow: token record fields, code single-use', async () => {
	const t = await userTokens();
	assert.equal(t.expires_in, 7200);
	assert.equal(t.scope, 'install_login');
	assert.equal(typeof t.refresh_token, 'string');
	assert.equal(typeof t.svc_account, 'string');
	assert.equal((await get(e, '/api/spe/customers', {}, t.access_token)).code, 0);
	const again = await oauth('/oauth/access_token', {
		app_id: APP.appId,
		secret: APP.secret,
		code: t.code,
		grant_type: 'authorization_code',
	});
	assert.equal(again.code, CODES.INVALID_GRANT);
	assert.match(again.msg, /code: already used/);
	const bogus = await oauth('/oauth/access_token', {
		app_id: APP.appId,
		secret: APP.secret,
		code: 'nope',
		grant_type: 'authorization_code',
	});
	assert.equal(bogus.code, CODES.INVALID_GRANT);
	const wrongSecret = await oauth('/oauth/access_token', {
		app_id: APP.appId,
		secret: 'x',
		code: 'nope',
		grant_type: 'authorization_code',
	});
	assert.equal(wrongSecret.code, CODES.INVALID_CLIENT);
});

test('connect: redirect_uri must share the registered domain; bad app; missing state', async () => {
	let res = await connect({ app_id: APP.appId, redirect_uri: 'https://evil.example.org/cb', state: 's' });
	assert.equal(res.status, 200);
	let r = (await res.json()) as Envelope;
	assert.equal(r.code, CODES.INVALID_REDIRECT);
	assert.match(r.msg, /redirect_uri:/);
	res = await connect({ app_id: 'x', redirect_uri: 'https://a.example.com/cb', state: 's' });
	assert.equal(((await res.json()) as Envelope).code, CODES.INVALID_CLIENT);
	res = await connect({ app_id: APP.appId, redirect_uri: 'https://a.example.com/cb' });
	r = (await res.json()) as Envelope;
	assert.equal(r.code, CODES.VALIDATION);
	assert.match(r.msg, /state: is required/);
	res = await connect({
		app_id: APP.appId,
		redirect_uri: 'https://a.example.com/cb',
		state: 's',
		response_type: 'token',
	});
	assert.match(((await res.json()) as Envelope).msg, /response_type: must be one of code/);
	res = await connect({ app_id: APP.appId, redirect_uri: 'https://a.example.com/cb', state: 's', customer_id: '999' });
	assert.equal(((await res.json()) as Envelope).code, CODES.NOT_FOUND);
});

test('refresh rotates: new pair works, the old refresh token stops working', async () => {
	const t = await userTokens();
	const r1 = await oauth('/oauth/refresh_token', {
		app_id: APP.appId,
		refresh_token: t.refresh_token,
		grant_type: 'refresh_code',
	});
	assert.equal(r1.code, 0, r1.msg);
	assert.deepEqual(Object.keys(r1.result).sort(), ['access_token', 'expires_in', 'refresh_token', 'scope']);
	assert.notEqual(r1.result.refresh_token, t.refresh_token);
	assert.notEqual(r1.result.access_token, t.access_token);
	const old = await oauth('/oauth/refresh_token', {
		app_id: APP.appId,
		refresh_token: t.refresh_token,
		grant_type: 'refresh_code',
	});
	assert.equal(old.code, CODES.INVALID_GRANT);
	assert.match(old.msg, /refresh_token:/);
	const r2 = await oauth('/oauth/refresh_token', {
		app_id: APP.appId,
		refresh_token: r1.result.refresh_token,
		grant_type: 'refresh_code',
	});
	assert.equal(r2.code, 0);
	const badGrant = await oauth('/oauth/refresh_token', {
		app_id: APP.appId,
		refresh_token: r2.result.refresh_token,
		grant_type: 'refresh_token',
	});
	assert.equal(badGrant.code, CODES.VALIDATION);
});

test('access token: missing, bogus, expired after 7200 s of simulator time', async () => {
	let r = await get(e, '/api/spe/customers', {}, null);
	assert.equal(r.code, CODES.INVALID_TOKEN);
	assert.match(r.msg, /access_token: is required/);
	r = await get(e, '/api/spe/customers', {}, 'bogus');
	assert.equal(r.code, CODES.INVALID_TOKEN);
	const fresh = await oauth('/oauth/credit/token', {
		app_id: APP.appId,
		secret: APP.secret,
		grant_type: 'client_credential',
	});
	const tok = fresh.result.access_token as string;
	await ctl(e, 'POST', '/clock/advance', { seconds: 7199 });
	assert.equal((await get(e, '/api/spe/customers', {}, tok)).code, 0);
	await ctl(e, 'POST', '/clock/advance', { seconds: 1 });
	r = await get(e, '/api/spe/customers', {}, tok);
	assert.equal(r.code, CODES.INVALID_TOKEN);
	assert.match(r.msg, /expired/);
});

test('an access token lives expires_in seconds from its issue to the millisecond (spec: valid until 7200 s elapsed)', async () => {
	// issued 900 ms into a second: a whole-second expiry would end it 900 ms early, at 9.1 s of its 10 s
	const s = await boot({ tokenTtl: 10, startTime: Date.UTC(2025, 0, 15, 12, 0, 0) + 900 });
	try {
		const r = await fetch(`${s.url}/oauth/credit/token`, {
			method: 'POST',
			body: new URLSearchParams({ app_id: APP.appId, secret: APP.secret, grant_type: 'client_credential' }),
		});
		const tok = ((await r.json()) as Envelope).result.access_token as string;
		const use = async (seconds: number) => {
			await ctl(s, 'POST', '/clock/advance', { seconds });
			return (await get(s, '/api/spe/customers', {}, tok)).code;
		};
		assert.equal(await use(9.5), 0, '9.5 s after issue');
		assert.equal(await use(0.499), 0, '9.999 s after issue');
		assert.equal(await use(0.001), CODES.INVALID_TOKEN, '10 s after issue');
	} finally {
		await s.close();
	}
});

test('POST /__sim/tokens/expire expires every access token now', async () => {
	const fresh = await oauth('/oauth/credit/token', {
		app_id: APP.appId,
		secret: APP.secret,
		grant_type: 'client_credential',
	});
	const tok = fresh.result.access_token as string;
	assert.equal((await get(e, '/api/spe/customers', {}, tok)).code, 0);
	const x = await ctl(e, 'POST', '/tokens/expire');
	assert.ok(x.expired >= 1);
	assert.equal((await get(e, '/api/spe/customers', {}, tok)).code, CODES.INVALID_TOKEN);
});

test('the request log masks secrets, tokens, codes and refresh tokens', async () => {
	await ctl(e, 'DELETE', '/requests');
	await userTokens();
	const log = await ctl(e, 'GET', '/requests');
	const text = JSON.stringify(log);
	assert.ok(!text.includes(APP.secret));
	assert.ok(!/at_[0-9a-f]{8}|ut_[0-9a-f]{8}|rt_[0-9a-f]{8}|cd_[0-9a-f]{8}/.test(text), text);
	const tokenCall = log.find((x: { opId: string }) => x.opId === 'authorization.accessToken');
	assert.deepEqual(tokenCall.body, { app_id: APP.appId, secret: '***', code: '***', grant_type: 'authorization_code' });
	assert.equal(tokenCall.code, 0);
	const connectCall = log.find((x: { opId: string }) => x.opId === 'authorization.connect');
	assert.equal(connectCall.status, 302);
	assert.equal(connectCall.query.state, 'st-123');
	// state shows token kinds and expiry, never token values
	const state = await ctl(e, 'GET', '/state');
	assert.ok(!/"(at|ut|rt)_[0-9a-f]{32}"/.test(JSON.stringify(state)));
	assert.ok(state.tokens.some((t: { kind: string }) => t.kind === 'user'));
});

test('tokenKinds option restricts which kind an operation accepts', async () => {
	const e2 = await boot({ tokenKinds: { 'customer.list': ['app'] } });
	try {
		assert.equal((await get(e2, '/api/spe/customers')).code, 0);
		const { access_token } = e2.sim.issueUserTokens(e2.ids.customer_id);
		const r = await get(e2, '/api/spe/customers', {}, access_token);
		assert.equal(r.code, CODES.FORBIDDEN);
	} finally {
		await e2.close();
	}
});
