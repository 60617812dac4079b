/**
 * Issue 39 item 6 ("a new wave blocked within one poll interval"), real dev server + in-process worker + simulator:
 * the runbook's polls keep a fixed grid from the start of its wait (`patched('runbook-poll-grid')`). The service
 * answers every is_under_attack 1.5 s late; with pollSeconds 3 the polls must still start 3 s apart. Before, the wait
 * slept pollSeconds AFTER each round, so each gap was at least 3 + 1.5 s and a new wave waited that much longer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { env, plan, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

const POLL_S = 3;
const SLOW_MS = 1500;
const GAPS = 4;

test('a slow poll does not push the next one: the polls keep the grid of pollSeconds', async () => {
	const { s, ids, queue, close } = await siteWorld(43, 'poll-grid');
	try {
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: [{ ip: '203.0.113.10' }] });
		const h = await startAttackResponse(env.client, queue, plan(ids, { pollSeconds: POLL_S, cooldownSeconds: 1 }));
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 30_000);
		s.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'delay', delayMs: SLOW_MS, count: 1000 });
		const polls = () =>
			s.sim
				.requests({ op: 'dashboard.isUnderAttack' })
				.filter((r) => r.caller === 'app' && r.fault === 'delay')
				.map((r) => r.recvAt as number);
		await waitFor(`${GAPS + 1} slow polls`, async () => polls().length > GAPS, 60_000, 100);
		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');

		const at = polls().slice(0, GAPS + 1);
		const gaps = at.slice(1).map((t, i) => t - at[i]);
		console.log(`poll gaps (ms) with every poll ${SLOW_MS} ms slow, pollSeconds ${POLL_S}: ${gaps.join(', ')}`);
		// Sleeping after each round made EVERY gap pollSeconds + the slow answer at least, however fast the machine; on
		// the grid a gap is pollSeconds, or longer when a round started late or overran its slot (skipped, as designed),
		// which a starved worker or dev server does to any number of rounds. One gap under that floor is the grid.
		const shortest = Math.min(...gaps);
		assert.ok(shortest < POLL_S * 1000 + SLOW_MS, `shortest gap ${shortest} ms: every poll drifted by the slow answer`);
	} finally {
		await close();
	}
});
