/**
 * Issue 39 item 3, repeat offenders are blocked longer, on a real dev server + in-process worker + simulator: the same
 * source blocked again (`secsvc block add`, then by a runbook of the same customer with expiring entries) gets
 * 1× → 2× → 4× its base duration, capped, recorded in the customer's durable history (`offenders-<customer>`), and the
 * block says why (`secsvc block list`, the blocks query the Runbook node's List Blocks reads, the runbook's audit).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { listBlocks } from '../../workflows/blocks/client.mts';
import { offenderHistory } from '../../worker/src/temporal/offenders.mts';
import { env, plan, runCli, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

test('a source blocked again gets 1× → 2× → 4× (cap) its base duration, and the block says why', async () => {
	const { s, ids, queue, close } = await siteWorld(43, 'offenders');
	const { site_id: site, domain_port_id: dp, customer_id: customer } = ids;
	const src = '203.0.113.50';
	try {
		const seconds: number[] = [];
		for (let i = 0; i < 4; i++) {
			const a = await runCli(
				env,
				[
					'block',
					'add',
					site,
					dp,
					src,
					'--seconds',
					'100',
					'--by',
					'feed',
					'--reason',
					'threat feed',
					'--customer',
					customer,
				],
				queue,
			);
			assert.equal(a.code, 0, a.err);
			const b = JSON.parse(a.out) as { expiresAt: string; addedAt: string; reason: string };
			seconds.push(Math.round((Date.parse(b.expiresAt) - Date.parse(b.addedAt)) / 1000));
			if (i === 2)
				assert.match(
					b.reason,
					/^threat feed — repeat offender: blocked 2 time\(s\) before, last .*: 100s × 4 \(cap\) = 400s/,
				);
			const list = await runCli(env, ['block', 'list', site, '--dp', dp], queue);
			if (i > 0) assert.match(list.out, /repeat offender: blocked \d time\(s\) before/, 'block list says why');
			const r = await runCli(env, ['block', 'remove', site, dp, src, '--by', 'feed'], queue);
			assert.equal(r.code, 0, r.err);
		}
		assert.deepEqual(
			seconds.map((x) => Math.round(x / 10) * 10),
			[100, 200, 400, 400],
		);
		const hist = await offenderHistory(env.client, customer);
		assert.deepEqual(
			hist.map(([range, r]) => [range, r.n]),
			[[src, 4]],
		);

		// The runbook of the same customer registers its entry as an expiring block: the fifth time, capped at 4×.
		const attack = s.sim.startAttack({ site_id: site, duration: 0, sources: [{ ip: src }] });
		const p = plan(ids, { cooldownSeconds: 1, ipAuth: undefined, switches: [] });
		const h = await startAttackResponse(env.client, queue, {
			...p,
			blacklist: { ...p.blacklist, expireAfterSeconds: 60 },
		});
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 20_000);
		await waitFor('its block', async () =>
			(await listBlocks(env.client, site, dp)).some((b) => b.range === src && b.reason.includes('repeat offender')),
		);
		const b = (await listBlocks(env.client, site, dp)).find((x) => x.range === src && x.state !== 'removed');
		assert.match(
			b?.reason ?? '',
			/attack source blacklisted by the attack response — repeat offender: blocked 4 time\(s\) before.*= 240s/,
		);
		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.ok(
			r.audit.some(
				(e) =>
					/expiring block registered: 203\.0\.113\.50/.test(e.what) && /repeat offender: blocked 4 time/.test(e.why),
			),
			'the audit (timeline, report) says why',
		);
	} finally {
		await close();
	}
});
