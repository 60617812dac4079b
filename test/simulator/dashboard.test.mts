import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { CODES } from '../../simulator/codes.mts';
import { formatYmdhms } from '../../simulator/util.mts';
import { boot, call, ctl, get, isInvalid, post, type Env } from './helpers.mts';

let e: Env;
beforeEach(async () => {
	e = await boot({ startTime: Date.UTC(2025, 2, 10, 12, 0, 0) });
});
afterEach(() => e.close());

const attack = (extra: Record<string, unknown> = {}) =>
	ctl(e, 'POST', '/attacks', {
		site_id: e.ids.site_id,
		attack_type: 'UDP Total',
		duration: 3600,
		curve: { shape: 'constant', peakBps: 8_000_000_000, peakPps: 1_000_000 },
		sources: [
			{ ip: '198.18.0.10', weight: 3 },
			{ ip: '198.18.0.11', weight: 1 },
			{ cidr: '198.19.5.0/24', weight: 4 },
		],
		...extra,
	});

test('is_under_attack, current_traffic and events follow the scenario and the clock', async () => {
	const before = (await get(e, `${e.siteDash}/is_under_attack`)).result;
	assert.equal(before.status, 0);
	const a = await attack({ at: 60 });
	assert.equal(a.status, 'scheduled');
	assert.equal((await get(e, `${e.siteDash}/is_under_attack`)).result.status, 0);
	const ev0 = (await get(e, `${e.siteDash}/ddos_events`, { status: 'ongoing' })).result;
	assert.equal(ev0.total, 0);
	await ctl(e, 'POST', '/clock/advance', { seconds: 61 });
	const u = (await get(e, `${e.siteDash}/is_under_attack`)).result;
	assert.deepEqual(u, { status: 1, bps_size: 8_000_000_000 });
	const t = (await get(e, `${e.siteDash}/current_traffic`)).result;
	assert.ok(t.bps_size > 8_000_000_000 && t.bps_size < 9_000_000_000, String(t.bps_size));
	const ev = (await get(e, `${e.siteDash}/ddos_events`, { status: 'ongoing' })).result;
	assert.equal(ev.total, 1);
	const x = ev.events[0];
	assert.equal(x.alert_id, a.id);
	assert.equal(x.status, 1);
	assert.equal(x.end_time, 0);
	assert.equal(x.max_bps, 8_000_000_000);
	assert.equal(x.max_pps, 1_000_000);
	assert.equal(String(x.start_time).length, 10);
	assert.equal(x.attack_type, 'UDP Total');
	for (const k of ['duration', 'profile_desc', 'profile_name', 'severity', 'site_ip', 'site_name'])
		assert.ok(k in x, k);
	// after the duration the attack is stopped and is_under_attack reports the maximum size
	await ctl(e, 'POST', '/clock/advance', { seconds: 3600 });
	assert.deepEqual((await get(e, `${e.siteDash}/is_under_attack`)).result, { status: 0, bps_size: 8_000_000_000 });
	const stopped = (await get(e, `${e.siteDash}/ddos_events`, { alert_id: a.id })).result.events[0];
	assert.equal(stopped.status, 0);
	assert.equal(stopped.duration, 3600);
	assert.equal(stopped.end_time - stopped.start_time, 3600);
});

test('stopping an attack through the control API (DELETE and POST .../stop)', async () => {
	const a = await attack({ duration: 0 });
	assert.equal((await get(e, `${e.siteDash}/is_under_attack`)).result.status, 1);
	await ctl(e, 'POST', `/attacks/${a.id}/stop`);
	assert.equal((await get(e, `${e.siteDash}/is_under_attack`)).result.status, 0);
	const b = await attack({ duration: 0 });
	await ctl(e, 'DELETE', `/attacks/${b.id}`);
	assert.equal((await get(e, `${e.siteDash}/is_under_attack`)).result.status, 0);
	assert.equal((await get(e, `${e.siteDash}/active_mitigation`)).result.length, 0);
});

