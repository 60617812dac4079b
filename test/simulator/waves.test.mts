/** Issue 39: the simulator's attack waves — same alert_id, shifting and returning sources (simulator/waves.mts). */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { boot, ctl, get, type Env } from './helpers.mts';

let e: Env;
beforeEach(async () => {
	e = await boot({ startTime: Date.UTC(2025, 2, 10, 12, 0, 0) });
});
afterEach(() => e.close());

const threatIps = async (id: string) =>
	(
		(await get(e, `/api/specp/op/dashboard/ddos_event/${id}/detail`, { module: 'threat_map' })).result.threat_map
			.bps as { ip: string }[]
	)
		.map((r) => r.ip)
		.sort();

test('the threat map follows the wave of the moment (new and returning sources), the alert_id stays', async () => {
	const a = await ctl(e, 'POST', '/attacks', {
		site_id: e.ids.site_id,
		duration: 0,
		sources: [{ ip: '198.18.0.10' }, { ip: '198.18.0.11' }],
		waves: [
			{ at: 60, sources: [{ ip: '198.18.0.20' }, { ip: '198.18.0.10' }] },
			{ at: 120, sources: [{ ip: '198.18.0.30' }] },
		],
	});
	assert.deepEqual(await threatIps(a.id), ['198.18.0.10', '198.18.0.11']);
	await ctl(e, 'POST', '/clock/advance', { seconds: 61 });
	assert.deepEqual(await threatIps(a.id), ['198.18.0.10', '198.18.0.20'], 'wave 2: new and returning, same alert_id');
	const events = (await get(e, `${e.siteDash}/ddos_events`, { status: 'ongoing' })).result.events as {
		alert_id: string;
	}[];
	assert.deepEqual(
		events.map((x) => x.alert_id),
		[a.id],
	);
	await ctl(e, 'POST', '/clock/advance', { seconds: 60 });
	assert.deepEqual(await threatIps(a.id), ['198.18.0.30']);
});

test('waves are checked: at > 0 and sources, named', async () => {
	const r = await fetch(`${e.url}/__sim/attacks`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ site_id: e.ids.site_id, waves: [{ sources: [{ ip: '198.18.0.1' }] }] }),
	});
	assert.equal(r.status, 400);
	assert.match(((await r.json()) as { error: string }).error, /attack\.waves\.0\.at/);
});
