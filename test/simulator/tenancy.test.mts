// Strict tenancy (simulator/README.md "Tenancy"): a user token reaches only its customer's sites and paths, the app
// token only the portal operations; refused with 40302 otherwise. Lenient (the default) lets every valid token in.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { APP, boot, get, type Env, type Envelope } from './helpers.mts';

const envs: Env[] = [];
after(() => Promise.all(envs.map((e) => e.close())));

async function userToken(e: Env, customer_id: string): Promise<string> {
	const res = await fetch(
		`${e.url}/oauth/connect?${new URLSearchParams({ app_id: APP.appId, redirect_uri: 'https://cb.app.example.com/done', response_type: 'code', scope: 'install_login', state: 's1', customer_id })}`,
		{ redirect: 'manual' },
	);
	const code = new URL(res.headers.get('location') as string).searchParams.get('code') as string;
	const r = (await (
		await fetch(`${e.url}/oauth/access_token`, {
			method: 'POST',
			body: new URLSearchParams({ app_id: APP.appId, secret: APP.secret, code, grant_type: 'authorization_code' }),
		})
	).json()) as Envelope;
	assert.equal(r.code, 0, r.msg);
	return r.result.access_token;
}

/** Two customers and a site of each from the seeded world. */
function twoTenants(e: Env) {
	const sites = [...e.sim.world.sites.values()];
	const a = sites[0];
	const b = sites.find((s) => s.customer_id !== a.customer_id) as typeof a;
	return { a, b };
}

test('strict: a user token reaches its own sites and customer paths only; the app token only the portal', async () => {
	const e = await boot({ tenancy: 'strict' });
	envs.push(e);
	const { a, b } = twoTenants(e);
	const ta = await userToken(e, a.customer_id);
	const own = await get(e, `/api/specp/op/dashboard/site/${a.site_id}/is_under_attack`, {}, ta);
	assert.equal(own.code, 0, own.msg);
	const foreign = await get(e, `/api/specp/op/dashboard/site/${b.site_id}/is_under_attack`, {}, ta);
	assert.equal(foreign.code, CODES.FOREIGN_TENANT);
	assert.match(
		foreign.msg,
		new RegExp(`customer ${a.customer_id} cannot reach site ${b.site_id} \\(customer ${b.customer_id}\\)`),
	);
	const foreignOp = await get(
		e,
		`/api/spe/customer/${b.customer_id}/op/site/${a.site_id}/network/0/host/0/detection/policy`,
		{},
		ta,
	);
	assert.equal(foreignOp.code, CODES.FOREIGN_TENANT);
	assert.equal((await get(e, `/api/spe/customer/${a.customer_id}`, {}, ta)).code, 0, 'own customer detail');
	assert.equal(
		(await get(e, '/api/spe/customers', {}, ta)).code,
		CODES.FOREIGN_TENANT,
		'no customer list with a user token',
	);
	// the app token: portal operations only
	assert.equal((await get(e, '/api/spe/customers', {}, e.token)).code, 0);
	assert.equal((await get(e, `/api/spe/customer/${b.customer_id}`, {}, e.token)).code, 0);
	const appOnSite = await get(e, `/api/specp/op/dashboard/site/${a.site_id}/is_under_attack`, {}, e.token);
	assert.equal(appOnSite.code, CODES.FOREIGN_TENANT);
	assert.match(appOnSite.msg, /app token serves only portal operations/);
});

test('lenient (default): any valid token reaches any site', async () => {
	const e = await boot();
	envs.push(e);
	const { a, b } = twoTenants(e);
	const ta = await userToken(e, a.customer_id);
	assert.equal((await get(e, `/api/specp/op/dashboard/site/${b.site_id}/is_under_attack`, {}, ta)).code, 0);
	assert.equal((await get(e, `/api/specp/op/dashboard/site/${a.site_id}/is_under_attack`, {}, e.token)).code, 0);
});
