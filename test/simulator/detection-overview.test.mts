import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { boot, get, isInvalid, post, type Env } from './helpers.mts';

let e: Env;
before(async () => {
	e = await boot();
});
after(() => e.close());

const GROUPS: Record<string, string[]> = {
	tcp: ['tcp_ack', 'tcp_fragmentation', 'tcp_invalid', 'tcp_rst', 'tcp_syn'],
	udp: [
		'chargen_amplification',
		'cldap_reflection',
		'dns_amplification',
		'dns_flood',
		'l2tp_amplification',
		'mdns_amplification',
		'memcached_amplification',
		'ms_sql_rs_amplification',
		'ntp_amplification',
		'ripv1_amplification',
		'rpcbind_amplification',
		'snmp_amplification',
		'ssdp_amplification',
		'udp_fragmentation',
		'udp_total',
	],
	icmp: ['icmp_fragmentation', 'icmp_invalid', 'icmp_total'],
	ip: ['ip_bogons', 'ip_fragmentation', 'ip_land'],
	sip: ['sip_flood'],
	http: ['http_flood', 'https_flood'],
	total_traffic: ['total_traffic'],
};

const lvl = (net: string, host: string) =>
	`/api/spe/customer/${e.ids.customer_id}/op/site/${e.ids.site_id}/network/${net}/host/${host}`;

test('GET detection/policy: model plus every group and item of §4.5 with defaults', async () => {
	const r = await get(e, `${e.op}/detection/policy`);
	assert.equal(r.code, 0);
	assert.equal(r.result.model, 0);
	assert.deepEqual(
		Object.keys(r.result)
			.filter((k) => k !== 'model')
			.sort(),
		Object.keys(GROUPS).sort(),
	);
	for (const [g, items] of Object.entries(GROUPS)) {
		assert.deepEqual(Object.keys(r.result[g]).sort(), [...items].sort(), g);
		for (const it of items) {
			const leaf = r.result[g][it];
			for (const k of ['direction_pps', 'high_pps', 'low_pps']) assert.equal(typeof leaf[k], 'string');
			assert.ok([0, 1].includes(leaf.is_enabled));
		}
	}
	const tt = r.result.total_traffic.total_traffic;
	for (const k of ['blackhole_bps', 'blackhole_pps', 'direction_bps', 'high_bps', 'low_bps'])
		assert.equal(typeof tt[k], 'string', k);
	assert.equal(typeof tt.blackhole_time, 'number');
});

test('detection mode and policy round trip, per level', async () => {
	assert.equal((await post(e, `${e.op}/detection/mode`, { model: '1' })).code, 0);
	assert.equal(
		(
			await post(e, `${e.op}/detection/policy`, {
				name: 'tcp_syn',
				type: 'tcp',
				is_enabled: '0',
				high_pps: '2M',
				low_pps: '500K',
			})
		).code,
		0,
	);
	const tt = {
		name: 'total_traffic',
		type: 'total_traffic',
		is_enabled: '1',
		high_pps: '3M',
		low_pps: '1M',
		high_bps: '10G',
		low_bps: '2G',
		blackhole_bps: '80G',
		blackhole_pps: '40M',
		blackhole_time: 600,
	};
	assert.equal((await post(e, `${e.op}/detection/policy`, tt)).code, 0);
	assert.equal(
		(
			await post(e, `${e.op}/detection/policy`, {
				name: 'icmp_total',
				type: 'icmp',
				is_enabled: '1',
				high_pps: '20K',
				low_pps: '1.5K',
			})
		).code,
		0,
	);
	const g = (await get(e, `${e.op}/detection/policy`)).result;
	assert.equal(g.model, 1);
	assert.deepEqual(
		{ ...g.tcp.tcp_syn, direction_pps: undefined },
		{ direction_pps: undefined, is_enabled: 0, high_pps: '2M', low_pps: '500K' },
	);
	const t = g.total_traffic.total_traffic;
	assert.deepEqual(
		[t.high_pps, t.low_pps, t.high_bps, t.low_bps, t.blackhole_bps, t.blackhole_pps, t.blackhole_time, t.is_enabled],
		['3M', '1M', '10G', '2G', '80G', '40M', 600, 1],
	);
	assert.equal(g.icmp.icmp_total.low_pps, '1.5K');
	// the network level is separate from the site level
	const net = (await get(e, `${lvl(e.ids.network_id, '0')}/detection/policy`)).result;
	assert.equal(net.model, 0);
	assert.notEqual(net.tcp.tcp_syn.high_pps, '2M');
	const host = await get(e, `${lvl(e.ids.network_id, e.ids.host_id)}/detection/policy`);
	assert.equal(host.code, 0);
});

