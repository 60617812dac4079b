/**
 * Diagnosis (not in run.mts): how fast a waiting runbook's history grows, on the real dev server against the
 * simulator. For each `plan.execution.localActivities` setting given, one runbook (the tests' typical plan: rapid
 * mode, 2 detection items, blacklist, IP auth, 1 switch on 1 domain-port; pollSeconds 1) waits out a long attack
 * with the continue-as-new threshold at its maximum (10,000); the script reads the history length when the wait starts and
 * after `--polls` polls, and prints events per poll and how long a runbook could wait at pollSeconds 1 / 10 / 30
 * before Temporal's warning (10,240 events) and its hard limit (51,200 events: the run is terminated).
 *
 *   node --import tsx bench/historyGrowth.mts [--polls 20] [--modes all,none]
 */
import { parseArgs } from 'node:util';
import { stateQuery } from '../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../workflows/attackResponse/client.mts';
import { workflowBundle } from '../worker/src/process/bundle.mts';
import {
	ATTACK_SOURCES,
	createEnv,
	plan,
	siteIds,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	waitFor,
} from '../test/temporal/helpers.mts';

const { values } = parseArgs({
	options: { polls: { type: 'string', default: '20' }, modes: { type: 'string', default: 'all,none' } },
});
const polls = Math.max(3, Math.min(200, Number(values.polls)));
const modes = String(values.modes).split(',') as ('all' | 'reads' | 'none')[];

const env = await createEnv();
await workflowBundle();
const rows: Record<string, unknown>[] = [];
try {
	for (const [i, mode] of modes.entries()) {
		const s = await startSim();
		// a site of its own per mode: the terminated runbook of the previous mode keeps its holds at that site's coordinator
		const ids = siteIds(s.sim, modes.length)[i];
		const queue = uniqueQueue('history');
		const worker = await startInProcessWorker(env, s.url, queue);
		try {
			s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h = await startAttackResponse(
				env.client,
				queue,
				plan(ids, { maxDurationSeconds: 3600, execution: { localActivities: mode, continueAsNewAfterEvents: 10_000 } }),
			);
			await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000).catch(
				async (e) => {
					throw new Error(
						`${(e as Error).message}: ${JSON.stringify(await h.query(stateQuery).catch((q) => String(q)))}, ${(await h.describe()).status.name}`,
					);
				},
			);
			const len = async () => (await h.describe()).historyLength;
			const bytes = async () => Number((await h.describe()).raw.workflowExecutionInfo?.historySizeBytes ?? 0);
			const pollsSoFar = () => s.sim.requests({ op: 'dashboard.isUnderAttack' }).length;
			const e0 = await len();
			const b0 = await bytes();
			const p0 = pollsSoFar();
			await waitFor(`${polls} polls`, async () => pollsSoFar() - p0 >= polls, polls * 3000 + 30_000, 100);
			const e1 = await len();
			const b1 = await bytes();
			const p1 = pollsSoFar();
			const perPoll = (e1 - e0) / (p1 - p0);
			const wait = (limit: number, pollSeconds: number) => (((limit - e0) / perPoll) * pollSeconds) / 3600;
			rows.push({
				localActivities: mode,
				eventsBeforeWait: e0,
				eventsPerPoll: Number(perPoll.toFixed(1)),
				bytesPerPoll: Math.round((b1 - b0) / (p1 - p0)),
				'h to 10,240 @1s': Number(wait(10_240, 1).toFixed(2)),
				'h to 51,200 @1s': Number(wait(51_200, 1).toFixed(2)),
				'h to 10,240 @10s': Number(wait(10_240, 10).toFixed(1)),
				'h to 51,200 @10s': Number(wait(51_200, 10).toFixed(1)),
				'h to 10,240 @30s': Number(wait(10_240, 30).toFixed(1)),
				'h to 51,200 @30s': Number(wait(51_200, 30).toFixed(1)),
			});
			await h.terminate('measurement done');
		} finally {
			await worker.shutdown();
			await s.close();
		}
	}
} finally {
	await env.teardown();
}
console.table(rows);
console.log(JSON.stringify(rows));
