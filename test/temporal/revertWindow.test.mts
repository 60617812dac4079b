/**
 * Issue 37, interleave seeds 462 and 477 made deterministic (real dev server, in-process worker, simulator faults): a
 * person's write after the runbook's abort, between the revert's read of a setting and its write, stays theirs.
 *
 * The revert reads a setting (its workflow's read), compares it with what the runbook wrote, then its write activity
 * is scheduled, runs and writes. Before, the write activity only checked that the setting was not at its target
 * already: a person's value set after the workflow's read — a workflow task, the activity's scheduling and, after a
 * worker kill, a retry ago (seconds under load) — was overwritten by the restore (seed 462: n8n's tcp_syn; 477: the
 * console's IP authentication). Now the write is made on a condition checked on its own read (`expect`: the
 * runbook's own value): found at another value, nothing is sent and the change is a conflict with both values. What
 * no client can close is the write's own read → write (one API round trip: the API has no compare-and-set).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttackResponseResult, Change } from '../../api/runbook/contract.ts';
import { consoleCall } from '../../simulator/console.mts';
import { abort, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { ipAuthBody } from '../../workflows/attackResponse/settings.mts';
import { ATTACK_SOURCES, env, liveSettings, plan, siteWorld, useDevServer, waitFor } from './helpers.mts';

useDevServer();

/** A person's IP authentication (the console's in seed 477): neither the snapshot's nor the plan's. */
const PERSON_AUTH = { action: 'blacklist', enable: 1, mode: 1, action_blacklist: { duration: 600, threshold_rps: 77 } };
const comparable = (v: unknown) => JSON.parse(JSON.stringify(v));

/** The next two reads of the site's IP authentication wait 1.5 s each in the service; `arrived` waits until both have
 * reached it (logged before their delay). */
function holdTwoIpAuthReads(s: Awaited<ReturnType<typeof siteWorld>>['s'], site: string) {
	const op = 'applicationProtection.authIp.get';
	s.sim.addFault({ op, kind: 'delay', delayMs: 1500, count: 2, pathContains: site });
	const delayed = () => s.sim.requests({ op }).filter((r) => r.fault === 'delay' && r.path.includes(site));
	return { arrived: (what: string, ms: number) => waitFor(what, async () => delayed().length >= 2, ms, 5) };
}

for (const localActivities of ['none', 'all'] as const)
	test(`a person's write between the revert's read and its write stays theirs (reads ${localActivities === 'none' ? 'regular' : 'local'})`, async () => {
		const { s, ids, queue, op, close } = await siteWorld(462, 'revert-window');
		const site = `/site/${ids.site_id}/`;
		/** The runbook's (the app token's) requests of `opId` on the site, as the service logged them. */
		const runbook = (opId: string) =>
			s.sim.requests({ op: opId }).filter((r) => r.caller === 'app' && r.path.includes(site));
		try {
			const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			// One poll at the start of the wait, the next an hour later: after it, every read of the site is the revert's.
			const p = plan(ids, { cooldownSeconds: 60, pollSeconds: 3600 });
			p.execution = { localActivities, parallel: true, blacklistConcurrency: 1, continueAsNewAfterEvents: 2000 };
			const h = await startAttackResponse(env.client, queue, p);
			await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);
			const wrote = runbook('applicationProtection.authIp.set').at(-1)?.seq ?? Infinity;
			await waitFor('the first poll read IP authentication', async () =>
				runbook('applicationProtection.authIp.get').some((r) => r.seq > wrote && r.code === 0),
			);
			// The revert's two reads of IP authentication (its workflow's, its write's) each wait 1.5 s in the service.
			const held = holdTwoIpAuthReads(s, site);
			await abort(env.client, h.workflowId, 'oncall-bob', 'revert window test');
			// The second read has arrived (its caller known only after its delay): the first has answered the runbook's
			// value. The person's write lands before the service reads the setting for the second.
			await held.arrived("the revert's second read", 60_000);
			const r0 = await consoleCall(s.sim, {
				op: 'applicationProtection.authIp.set',
				params: { site_id: ids.site_id, domain_port_id: ids.domain_port_id, ...PERSON_AUTH },
			});
			assert.equal(r0.code, 0, r0.msg);
			const personAt = s.sim.requests().at(-1)?.seq ?? 0;
			s.sim.stopAttack(attack.id);
			const r = (await h.result()) as AttackResponseResult;
			assert.equal(r.outcome, 'aborted-reverted');

			const after = runbook('applicationProtection.authIp.set').filter((x) => x.seq > personAt);
			assert.deepEqual(
				after.map((x) => x.body),
				[],
				"the revert wrote nothing over the person's IP authentication",
			);
			assert.deepEqual(comparable((await liveSettings(op, ids)).ipAuth), PERSON_AUTH, "the person's value stays");
			const c = r.changes.find((x) => x.kind === 'ipAuth') as Change;
			assert.equal(c.status, 'conflict');
			assert.match(c.note ?? '', /changed after our write: ours \{.*\}, theirs \{"action":"blacklist".*\} \(kept\)/);
			const others = r.changes.filter((x) => x.kind !== 'ipAuth' && x.kind !== 'blacklistAdd');
			assert.deepEqual(
				others.map((x) => `${x.id} ${x.status}`),
				others.map((x) => `${x.id} restored`),
				'the rest is restored as before',
			);
		} finally {
			await close();
		}
	});

