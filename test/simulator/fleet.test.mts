import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startSimulator } from '../../simulator/index.mts';
import { boot, ctl, get, type Env } from './helpers.mts';

/** The fleet option (simulator/fleet.mts): N customers × sites on top of the seeded world, attacks on chosen sites. */

let e: Env;
let plain: Env;
before(async () => {
	e = await boot({ fleet: { customers: 120, sitesPerCustomer: 10, domainPortsPerSite: 2 } });
	plain = await boot();
});
after(async () => {
	await e.close();
	await plain.close();
});

test('fleet: 1,200 sites with their own ids; the seeded world is unchanged', async () => {
	const f = await ctl(e, 'GET', '/fleet');
	assert.equal(f.sites.length, 1200);
	assert.deepEqual(f.sites[0], { customer_id: '110001', site_id: '210001', domain_port_ids: ['310001', '310002'] });
	assert.deepEqual(f.sites[1199], { customer_id: '110120', site_id: '211200', domain_port_ids: ['312399', '312400'] });
	const a = await ctl(e, 'GET', '/state');
	const b = await ctl(plain, 'GET', '/state');
	assert.deepEqual(
		a.sites.filter((s: { site_id: string }) => Number(s.site_id) < 210001),
		b.sites,
	);
	assert.equal(a.customers.length, b.customers.length + 120);
	// A fleet customer answers like any other.
	const c = await get(e, '/api/spe/customer/110002');
	assert.equal(c.code, 0, c.msg);
	assert.equal(c.result.customer_name, 'Fleet Customer 2');
});

test('fleet: an attack on a chosen fleet site; the others stay quiet', async () => {
	assert.equal((await get(e, '/api/specp/op/dashboard/site/210777/is_under_attack')).result.status, 0);
	await ctl(e, 'POST', '/attacks', { site_id: '210777', duration: 0 });
	assert.equal((await get(e, '/api/specp/op/dashboard/site/210777/is_under_attack')).result.status, 1);
	assert.equal((await get(e, '/api/specp/op/dashboard/site/210778/is_under_attack')).result.status, 0);
	const dp = await get(e, '/api/specp/policy/appshield/site/210777/domain-port/311553/ip-black-list');
	assert.equal(dp.code, 0, dp.msg);
});

test('fleet: bad specs are refused naming the field; the scenario file loads', async () => {
	await assert.rejects(
		startSimulator({ appId: 'a', secret: 's', fleet: { customers: 0, sitesPerCustomer: 10 } }),
		/fleet\.customers: must be an integer from 1/,
	);
	await assert.rejects(
		startSimulator({ appId: 'a', secret: 's', fleet: { customers: 1000, sitesPerCustomer: 100 } }),
		/customers × sitesPerCustomer must be at most 90000/,
	);
	const scenario = JSON.parse(
		readFileSync(new URL('../../simulator/scenarios/fleet-1000.json', import.meta.url), 'utf8'),
	);
	const s = await startSimulator({ appId: 'a', secret: 's', clock: 'manual', scenario });
	try {
		assert.equal(s.sim.world.sites.has('211000'), true);
		const attacked = s.sim
			.snapshot()
			.attacks.filter((x: { status: string; site_id: string }) => Number(x.site_id) >= 210001);
		assert.equal(attacked.length, 10);
		assert.ok(attacked.every((x: { status: string }) => x.status === 'scheduled'));
	} finally {
		await s.close();
	}
});
