/**
 * Issue 39 item 4, the allow-list always wins, on a real dev server + in-process worker + simulator: while a runbook
 * waits with its entries and an expiring block is live, allowing ranges (`secsvc allow`, and a whitelist entry added
 * through `secsvc call`) ends at once the runbook entries and the expiring block that overlap them, each reported with
 * the reason; the runbook no longer owns them (not re-added by the waves or hold-the-line, not touched by its revert),
 * and its revert removes exactly the rest.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { addBlock, listBlocks } from '../../workflows/blocks/client.mts';
import { env, listedRanges, liveSettings, plan, runCli, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const listed = listedRanges;
const one = (ip: string) => `${ip}-${ip}`;
const ip = (n: number) => `203.0.113.${n}`;

test('allowing a range ends the overlapping runbook entries and expiring blocks at once, each with the reason; the revert removes exactly the rest', async () => {
	const { s, ids, queue, op, close } = await siteWorld(41, 'allow');
	const site = ids.site_id;
	const dp = ids.domain_port_id;
	try {
		const before = listed(await liveSettings(op, ids));
		const attack = s.sim.startAttack({
			site_id: site,
			duration: 0,
			sources: [{ ip: ip(10) }, { ip: ip(20) }, { ip: ip(30) }],
		});
		const h = await startAttackResponse(env.client, queue, plan(ids, { cooldownSeconds: 2 }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 20_000);
		const blk = await addBlock(env.client, queue, site, dp, {
			entry: '198.51.100.16/28',
			seconds: 3600,
			by: 'feed',
			reason: 'threat feed',
		});
		await waitFor('the block active', async () =>
			(await listBlocks(env.client, site, dp)).some((b) => b.range === blk.range && b.state === 'active'),
		);
		assert.deepEqual(
			listed(await liveSettings(op, ids)),
			[...before, one(ip(10)), one(ip(20)), one(ip(30)), '198.51.100.16-198.51.100.31'].sort(),
		);

		// A protected range declared outside our tools (say, the credential): `secsvc allow` ends what overlaps it.
		const a = await runCli(
			env,
			['allow', site, ip(10), '198.51.100.20', '--reason', 'credential protected range', '--json'],
			queue,
		);
		assert.equal(a.code, 0, a.err);
		const r1 = JSON.parse(a.out) as { ended: { kind: string; entry: string; reason: string }[]; notEnded: unknown[] };
		assert.deepEqual(r1.ended.map((e) => [e.kind, e.entry]).sort(), [
			['expiring block', '198.51.100.16-198.51.100.31'],
			['runbook entry', ip(10)],
		]);
		for (const e of r1.ended)
			assert.match(e.reason, /^allow-list wins: .* overlaps .* \(credential protected range\)$/);
		assert.deepEqual(
			listed(await liveSettings(op, ids)),
			[...before, one(ip(20)), one(ip(30))].sort(),
			'ended at once',
		);
		const b = (await listBlocks(env.client, site, dp)).find((x) => x.range === blk.range);
		assert.equal(b?.state, 'removed');
		assert.match(b?.note ?? '', /allow-list wins: 198\.51\.100\.16-198\.51\.100\.31 overlaps 198\.51\.100\.20/);

		// A whitelist entry added through our tools: the entry of the runbook it covers ends too.
		const c = await runCli(
			env,
			[
				'call',
				'applicationProtection.ipWhitelist.add',
				'--params',
				JSON.stringify({ site_id: site, domain_port_id: dp, ip_white_list: ip(20) }),
				'--wait',
				'--by',
				'alice',
			],
			queue,
		);
		assert.equal(c.code, 0, c.err);
		assert.match(c.out, /whitelist entry 203\.0\.113\.20 added by alice/);
		assert.deepEqual(listed(await liveSettings(op, ids)), [...before, one(ip(30))].sort());

		// Polls go on (the sources still attack): the ended entries are not put back, by hold-the-line or a wave.
		await new Promise((res) => setTimeout(res, 3000));
		assert.deepEqual(listed(await liveSettings(op, ids)), [...before, one(ip(30))].sort(), 'not re-added');

		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(listed(await liveSettings(op, ids)), before, 'the rest reverted');
		const bl = r.changes.find((x) => x.kind === 'blacklistAdd');
		assert.match(bl?.note ?? '', /allow-listed 203\.0\.113\.10: ended at once \(credential protected range\)/);
		assert.match(
			bl?.note ?? '',
			/allow-listed 203\.0\.113\.20: ended at once \(whitelist entry 203\.0\.113\.20 added by alice\)/,
		);
		assert.ok(
			r.audit.some((e) => /allow-list wins/.test(e.why)),
			'in the timeline',
		);
	} finally {
		await close();
	}
});
