// Refused tokens with a real dev server and worker: a runbook waiting out an attack while the service drops its token and
// answers with codes other than ours (simulator option droppedTokenAnswer) keeps polling after at most one failed poll.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	ATTACK_SOURCES,
	env,
	type Ids,
	plan,
	startSim,
	startInProcessWorker,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';

useDevServer();

for (const answer of [
	{ code: 40001, msg: 'invalid access_token' },
	{ code: 10086, msg: 'Token has expired' },
])
	test(`the service drops the token mid-wait (${answer.code} "${answer.msg}"): one failed poll at most, then polling goes on`, async () => {
		const s = await startSim(7, { droppedTokenAnswer: answer });
		const queue = uniqueQueue('tok');
		const worker = await startInProcessWorker(env, s.url, queue);
		try {
			const ids: Ids = s.sim.firstIds();
			const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h = await startAttackResponse(env.client, queue, plan(ids));
			await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting');
			const mark = s.sim.requests().at(-1)?.seq ?? 0;
			s.sim.expireTokens();
			await waitFor(
				'polls after the drop',
				async () =>
					s.sim.requests().filter((r) => r.seq > mark && r.opId === 'dashboard.isUnderAttack' && r.code === 0).length >=
					3,
				30_000,
			);
			const since = s.sim.requests().filter((r) => r.seq > mark);
			const polls = since.filter((r) => r.opId === 'dashboard.isUnderAttack');
			assert.ok(polls.filter((r) => r.code === answer.code).length <= 1, JSON.stringify(polls.map((r) => r.code)));
			assert.equal(since.filter((r) => r.opId === 'authorization.appToken').length, 1, 'one fresh token');
			assert.equal(polls.at(-1)?.code, 0);
			s.sim.stopAttack(attack.id);
			const r = (await h.result()) as AttackResponseResult;
			assert.equal(r.outcome, 'reverted');
		} finally {
			await worker.shutdown();
			await s.close();
		}
	});