test('detection rules: model, names, type/group, threshold notation, total_traffic conditionals', async () => {
	const p = `${e.op}/detection/policy`;
	const base = { name: 'udp_total', type: 'udp', is_enabled: '1', high_pps: '100K', low_pps: '10K' };
	assert.ok(isInvalid(await post(e, `${e.op}/detection/mode`, { model: '2' }), 'model'));
	assert.ok(isInvalid(await post(e, `${e.op}/detection/mode`, {}), 'model'));
	assert.ok(isInvalid(await post(e, p, { ...base, name: 'udp_everything' }), 'name'));
	assert.ok(isInvalid(await post(e, p, { ...base, type: 'tcp' }), 'type'));
	assert.ok(isInvalid(await post(e, p, { ...base, type: 'dns' }), 'type'));
	assert.ok(isInvalid(await post(e, p, { ...base, is_enabled: '2' }), 'is_enabled'));
	for (const bad of ['10k', '1.5T', 'K', '-5', '1 M'])
		assert.ok(isInvalid(await post(e, p, { ...base, high_pps: bad }), 'high_pps'), bad);
	for (const good of ['0', '10', '1.5K', '20M', '1G'])
		assert.equal((await post(e, p, { ...base, high_pps: good, low_pps: '0' })).code, 0, good);
	assert.ok(isInvalid(await post(e, p, { ...base, low_pps: '200K' }), 'low_pps'));
	const missing = await post(e, p, {
		name: 'total_traffic',
		type: 'total_traffic',
		is_enabled: '1',
		high_pps: '1M',
		low_pps: '1K',
	});
	for (const f of ['high_bps', 'low_bps', 'blackhole_bps', 'blackhole_pps', 'blackhole_time'])
		assert.ok(isInvalid(missing, f), f);
	assert.ok(isInvalid(await post(e, p, { ...base, blackhole_time: 5 }), 'blackhole_time'));
	assert.ok(isInvalid(await post(e, p, { ...base, high_pps: undefined }), 'high_pps'));
});

test('level resolution: unknown customer/site/network/host, host without network', async () => {
	assert.equal(
		(await get(e, `/api/spe/customer/1/op/site/${e.ids.site_id}/network/0/host/0/policy/switch`)).code,
		CODES.NOT_FOUND,
	);
	assert.equal(
		(await get(e, `/api/spe/customer/${e.ids.customer_id}/op/site/1/network/0/host/0/policy/switch`)).code,
		CODES.NOT_FOUND,
	);
	assert.equal((await get(e, `${lvl('1', '0')}/policy/switch`)).code, CODES.NOT_FOUND);
	assert.equal((await get(e, `${lvl(e.ids.network_id, '1')}/policy/switch`)).code, CODES.NOT_FOUND);
	assert.ok(isInvalid(await get(e, `${lvl('0', e.ids.host_id)}/policy/switch`), 'host_id'));
});

