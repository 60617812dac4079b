/**
 * Issue 29, kill storm: 3 worker processes, 24 HTTP-filter creates through durable calls against a slow service
 * (each create holds its domain-port 1.2 s before it is applied and answered), every worker SIGKILLed while a create
 * is in flight, twice, and restarted. The killed POST is applied with its answer lost; the retry must find that
 * policy instead of creating it again: exactly 24 policies, one per name.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { before, test } from 'node:test';
import { workerCommand } from '../../worker/src/process/build.mts';
import { holds } from '../../workflows/coordinator/client.mts';
import {
	APP_ID,
	env,
	startSim,
	useDevServer,
	killChild,
	SECRET,
	spawnWorker,
	startFilterCreates,
	uniqueQueue,
	waitFor,
} from './helpers.mts';

const N = 24;
const KILL_ROUNDS = 2;

useDevServer({ bundle: false });
before(() => {
	workerCommand(); // compiled worker built once, before the clock matters
});

test(`${N} HTTP-filter creates through durable calls, workers SIGKILLed mid-create ${KILL_ROUNDS}×: exactly ${N} policies`, async () => {
	const s = await startSim(13, { httpFilterProcessingMs: 1200 });
	const ids = s.sim.firstIds();
	const queue = uniqueQueue('filter-storm');
	const spawn3 = () => [spawnWorker(env, s.url, queue), spawnWorker(env, s.url, queue), spawnWorker(env, s.url, queue)];
	let workers: ChildProcess[] = spawn3();
	try {
		const handles = await startFilterCreates(queue, ids, N, 'storm');
		const busy = () => s.sim.filterBusy.size > 0;
		const creates = () => s.sim.requests({ op: 'applicationProtection.httpFilter.create' }).length;
		for (let k = 0; k < KILL_ROUNDS; k++) {
			const seen = creates();
			// a few creates between kills, then SIGKILL every worker (by PID) while a create is held at the service
			await waitFor(`round ${k}: a create in flight`, async () => creates() >= seen + 3 && busy(), 120_000, 20).catch(
				async (e) => {
					const d = await handles[N - 1].describe();
					const raw = d.raw.pendingActivities?.map((a) => [
						a.activityType?.name,
						a.attempt,
						a.state,
						a.lastFailure?.message,
					]);
					throw new Error(
						`${(e as Error).message}; holds ${JSON.stringify(await holds(env.client, ids.site_id))}; last call ${d.status.name} ${JSON.stringify(raw)}; workers exit ${workers.map((w) => w.exitCode)}`,
					);
				},
			);
			const pids = workers.map((w) => w.pid);
			await Promise.all(workers.map((w) => killChild(w)));
			process.stderr.write(
				`[filter storm] round ${k}: SIGKILLed ${pids.join(', ')} with a create in flight (${creates()} creates sent)\n`,
			);
			workers = spawn3();
		}
		// the timer is cleared: left running it kept the file's process alive 240 s after the race (271 s per file)
		let timer: NodeJS.Timeout | undefined;
		const results = (await Promise.race([
			Promise.all(handles.map((h) => h.result())),
			new Promise((_, reject) => {
				timer = setTimeout(() => reject(new Error('durable calls not done within 240 s')), 240_000);
			}),
		]).finally(() => clearTimeout(timer))) as { p_flag_id?: string; alreadyCreated?: boolean }[];
		const list = await listFilters(s, ids);
		const names = list.map((f) => f.p_name).sort();
		const asked = Array.from({ length: N }, (_, i) => `storm-${i}`).sort();
		const found = results.filter((r) => r.alreadyCreated).length;
		process.stderr.write(
			`[filter storm] ${creates()} create requests, ${list.length} policies, ${found} retries found their own create\n`,
		);
		assert.deepEqual(names, asked, `exactly one policy per create asked (${list.length} present for ${N} asked)`);
		assert.ok(found >= 1, 'a killed create was applied and its retry found it (the storm hit a create in flight)');
		assert.equal(new Set(results.map((r) => r.p_flag_id)).size, N, 'each durable call answers its own policy id');
	} finally {
		await Promise.all(workers.map((w) => killChild(w, 'SIGTERM')));
		await s.close();
	}
});

async function listFilters(
	s: Awaited<ReturnType<typeof startSim>>,
	ids: { site_id: string; domain_port_id: string },
): Promise<{ p_name: string }[]> {
	const tok = await fetch(`${s.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: APP_ID, secret: SECRET, grant_type: 'client_credential' }),
	});
	const token = ((await tok.json()) as { result: { access_token: string } }).result.access_token;
	const r = await fetch(
		`${s.url}/api/specp/policy/appshield/site/${ids.site_id}/domain-port/${ids.domain_port_id}/http-filter?access_token=${token}`,
	);
	return ((await r.json()) as { result: { p_name: string }[] }).result;
}
