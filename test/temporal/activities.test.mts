/** The generated activities against the simulator (no Temporal server needed): coverage, error mapping, idempotency, secrets. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { catalog } from '../../api/catalog/index.ts';
import { createActivities } from '../../worker/src/activities/operations.mts';
import { APP_ID, SECRET, operatorClient, startSim } from './helpers.mts';

let s: Awaited<ReturnType<typeof startSim>>;
let client: ReturnType<typeof operatorClient>;
let acts: ReturnType<typeof createActivities>;
let ids: { site_id: string; domain_port_id: string; customer_id: string };

before(async () => {
	s = await startSim(31);
	ids = s.sim.firstIds();
	client = operatorClient(s.url);
	acts = createActivities(client, { authInputs: { appId: APP_ID, secret: SECRET } });
});
after(async () => {
	await client.close();
	await s.close();
});

const failure = async (p: Promise<unknown>) => {
	try {
		await p;
	} catch (e) {
		assert.ok(e instanceof ApplicationFailure, `ApplicationFailure expected, got ${e}`);
		return e;
	}
	assert.fail('expected a failure');
};

test('one activity per catalog operation, named by its id', () => {
	assert.equal(catalog.length, 51);
	// plus the plan parser and the input check of directly started playbooks (zod runs in the worker, not in the
	// workflow sandbox), the HTTP-filter create made idempotent, a runbook's blacklist adds in one activity and its
	// write groups in one activity (and the same holding its list entries itself)
	assert.deepEqual(
		Object.keys(acts).sort(),
		[
			...catalog.map((o) => o.id),
			'runbook.parsePlan',
			'input.check',
			'httpFilter.matchingBefore',
			'httpFilter.createOnce',
			'runbook.blacklistAddEach',
			'runbook.writeSteps',
			'runbook.writeStepsHeld',
		].sort(),
	);
});

test('ValidationError → non-retryable, names field and rule, nothing sent', async () => {
	const n = s.sim.requests().length;
	const f = await failure(
		acts['applicationProtection.ipBlacklist.add']({
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
			ip_black_list: '10.0.0.9-10.0.0.1',
		}),
	);
	assert.equal(f.type, 'ValidationError');
	assert.equal(f.nonRetryable, true);
	assert.match(f.message, /ip_black_list: must be/);
	assert.equal(s.sim.requests().length, n, 'no request sent');
});

test('ApiError → non-retryable ApiError; rate limit and internal error → retryable', async () => {
	const dp = { site_id: ids.site_id, domain_port_id: '99999' };
	const nf = await failure(acts['applicationProtection.authIp.get'](dp));
	assert.equal(nf.type, 'ApiError');
	assert.equal(nf.nonRetryable, true);
	s.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'ratelimit', count: 5 });
	const rl = await failure(acts['dashboard.currentTraffic']({ site_id: ids.site_id }));
	assert.equal(rl.type, 'RateLimited');
	assert.equal(rl.nonRetryable, false);
	s.sim.faults = [];
	s.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'code', code: 50001, count: 5 });
	const ie = await failure(acts['dashboard.currentTraffic']({ site_id: ids.site_id }));
	assert.equal(ie.nonRetryable, false);
	s.sim.faults = [];
	s.sim.addFault({ op: 'dashboard.currentTraffic', kind: 'http5xx', count: 5 });
	const tr = await failure(acts['dashboard.currentTraffic']({ site_id: ids.site_id }));
	assert.equal(tr.type, 'TransportError');
	assert.equal(tr.nonRetryable, false);
	s.sim.faults = [];
});

test('IP lists: adding a listed entry and removing an absent one succeed without a write; no duplicates', async () => {
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const posts = () =>
		s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((r) => r.method === 'POST').length;
	const dels = () => s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' }).length;
	assert.deepEqual(await acts['applicationProtection.ipBlacklist.add']({ ...dp, ip_black_list: '192.0.2.7' }), {
		added: '192.0.2.7',
		wrote: ['192.0.2.7'],
		notOurs: [],
	});
	assert.deepEqual(
		await acts['applicationProtection.ipBlacklist.add']({ ...dp, ip_black_list: '192.0.2.7-192.0.2.7' }),
		{ alreadyPresent: true, entry: '192.0.2.7-192.0.2.7', wrote: [], notOurs: ['192.0.2.7-192.0.2.7'] },
	);
	assert.equal(posts(), 1);
	const list = (await client.call('applicationProtection.ipBlacklist.get', dp)) as {
		p_info: { ipv4: { black_soc: unknown[] } };
	};
	assert.equal(list.p_info.ipv4.black_soc.length, 1);
	await acts['applicationProtection.ipBlacklist.remove']({ ...dp, ip_black_list: ['192.0.2.7'] });
	assert.equal(dels(), 1);
	assert.deepEqual(await acts['applicationProtection.ipBlacklist.remove']({ ...dp, ip_black_list: ['192.0.2.7'] }), {
		removed: [],
		absent: ['192.0.2.7'],
	});
	assert.equal(dels(), 1, 'absent entry: no DELETE');
});

test('a setting write answers what it replaced (read at write time), or "already at target" with nothing sent', async () => {
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const op = { customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0' };
	const sets = () =>
		s.sim.requests().filter((r) => r.method !== 'GET' && /switch\.set|setMode|setPolicy/.test(r.opId ?? '')).length;
	const n = sets();
	const model = Number((await client.call('detection.getPolicy', op)).model);
	const other = model === 1 ? 0 : 1;
	assert.deepEqual(await acts['detection.setMode']({ ...op, model: String(other) }), { wrote: other, replaced: model });
	assert.deepEqual(await acts['detection.setMode']({ ...op, model: String(other) }), { notOurs: other });
	await acts['detection.setMode']({ ...op, model: String(model) });
	const sw = await acts['applicationProtection.switch.set']({ ...dp, name: 'p_auth', enable: 1 });
	assert.deepEqual(await acts['applicationProtection.switch.set']({ ...dp, name: 'p_auth', enable: 1 }), {
		notOurs: 1,
	});
	const leaf = (await client.call('detection.getPolicy', op)).tcp.tcp_syn as Record<string, unknown>;
	const p = await acts['detection.setPolicy']({
		...op,
		name: 'tcp_syn',
		type: 'tcp',
		is_enabled: 1,
		low_pps: '7K',
		high_pps: '9K',
	});
	assert.equal((p as { replaced: { low_pps: string } }).replaced.low_pps, leaf.low_pps);
	assert.deepEqual(
		await acts['detection.setPolicy']({
			...op,
			name: 'tcp_syn',
			type: 'tcp',
			is_enabled: 1,
			low_pps: '7K',
			high_pps: '9K',
		}),
		{ notOurs: { is_enabled: '1', low_pps: '7K', high_pps: '9K' } },
	);
	assert.equal(sets(), n + 3 + ((sw as { wrote?: number }).wrote === 1 ? 1 : 0), 'nothing sent when already at target');
});

test('authorization activities refuse secrets as input, take them from the config, redact tokens', async () => {
	const f = await failure(acts['authorization.appToken']({ app_id: APP_ID, secret: SECRET }));
	assert.equal(f.type, 'ValidationError');
	assert.ok(!f.message.includes(SECRET));
	assert.ok(!JSON.stringify(f.details).includes(SECRET));
	const r = (await acts['authorization.appToken']({})) as { access_token: string; expires_in: number };
	assert.equal(r.access_token, '***');
	assert.equal(r.expires_in, 7200);
});

test('HTTP filter create/update are serialized per domain-port (the simulator rejects concurrent edits)', async () => {
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const mk = (i: number) =>
		acts['applicationProtection.httpFilter.create']({
			...dp,
			action: 'BLOCK_HTTP',
			host: 'www.example.com',
			uri: `/p${i}`,
			p_name: `p${i}`,
		});
	const results = await Promise.all([1, 2, 3, 4].map(mk));
	assert.equal(new Set(results.map((r) => (r as { p_flag_id: string }).p_flag_id)).size, 4);
	assert.ok(
		s.sim.requests({ op: 'applicationProtection.httpFilter.create' }).every((r) => r.code === 0),
		'no busy answers',
	);
});