test("hold-the-line reapply: the value it replaced is written again, a person's value set since the poll's read stays theirs", async () => {
	const { s, ids, queue, op, close } = await siteWorld(463, 'reapply-window');
	const site = `/site/${ids.site_id}/`;
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const sets = () =>
		s.sim
			.requests({ op: 'applicationProtection.authIp.set' })
			.filter((r) => r.caller === 'app' && r.path.includes(site));
	/** The console's write of IP authentication (the vendor's console, or the service itself: the API names no author). */
	const consoleSets = async (value: Record<string, unknown>) => {
		const r = await consoleCall(s.sim, { op: 'applicationProtection.authIp.set', params: { ...dp, ...value } });
		assert.equal(r.code, 0, r.msg);
		return s.sim.requests().at(-1)?.seq ?? 0;
	};
	try {
		const replaced = ipAuthBody((await liveSettings(op, ids)).ipAuth as Record<string, unknown>);
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(
			env.client,
			queue,
			plan(ids, { cooldownSeconds: 60, pollSeconds: 1, holdTheLine: 'reapply' }),
		);
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);
		// 1. Back at the value our write replaced, and still there when the re-apply reads: written again (the rule of
		// `reapply`, for a console reset and for the service's own drift alike).
		const reset = await consoleSets(replaced);
		await waitFor('re-applied', async () => (await h.query(stateQuery)).reapplied >= 1, 30_000);
		assert.equal(sets().filter((r) => r.seq > reset).length, 1, 'one re-apply after the reset');
		// 2. Back at it again, but a person sets a third value between the poll's read and the re-apply's own read:
		// both reads wait 1.5 s in the service, the person's write lands once the second has arrived.
		const held = holdTwoIpAuthReads(s, site);
		await consoleSets(replaced);
		await held.arrived("the re-apply's own read", 30_000);
		const personAt = await consoleSets(PERSON_AUTH);
		await waitFor('the conflict', async () => (await h.query(stateQuery)).conflicts >= 1, 30_000);
		await abort(env.client, h.workflowId, 'oncall-bob', 'reapply window test');
		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'aborted-reverted');
		assert.deepEqual(
			sets()
				.filter((x) => x.seq > personAt)
				.map((x) => x.body),
			[],
			"neither the re-apply nor the revert wrote over the person's IP authentication",
		);
		assert.deepEqual(comparable((await liveSettings(op, ids)).ipAuth), PERSON_AUTH, "the person's value stays");
		const c = r.changes.find((x) => x.kind === 'ipAuth') as Change;
		assert.equal(c.status, 'conflict');
		assert.equal(c.reapplied, 1);
		assert.match(c.note ?? '', /changed after our write: ours \{.*\}, theirs \{"action":"blacklist".*\} \(kept\)/);
	} finally {
		await close();
	}
});
