/**
 * Issue 39 item 1, a new wave during the wait, on a real dev server + in-process worker + simulator: the attack's
 * sources shift (simulator waves: the same alert_id, new top sources, one returning) and a second event starts on the
 * site; the runbook blacklists each wave's new sources under the same guard, owns them (held at the coordinator,
 * `written`), restarts the cooldown, leaves alone what a person removed, and its revert removes exactly its own
 * entries of every wave. The timeline and the report show each wave.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult, Change } from '../../api/runbook/contract.ts';
import { renderReportHtml } from '../../api/report/html.ts';
import { runbookReportModel } from '../../api/report/model.ts';
import { changesQuery, stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { holds } from '../../workflows/coordinator/client.mts';
import { env, listedRanges, liveSettings, plan, runCli, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const listed = listedRanges;
const one = (ip: string) => `${ip}-${ip}`;
const ip = (n: number) => `203.0.113.${n}`;

test('a new wave during the wait: new top sources blocked, owned and reverted; a returning source a person removed stays theirs; a new event is a wave too', async () => {
	const { s, ids, queue, op, close } = await siteWorld(39, 'waves');
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	try {
		const before = listed(await liveSettings(op, ids));
		// Wave 1: .10 and .20; from 8 s on (same alert_id): .30 and .40 new, .10 returning.
		const attack = s.sim.startAttack({
			site_id: ids.site_id,
			duration: 0,
			sources: [{ ip: ip(10) }, { ip: ip(20) }],
			waves: [{ at: 8, sources: [{ ip: ip(30) }, { ip: ip(40) }, { ip: ip(10) }] }],
		});
		const h = await startAttackResponse(env.client, queue, plan(ids, { cooldownSeconds: 3 }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 20_000);
		assert.deepEqual(listed(await liveSettings(op, ids)), [...before, one(ip(10)), one(ip(20))].sort());
		// A person removes .10 (ours): theirs from now on — its return in wave 2 must not put it back.
		await op.call('applicationProtection.ipBlacklist.remove', { ...dp, ip_black_list: [one(ip(10))] });
		await waitFor('the removal seen', async () =>
			(await h.query(changesQuery)).some((c) => /removed by someone else after our write/.test(c.note ?? '')),
		);

		await waitFor('wave 2 blocked', async () => (await h.query(stateQuery)).waves?.n === 2, 30_000);
		const wave2At = attack.start + 8;
		const post = (n: number) =>
			s.sim
				.requests({ op: 'applicationProtection.ipBlacklist.add' })
				.find((r) => JSON.stringify(r.body).includes(ip(n)) && r.status === 200);
		const p30 = post(30);
		assert.ok(p30 && post(40), 'wave 2 entries POSTed');
		console.log(`wave 2 blocked ${((p30.time - wave2At * 1000) / 1000).toFixed(1)} s after its start (poll 1 s)`);
		const posts10 = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.add' })
			.filter((r) => JSON.stringify(r.body).includes(one(ip(10))));
		assert.equal(posts10.length, 1, 'the returning .10 (a person removed it) is not POSTed again');
		assert.deepEqual(listed(await liveSettings(op, ids)), [...before, one(ip(20)), one(ip(30)), one(ip(40))].sort());
		const owner = `attack-response-${ids.site_id}`;
		const held = (await holds(env.client, ids.site_id)).filter((x) => x.owner === owner).map((x) => x.key);
		for (const n of [30, 40]) assert.ok(held.includes(`${ids.domain_port_id}/blacklist/${ip(n)}`), `held ${n}`);

		// A second event (new alert_id) on the site: wave 3.
		const second = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: ip(90) }] });
		await waitFor('wave 3 blocked', async () => (await h.query(stateQuery)).waves?.n === 3, 30_000);
		const st = await h.query(stateQuery);
		assert.ok(st.waves?.events.includes(second.id), 'the new event is seen');

		s.sim.stopAttack(attack.id);
		s.sim.stopAttack(second.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(
			listed(await liveSettings(op, ids)),
			before,
			'every wave reverted; .10 stays as the person left it',
		);
		const bl = r.changes.filter((c) => c.kind === 'blacklistAdd');
		assert.deepEqual(
			bl.map((c) => [c.id, c.status, (c.written?.wrote as string[] | undefined)?.sort()]),
			[
				[`blacklist.${ids.domain_port_id}`, 'restored', [ip(10), ip(20)]],
				[`blacklist.${ids.domain_port_id}.wave2`, 'restored', [ip(30), ip(40)]],
				[`blacklist.${ids.domain_port_id}.wave3`, 'restored', [ip(90)]],
			],
		);
		assert.match((bl[0] as Change).note ?? '', /already removed by someone else|removed by someone else/);
		assert.equal(r.marks?.attackEndedAt !== undefined, true);
		assert.deepEqual(
			st.waves?.log.map((w) => [w.n, w.entries]),
			[
				[2, 2],
				[3, 1],
			],
		);

		// What operators see: each wave in the timeline and the report.
		const tl = await runCli(env, ['timeline', h.workflowId], queue);
		assert.match(tl.out, /IP blacklist of \d+ \(wave 2\)/);
		assert.match(tl.out, /wave 3: new top sources of event\(s\) /);
		const html = renderReportHtml(runbookReportModel(r, new Date().toISOString()));
		assert.match(html, /IP blacklist of \d+ \(wave 2\)/);
		assert.match(html, /IP blacklist of \d+ \(wave 3\)/);
	} finally {
		await close();
	}
});