test('blacklisting sources from the threat map reduces the reported attack traffic', async () => {
	const a = await attack();
	const tm = (await get(e, `/api/specp/op/dashboard/ddos_event/${a.id}/detail`, { module: 'threat_map' })).result
		.threat_map;
	assert.ok(Array.isArray(tm.bps) && Array.isArray(tm.pps));
	const ips = tm.bps.map((r: { ip: string }) => r.ip);
	assert.ok(ips.includes('198.18.0.10') && ips.includes('198.18.0.11'));
	assert.ok(ips.filter((ip: string) => ip.startsWith('198.19.5.')).length >= 1);
	for (const r of tm.bps) {
		for (const k of ['code', 'country', 'ip', 'org', 'size']) assert.equal(typeof r[k], 'string', k);
		for (const k of ['latitude', 'longitude', 'percent']) assert.equal(typeof r[k], 'number', k);
	}
	const top = tm.bps[0];
	assert.equal(top.ip, '198.18.0.10');
	assert.equal(top.size, String((8_000_000_000 * 3) / 8));
	assert.equal((await get(e, `${e.siteDash}/active_mitigation`)).result.length, 0);
	assert.equal((await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '198.18.0.10' })).code, 0);
	let u = (await get(e, `${e.siteDash}/is_under_attack`)).result;
	assert.deepEqual(u, { status: 1, bps_size: 5_000_000_000 });
	assert.equal((await post(e, `${e.ap}/ip-black-list`, { ip_black_list: '198.19.5.0-198.19.5.255' })).code, 0);
	u = (await get(e, `${e.siteDash}/is_under_attack`)).result;
	assert.deepEqual(u, { status: 1, bps_size: 1_000_000_000 });
	const am = (await get(e, `${e.siteDash}/active_mitigation`)).result;
	assert.equal(am.length, 1);
	assert.equal(am[0].bps.bot, 7_000_000_000);
	assert.equal(typeof am[0].cidr, 'string');
	assert.equal(typeof am[0].name, 'string');
	// a whitelisted source is never blocked
	assert.equal((await post(e, `${e.ap}/ip-white-list`, { ip_white_list: '198.18.0.10-198.18.0.10' })).code, 0);
	assert.equal((await get(e, `${e.siteDash}/is_under_attack`)).result.bps_size, 4_000_000_000);
});

test('rapid detection mode and IP-auth rate limiting reduce the remaining traffic; auto-mitigation engages after the detection delay', async () => {
	await attack();
	const size = async () => (await get(e, `${e.siteDash}/is_under_attack`)).result.bps_size as number;
	assert.equal(await size(), 8_000_000_000);
	assert.equal((await post(e, `${e.op}/detection/mode`, { model: '1' })).code, 0);
	assert.equal(await size(), 4_000_000_000);
	const r = await call(e, 'POST', `${e.ap}/authentication/ip`, {
		json: {
			action: 'ratelimit',
			enable: 1,
			mode: 2,
			action_ratelimit: { duration: 60, ratelimit_rps: 10, threshold_rps: 20 },
		},
	});
	assert.equal(r.code, 0);
	assert.equal(await size(), 2_000_000_000);
	// monitor mode does not reduce
	await call(e, 'POST', `${e.ap}/authentication/ip`, { json: { action: 'ratelimit', enable: 1, mode: 1 } });
	assert.equal(await size(), 4_000_000_000);
	// provider auto-mitigation
	const b = await ctl(e, 'POST', '/attacks', {
		site_id: e.ids.site_id,
		autoMitigate: true,
		duration: 600,
		curve: { peakBps: 1_000_000_000, peakPps: 1000 },
		sources: [{ ip: '1.1.1.1' }],
	});
	assert.equal(await size(), 4_000_000_000 + 500_000_000);
	await ctl(e, 'POST', '/clock/advance', { seconds: 11 });
	assert.equal(await size(), 4_000_000_000 + 100_000_000);
	const am = (await get(e, `${e.siteDash}/active_mitigation`)).result;
	assert.equal(am.length, 2);
	assert.ok(b.id);
});

