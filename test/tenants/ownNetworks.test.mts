/**
 * The customer's own networks, declared once at tenant install (issue 37: site 20001's own network 198.51.100.16/28,
 * hosts .17 and .18, was blocked with success:true — the spec shows no operation that tells a site's networks). A
 * real dev server, the simulator, an in-process worker in tenant mode and the CLI:
 *  - `secsvc tenants add … --protected 198.51.100.16/28` stores them with the tenant (shown by `tenants show`);
 *  - `secsvc call` blocking the network or one of its hosts for the site fails in the worker's guard naming the
 *    range and where it was declared; nothing is written to the service;
 *  - a bad range is refused naming the field, nothing stored; a re-install without --protected keeps them, an empty
 *    --protected clears them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { RunningSimulator } from '../../simulator/index.mts';
import { startWorker, type RunningWorker } from '../../worker/src/process/worker.mts';
import { APP_ID, createEnv, runCli, SECRET, startSim, uniqueQueue, workerConfig } from '../temporal/helpers.mts';

const KEYS = `k1:${randomBytes(32).toString('base64')}`;
let env: TestWorkflowEnvironment;
let sim: RunningSimulator;
let worker: RunningWorker;
const queue = uniqueQueue('own-networks');
const saved = { tenants: process.env.SECSVC_TENANTS, keys: process.env.SECSVC_PAYLOAD_KEYS };

before(async () => {
	env = await createEnv();
	sim = await startSim(7);
	// tenant mode is read from the environment (worker/src/process/tenantWorker.mts)
	process.env.SECSVC_TENANTS = '1';
	process.env.SECSVC_PAYLOAD_KEYS = KEYS;
	worker = await startWorker(
		{
			...workerConfig(env, sim.url, queue),
			guard: { widestPrefix: 16, protectedRanges: [], ownAddressLookup: true },
		},
		{ connection: env.nativeConnection },
	);
});
after(async () => {
	await worker?.shutdown();
	await sim?.close();
	await env?.teardown();
	for (const [k, v] of [
		['SECSVC_TENANTS', saved.tenants],
		['SECSVC_PAYLOAD_KEYS', saved.keys],
	] as const)
		if (v === undefined) delete process.env[k];
		else process.env[k] = v;
});

const cliEnv = () => ({
	SECSVC_BASE_URL: sim.url,
	SECSVC_APP_ID: APP_ID,
	SECSVC_SECRET: SECRET,
	SECSVC_PAYLOAD_KEYS: KEYS,
});
const cli = (...args: string[]) => runCli(env, args, queue, cliEnv());
const writes = () => sim.sim.requests().filter((r) => r.method !== 'GET' && !r.opId?.startsWith('authorization.'));

test('own networks declared at tenant install: blocking them fails in the worker naming the range and the tenant; nothing written', async () => {
	const ids = sim.sim.firstIds();
	const net = sim.sim.world.sites.get(ids.site_id)?.networks[0];
	assert.deepEqual(
		[net?.cidr, ...(net?.hosts.map((h) => h.ip) ?? [])],
		['198.51.100.16/28', '198.51.100.17', '198.51.100.18'],
	);

	const bad = await cli('tenants', 'add', '--customer', ids.customer_id, '--app', '--protected', '198.51.100.300');
	assert.equal(bad.code, 2, bad.err);
	assert.match(bad.err, /protectedRanges\[0\]: must be an IPv4 address, start-end range or CIDR/);

	const add = await cli(
		'tenants',
		...['add', '--customer', ids.customer_id, '--app', '--sites', ids.site_id, '--protected', '198.51.100.16/28'],
	);
	assert.equal(add.code, 0, add.err);
	assert.deepEqual(JSON.parse(add.out).protectedRanges, ['198.51.100.16/28']);

	const before = writes().length;
	for (const entry of ['198.51.100.16/28', '198.51.100.18']) {
		const params = { site_id: ids.site_id, domain_port_id: ids.domain_port_id, ip_black_list: entry };
		const r = await cli('call', 'applicationProtection.ipBlacklist.add', '--params', JSON.stringify(params), '--wait');
		assert.notEqual(r.code, 0, r.out);
		assert.match(
			r.err,
			new RegExp(
				`ip_black_list: ${entry.replace(/[./]/g, '\\$&')} overlaps the protected range 198\\.51\\.100\\.16/28 \\(tenant ${ids.customer_id} --protected\\): never blocked`,
			),
		);
	}
	assert.equal(writes().length, before, 'nothing written to the service');
	// an attacker is still blocked for the site (the tenant's token, the same path)
	const ok = await cli(
		'call',
		'applicationProtection.ipBlacklist.add',
		'--params',
		JSON.stringify({ site_id: ids.site_id, domain_port_id: ids.domain_port_id, ip_black_list: '198.18.0.9' }),
		'--wait',
	);
	assert.equal(ok.code, 0, ok.err);
	assert.equal(writes().length, before + 1);

	const keep = await cli('tenants', 'add', '--customer', ids.customer_id, '--app', '--sites', ids.site_id);
	assert.deepEqual(
		JSON.parse(keep.out).protectedRanges,
		['198.51.100.16/28'],
		'a re-install without --protected keeps them',
	);
	const clear = await cli(
		'tenants',
		'add',
		'--customer',
		ids.customer_id,
		'--app',
		'--sites',
		ids.site_id,
		'--protected',
		'',
	);
	assert.equal(JSON.parse(clear.out).protectedRanges, undefined, 'an empty --protected clears them');
});