test('overview switches (§4.6): detection at site level, custom/mitigation at network and host level, profile', async () => {
	let s = (await get(e, `${e.op}/policy/switch`)).result;
	assert.deepEqual(Object.keys(s).sort(), ['auto_profile', 'detection_mode', 'is_customize', 'mitigation_mode']);
	assert.notEqual(s.detection_mode, 0);
	assert.equal((await post(e, `${e.op}/policy/switch`, { is_enable: 0, switch_type: 'detection' })).code, 0);
	assert.equal((await get(e, `${e.op}/policy/switch`)).result.detection_mode, 0);
	assert.equal((await post(e, `${e.op}/policy/switch`, { is_enable: 1, switch_type: 'detection' })).code, 0);
	assert.equal((await post(e, `${e.op}/policy/profile`, { profile_id: 'auto-web' })).code, 0);
	s = (await get(e, `${e.op}/policy/switch`)).result;
	assert.equal(s.auto_profile, 'auto-web');
	assert.equal(s.detection_mode, 2);
	assert.ok(
		isInvalid(await post(e, `${e.op}/policy/switch`, { is_enable: 1, switch_type: 'mitigation' }), 'switch_type'),
	);
	const net = lvl(e.ids.network_id, '0');
	assert.ok(
		isInvalid(await post(e, `${net}/policy/switch`, { is_enable: 1, switch_type: 'detection' }), 'switch_type'),
	);
	assert.equal((await post(e, `${net}/policy/switch`, { is_enable: 1, switch_type: 'mitigation' })).code, 0);
	assert.equal((await post(e, `${net}/policy/switch`, { is_enable: 1, switch_type: 'custom' })).code, 0);
	const n = (await get(e, `${net}/policy/switch`)).result;
	assert.equal(n.mitigation_mode, 1);
	assert.equal(n.is_customize, 1);
	const host = lvl(e.ids.network_id, e.ids.host_id);
	assert.equal((await post(e, `${host}/policy/switch`, { is_enable: 0, switch_type: 'mitigation' })).code, 0);
	assert.equal((await get(e, `${host}/policy/switch`)).result.mitigation_mode, 0);
	assert.ok(isInvalid(await post(e, `${host}/policy/switch`, { is_enable: 2, switch_type: 'custom' }), 'is_enable'));
	assert.ok(isInvalid(await post(e, `${host}/policy/switch`, { is_enable: 1 }), 'switch_type'));
	assert.ok(isInvalid(await post(e, `${e.op}/policy/profile`, {}), 'profile_id'));
	assert.equal((await post(e, `${e.op}/policy/profile`, { profile_id: 'nope' })).code, CODES.NOT_FOUND);
});

test('customers: detail fields, list pages of 10 with the page parameter', async () => {
	const d = await get(e, `/api/spe/customer/${e.ids.customer_id}`);
	assert.equal(d.code, 0);
	assert.deepEqual(Object.keys(d.result).sort(), [
		'address',
		'company',
		'customer_name',
		'email',
		'phone',
		'protect_services',
		'website',
	]);
	assert.deepEqual(Object.keys(d.result.protect_services).sort(), [
		'application_protection',
		'cdn_federation',
		'dns_protection',
		'origin_protection',
	]);
	assert.equal(d.result.protect_services.application_protection, 1);
	assert.equal((await get(e, '/api/spe/customer/999')).code, CODES.NOT_FOUND);
	const p1 = (await get(e, '/api/spe/customers')).result;
	assert.equal(p1.page, 1);
	assert.equal(p1.pages, 3);
	assert.equal(p1.customer.length, 10);
	assert.deepEqual(Object.keys(p1.customer[0]).sort(), ['customer_id', 'customer_name', 'protect_services']);
	const p3 = (await get(e, '/api/spe/customers', { page: 3 })).result;
	assert.equal(p3.customer.length, 3);
	const seen = new Set<string>();
	for (let p = 1; p <= 3; p++)
		for (const c of (await get(e, '/api/spe/customers', { page: p })).result.customer) seen.add(c.customer_id);
	assert.equal(seen.size, 23);
	assert.deepEqual((await get(e, '/api/spe/customers', { page: 4 })).result.customer, []);
	assert.ok(isInvalid(await get(e, '/api/spe/customers', { page: 0 }), 'page'));
	assert.ok(isInvalid(await get(e, '/api/spe/customers', { page: 'x' }), 'page'));
	assert.ok(isInvalid(await get(e, '/api/spe/customers', { size: 5 }), 'size'));
});