test('ramp and points curves', async () => {
	await attack({ curve: { shape: 'ramp', peakBps: 1_000_000_000, peakPps: 1000, rampSeconds: 100 } });
	const size = async () => (await get(e, `${e.siteDash}/is_under_attack`)).result.bps_size as number;
	assert.equal(await size(), 0);
	await ctl(e, 'POST', '/clock/advance', { seconds: 50 });
	assert.equal(await size(), 500_000_000);
	await ctl(e, 'POST', '/clock/advance', { seconds: 100 });
	assert.equal(await size(), 1_000_000_000);
	await ctl(e, 'POST', '/reset', {});
	await ctl(e, 'POST', '/attacks', {
		site_id: e.ids.site_id,
		curve: {
			shape: 'points',
			points: [
				[0, 100, 1],
				[10, 300, 3],
				[20, 200, 2],
			],
		},
	});
	const tok = await fetch(`${e.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: 'test-app', secret: 'test-secret-value', grant_type: 'client_credential' }),
	});
	e.token = ((await tok.json()) as { result: { access_token: string } }).result.access_token;
	await ctl(e, 'POST', '/clock/advance', { seconds: 15 });
	assert.equal(await size(), 250);
	await ctl(e, 'POST', '/clock/advance', { seconds: 100 });
	assert.equal(await size(), 200);
	const ev = (await get(e, `${e.siteDash}/ddos_events`, { status: 'ongoing' })).result.events[0];
	assert.equal(ev.max_bps, 300);
});

test('ddos_events: paging start/num, filters, window defaults and the 31-day limit', async () => {
	for (let i = 0; i < 12; i++) {
		await attack({ duration: 60 });
		await ctl(e, 'POST', '/clock/advance', { seconds: 120 });
	}
	const all = (await get(e, `${e.siteDash}/ddos_events`)).result;
	assert.ok(all.total >= 12, String(all.total));
	assert.equal(all.events.length, 10);
	const page2 = (await get(e, `${e.siteDash}/ddos_events`, { start: '10', num: '5' })).result;
	assert.equal(page2.total, all.total);
	assert.equal(page2.events.length, Math.min(5, all.total - 10));
	const ids = new Set([...all.events, ...page2.events].map((x: { alert_id: string }) => x.alert_id));
	assert.equal(ids.size, all.events.length + page2.events.length);
	for (let i = 1; i < all.events.length; i++) assert.ok(all.events[i - 1].start_time >= all.events[i].start_time);
	const one = all.events[3];
	const byId = (await get(e, `${e.siteDash}/ddos_events`, { alert_id: one.alert_id })).result;
	assert.deepEqual(byId, { events: [one], total: 1 });
	assert.equal((await get(e, `${e.siteDash}/ddos_events`, { site_name: 'nope' })).result.total, 0);
	assert.equal((await get(e, `${e.siteDash}/ddos_events`, { site_ip: one.site_ip })).result.total, all.total);
	assert.equal((await get(e, `${e.siteDash}/ddos_events`, { status: 'ongoing' })).result.total, 0);
	assert.equal((await get(e, `${e.siteDash}/ddos_events`, { status: 'stopped' })).result.total, all.total);
	// default window: the first day of the current month plus 31 days; an explicit earlier window finds nothing of ours
	const early = (
		await get(e, `${e.siteDash}/ddos_events`, { start_time: '2025-01-01 00:00:00', end_time: '2025-01-31 00:00:00' })
	).result;
	assert.ok(early.events.every((x: { alert_id: string }) => !ids.has(x.alert_id)));
	const now = e.sim.nowSec();
	const win = (
		await get(e, `${e.siteDash}/ddos_events`, {
			start_time: formatYmdhms(now - 31 * 86400),
			end_time: formatYmdhms(now),
		})
	).result;
	assert.equal(win.total, all.total);
	assert.ok(
		isInvalid(
			await get(e, `${e.siteDash}/ddos_events`, {
				start_time: formatYmdhms(now - 31 * 86400 - 1),
				end_time: formatYmdhms(now),
			}),
			'end_time',
		),
	);
	assert.ok(isInvalid(await get(e, `${e.siteDash}/ddos_events`, { start_time: '2025-03-10T00:00:00' }), 'start_time'));
	assert.ok(isInvalid(await get(e, `${e.siteDash}/ddos_events`, { start_time: '2025-02-30 00:00:00' }), 'start_time'));
	assert.ok(
		isInvalid(
			await get(e, `${e.siteDash}/ddos_events`, { start_time: '2025-03-10 00:00:00', end_time: '2025-03-09 00:00:00' }),
			'end_time',
		),
	);
	assert.ok(isInvalid(await get(e, `${e.siteDash}/ddos_events`, { status: 'running' }), 'status'));
	assert.ok(isInvalid(await get(e, `${e.siteDash}/ddos_events`, { start: '-1' }), 'start'));
	assert.ok(isInvalid(await get(e, `${e.siteDash}/ddos_events`, { num: 'ten' }), 'num'));
	assert.equal((await get(e, `/api/specp/op/dashboard/site/1/ddos_events`)).code, CODES.NOT_FOUND);
});

test('event detail: all four modules; unknown event; module rule', async () => {
	const a = await attack({ attack_type: 'DNS Amplification' });
	await ctl(e, 'POST', '/clock/advance', { seconds: 600 });
	const d = async (m: string) => {
		const r = await get(e, `/api/specp/op/dashboard/ddos_event/${a.id}/detail`, { module: m });
		if (r.code === 0) assert.deepEqual(Object.keys(r.result), [m], 'result holds the module under its name');
		return r.code === 0 ? { ...r, result: r.result[m] } : r;
	};
	const traffic = (await d('traffic')).result;
	assert.ok(traffic.bps && traffic.pps);
	for (const series of Object.values(traffic.bps) as number[][][]) {
		assert.ok(series.length >= 10);
		for (const pt of series) assert.ok(pt.every((n) => Number.isInteger(n)));
	}
	assert.equal((traffic.bps.attack as number[][])[1][1], 8_000_000_000);
	const ch = (await d('characterization')).result;
	assert.ok(ch.length > 0);
	for (const c of ch) {
		for (const k of ['country', 'element', 'item', 'value']) assert.equal(typeof c[k], 'string');
		assert.equal(typeof c.percent, 'number');
	}
	const tp = (await d('traffic_patterns')).result;
	assert.ok(tp.length >= 2);
	for (const p of tp) {
		assert.equal(typeof p.asn, 'number');
		for (const k of ['cidr', 'dest_port', 'protocol', 'router', 'src_port']) assert.equal(typeof p[k], 'string');
		assert.ok(
			Number.isInteger(p.average.bps) &&
				Number.isInteger(p.max.pps) &&
				Number.isInteger(p.total.byte) &&
				Number.isInteger(p.total.packet),
		);
	}
	assert.equal(tp.find((p: { cidr: string }) => p.cidr === '198.18.0.0/24').max.bps, 4_000_000_000);
	assert.equal((await d('threat_map')).result.pps.length, (await d('threat_map')).result.bps.length);
	assert.ok(isInvalid(await d('graph'), 'module'));
	assert.ok(isInvalid(await get(e, `/api/specp/op/dashboard/ddos_event/${a.id}/detail`), 'module'));
	assert.equal(
		(await get(e, `/api/specp/op/dashboard/ddos_event/nope/detail`, { module: 'traffic' })).code,
		CODES.NOT_FOUND,
	);
});

test('flow_down_events: 10-digit timestamps, 90-day limit, status 0/1/2', async () => {
	await ctl(e, 'POST', '/flow-down', { site_id: e.ids.site_id, duration: 0, router_name: 'edge-x' });
	await ctl(e, 'POST', '/flow-down', { site_id: e.ids.site_id, at: -600, duration: 300, router_name: 'edge-y' });
	const all = (await get(e, `${e.siteDash}/flow_down_events`)).result;
	assert.ok(Array.isArray(all));
	const x = all.find((f: { router_name: string }) => f.router_name === 'edge-x');
	const y = all.find((f: { router_name: string }) => f.router_name === 'edge-y');
	assert.equal(x.end_time, 0);
	assert.equal(y.end_time - y.start_time, 300);
	assert.equal(y.duration, 300);
	for (const k of ['alert_id', 'duration', 'start_time', 'end_time', 'router_name', 'site']) assert.ok(k in y, k);
	const ongoing = (await get(e, `${e.siteDash}/flow_down_events`, { status: 0 })).result;
	assert.deepEqual(
		ongoing.map((f: { router_name: string }) => f.router_name),
		['edge-x'],
	);
	const stopped = (await get(e, `${e.siteDash}/flow_down_events`, { status: 1 })).result;
	assert.ok(
		stopped.every((f: { end_time: number }) => f.end_time > 0) &&
			stopped.some((f: { router_name: string }) => f.router_name === 'edge-y'),
	);
	const now = e.sim.nowSec();
	const narrow = (await get(e, `${e.siteDash}/flow_down_events`, { start_time: now - 60, end_time: now })).result;
	assert.deepEqual(
		narrow.map((f: { router_name: string }) => f.router_name),
		['edge-x'],
	);
	assert.ok(
		isInvalid(
			await get(e, `${e.siteDash}/flow_down_events`, { start_time: now - 90 * 86400 - 1, end_time: now }),
			'start_time',
		),
	);
	assert.ok(
		isInvalid(await get(e, `${e.siteDash}/flow_down_events`, { start_time: String(now * 1000) }), 'start_time'),
	);
	assert.ok(isInvalid(await get(e, `${e.siteDash}/flow_down_events`, { status: 3 }), 'status'));
});

test('network_summary aggregates the attacks of the range, bps or pps', async () => {
	await attack({ attack_type: 'NTP Amplification' });
	const s = (await get(e, `${e.siteDash}/network_summary`)).result;
	assert.deepEqual(Object.keys(s).sort(), ['app', 'as_num', 'attack_type', 'country', 'ip', 'proto']);
	assert.deepEqual(
		s.attack_type.find((x: { attack_type: string }) => x.attack_type === 'NTP Amplification'),
		{ attack_type: 'NTP Amplification', size: 8_000_000_000 },
	);
	assert.equal(s.ip.find((x: { ip: string }) => x.ip === '198.18.0.10').size, 3_000_000_000);
	const pps = (await get(e, `${e.siteDash}/network_summary`, { type: 'pps', range: 'day' })).result;
	assert.equal(
		pps.attack_type.find((x: { attack_type: string }) => x.attack_type === 'NTP Amplification').size,
		1_000_000,
	);
	assert.ok(isInvalid(await get(e, `${e.siteDash}/network_summary`, { range: 'year' }), 'range'));
	assert.ok(isInvalid(await get(e, `${e.siteDash}/network_summary`, { type: 'bits' }), 'type'));
});

test('scenario files: attacks start and stop on the simulator clock; the seed makes the world deterministic', async () => {
	const sc = {
		seed: 42,
		attacks: [
			{
				site_id: '20001',
				at: 30,
				duration: 120,
				attack_type: 'TCP SYN',
				curve: { peakBps: 5e9, peakPps: 2e6 },
				sources: [{ asn: 64500 }, { country: 'BR' }],
			},
		],
	};
	const e1 = await boot({ scenario: sc, startTime: Date.UTC(2025, 5, 1) });
	const e2 = await boot({ scenario: sc, startTime: Date.UTC(2025, 5, 1) });
	try {
		const s1 = await ctl(e1, 'GET', '/state');
		const s2 = await ctl(e2, 'GET', '/state');
		assert.deepEqual(s1.customers, s2.customers);
		assert.deepEqual(s1.attacks, s2.attacks);
		const e3 = await boot({ seed: 43, startTime: Date.UTC(2025, 5, 1) });
		assert.notDeepEqual((await ctl(e3, 'GET', '/state')).customers, s1.customers);
		await e3.close();
		const dash = `/api/specp/op/dashboard/site/20001/is_under_attack`;
		assert.equal((await get(e1, dash)).result.status, 0);
		await ctl(e1, 'POST', '/clock/advance', { seconds: 30 });
		assert.deepEqual((await get(e1, dash)).result, { status: 1, bps_size: 5e9 });
		const ev = (await get(e1, `/api/specp/op/dashboard/site/20001/ddos_events`, { status: 'ongoing' })).result
			.events[0];
		const tm = (await get(e1, `/api/specp/op/dashboard/ddos_event/${ev.alert_id}/detail`, { module: 'threat_map' }))
			.result.threat_map;
		assert.equal(tm.bps.length, 6);
		assert.ok(tm.bps.some((r: { org: string }) => r.org.startsWith('AS64500')));
		assert.ok(tm.bps.some((r: { code: string }) => r.code === 'BR'));
		await ctl(e1, 'POST', '/clock/advance', { seconds: 120 });
		assert.deepEqual((await get(e1, dash)).result, { status: 0, bps_size: 5e9 });
	} finally {
		await e1.close();
		await e2.close();
	}
});
