/**
 * A runbook survives a long wait (Temporal's history limit): on a real dev server with a worker child process (its
 * Prometheus metrics) and the simulator, runbooks with a tiny `execution.continueAsNewAfterEvents` continue as new
 * several times while they wait:
 *  - one of our playbooks (a `durableCall`, the raw operation) removes a held blacklist entry and switches a held
 *    switch off; an operator sets IP authentication by hand → re-applied / conflict kept, across runs;
 *  - the holds stay the runbook's (keyed by workflow id), queries, signals and the decide Update reach the latest
 *    run, search attributes and metrics are those of one runbook (not one per run), `secsvc list` shows one row;
 *  - the result (followed through the chain) and `secsvc timeline` hold the whole audit of every run, the traffic
 *    samples of every poll; the revert restores every setting to the snapshot (the operator's value kept);
 *  - abort and maxDurationSeconds work in a continued run (the wait's clock is carried, not restarted);
 *  - every run's history stays short, has no failed workflow task, and replays;
 *  - a history recorded by code without this step (a copy of workflows/ without the continue call) that waited past
 *    the threshold replays unchanged under the current code (`patched`).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { startWorkerProcess, type WorkerProcess } from '../../demo/stack.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { coordinatorIdFor, holdsQuery } from '../../workflows/coordinator/coordination.mts';
import { WORKFLOW_TYPE, workflowIdFor, type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { SA } from '../../workflows/attackResponse/searchAttributes.mts';
import { parsePrometheus } from '../helpers/prometheus.mts';
import { workflowBundle } from '../../worker/src/process/bundle.mts';
import { runbookSinks } from '../../worker/src/process/runbookMetrics.mts';
import {
	abort,
	decide,
	DecisionRefused,
	extendCooldown,
	inspect,
	listRunbooks,
	startAttackResponse,
	timeline,
} from '../../workflows/attackResponse/client.mts';
import {
	APP_ID,
	ATTACK_SOURCES,
	liveSettings,
	metricsWorker,
	operatorClient,
	plan,
	ROOT,
	SECRET,
	siteIds,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
	env,
	type Ids,
} from './helpers.mts';
import { startDurableCall } from '../../workflows/durableCall/client.mts';
import type { attackResponse } from '../../workflows/attackResponse/attackResponse.mts';

/** The smallest threshold the plan allows: a run continues after a handful of polls. */
const TINY = { continueAsNewAfterEvents: 60 };

let sim: RunningSimulator;
let worker: WorkerProcess;
let queue: string;
let metricsUrl: string;
let sites: Ids[];
const workers: WorkerProcess[] = [];
let oldRoot: string | undefined;

useDevServer({
	bundle: false,
	start: async () => {
		sim = await startSim(15);
		sites = siteIds(sim.sim, 4);
		queue = uniqueQueue('can');
		({ worker, metricsUrl } = await metricsWorker(sim.url, queue));
	},
	stop: async () => {
		for (const w of workers) await w.stop().catch(() => {});
		if (oldRoot) rmSync(oldRoot, { recursive: true, force: true });
		await worker?.stop();
		await sim?.close();
	},
});

type Row = ReturnType<typeof parsePrometheus>[number];
const scrape = async () => parsePrometheus(await (await fetch(metricsUrl)).text());
const sum = (rows: Row[], name: string, where: Record<string, string> = {}) =>
	rows
		.filter((r) => r.name === name && Object.entries(where).every(([k, v]) => r.labels[k] === v))
		.reduce((s, r) => s + r.value, 0);
const comparable = (v: unknown) => JSON.parse(JSON.stringify(v));
/** The settings with the blacklist as a set (a re-added entry comes last on the list). */
const asSet = (v: Awaited<ReturnType<typeof liveSettings>>) => {
	const c = comparable(v);
	c.blacklist = (c.blacklist as { start_ip: string; end_ip: string }[]).map((e) => `${e.start_ip}-${e.end_ip}`).sort();
	return c;
};
const state = (h: WorkflowHandle) => h.query(stateQuery);
const continued = async (h: WorkflowHandle) => (await state(h)).continuedAsNew ?? 0;

interface Ev {
	eventType?: string;
	workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string };
}

/** Every run of the chain, first to last, from the first run's id (each ContinuedAsNew event names the next run). */
async function chain(h: WorkflowHandle & { firstExecutionRunId?: string }) {
	const runs: { runId: string; events: Ev[]; history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> }[] = [];
	let runId: string | undefined = h.firstExecutionRunId;
	while (runId) {
		const history = await env.client.workflow.getHandle(h.workflowId, runId).fetchHistory();
		const events = (JSON.parse(JSON.stringify(history)) as { events: Ev[] }).events;
		runs.push({ runId, events, history });
		runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
	}
	return runs;
}

function checkRuns(runs: Awaited<ReturnType<typeof chain>>, minRuns: number) {
	assert.ok(runs.length >= minRuns, `${runs.length} runs (continued as new ${runs.length - 1} times)`);
	for (const [i, r] of runs.entries()) {
		const last = r.events.at(-1)?.eventType;
		assert.equal(
			last,
			i < runs.length - 1
				? 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW'
				: 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
			`run ${i + 1} ends as expected`,
		);
		assert.equal(
			r.events.filter((e) => /WORKFLOW_TASK_FAILED|WORKFLOW_TASK_TIMED_OUT/.test(e.eventType ?? '')).length,
			0,
			`no failed workflow task in run ${i + 1}`,
		);
		// The first run snapshots and applies before its wait; every later run only waits: short histories.
		if (i > 0 && i < runs.length - 1)
			assert.ok(r.events.length <= TINY.continueAsNewAfterEvents + 30, `run ${i + 1}: ${r.events.length} events`);
	}
}

async function replayAll(workflowId: string, runs: Awaited<ReturnType<typeof chain>>) {
	const replay = await Worker.runReplayHistories(
		{ workflowBundle: await workflowBundle(), sinks: runbookSinks(undefined) },
		runs.map((r) => ({ workflowId, history: r.history })),
	);
	let n = 0;
	for await (const res of replay) {
		n++;
		assert.equal(res.error, undefined, `replay of ${res.workflowId}: ${res.error?.message}`);
	}
	assert.equal(n, runs.length);
}

test(
	'a long wait continues as new several times: holds the line across runs, reports the conflict, keeps its holds and metrics, reverts exactly',
	{ timeout: 180_000 },
	async () => {
		const ids = sites[0];
		const op = operatorClient(sim.url);
		const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
		const snapshot = await liveSettings(op, ids);
		const pollsBefore = sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length;
		try {
			const attack = sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
			const h = await startAttackResponse(
				env.client,
				queue,
				plan(ids, { cooldownSeconds: 3, maxDurationSeconds: 600, execution: TINY, holdTheLine: 'reapply' }),
			);
			await waitFor('the first continue-as-new', async () => (await continued(h)) >= 1, 60_000);
			const during = await liveSettings(op, ids);

			// The holds are keyed by workflow id: still the runbook's after the continue.
			const holds = await env.client.workflow.getHandle(coordinatorIdFor(ids.site_id)).query(holdsQuery);
			assert.ok(holds.length >= 5, `holds: ${holds.length}`);
			assert.deepEqual([...new Set(holds.map((x) => x.owner))], [workflowIdFor(ids.site_id)]);

			// One of our playbooks (the raw operation, no ownership check) removes a held entry and switches p_auth off …
			const listed = during.blacklist as { start_ip: string; end_ip: string }[];
			assert.ok(listed.length >= 2, 'the runbook blacklisted the attack sources');
			const call = (o: string, params: Record<string, unknown>) =>
				startDurableCall(env.client, queue, { op: o, params }, `can-call-${o}-${Date.now()}`).then((h) => h.result());
			await call('applicationProtection.ipBlacklist.remove', {
				...dp,
				ip_black_list: [`${listed[0].start_ip}-${listed[0].end_ip}`],
			});
			await call('applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: 0 });
			// … and an operator sets IP authentication by hand.
			const operatorAuth = {
				action: 'blacklist' as const,
				enable: 1,
				mode: 1,
				action_blacklist: { duration: 600, threshold_rps: 77 },
			};
			await op.call('applicationProtection.authIp.set', { ...dp, ...operatorAuth });

			const n0 = await continued(h);
			await waitFor(
				're-applied, conflict reported, continued again',
				async () => {
					const st = await state(h);
					return st.reapplied >= 2 && st.conflicts === 1 && (st.continuedAsNew ?? 0) >= n0 + 1;
				},
				60_000,
			);
			assert.deepEqual(
				asSet(await liveSettings(op, ids)),
				asSet({ ...during, ipAuth: operatorAuth }),
				'the line is held: the entry and the switch are back, the operator value stays',
			);

			// Signals and Updates reach the latest run.
			await assert.rejects(
				decide(env.client, ids.site_id, { approved: true, by: 'alice', via: 'cli' }),
				(e: unknown) =>
					e instanceof DecisionRefused && /not waiting for a decision \(phase waiting\)/.test((e as Error).message),
			);
			await extendCooldown(env.client, ids.site_id, 2, 'alice');
			const n1 = await continued(h);
			await waitFor(
				'extension carried into a later run',
				async () => {
					const st = await state(h);
					return st.extraCooldownSeconds === 2 && (st.continuedAsNew ?? 0) >= n1 + 1;
				},
				60_000,
			);

			// Search attributes and metrics are those of one waiting runbook.
			const d = await h.describe();
			assert.equal(d.typedSearchAttributes.get(SA.site), ids.site_id);
			assert.equal(d.typedSearchAttributes.get(SA.phase), 'waiting');
			assert.equal(d.typedSearchAttributes.get(SA.eventId), (await state(h)).eventId);
			const m = await scrape();
			const st = await state(h);
			assert.equal(
				sum(m, 'secsvc_runbooks_in_phase', { phase: 'waiting' }),
				1,
				'the phase gauge counts the runbook once, not once per run',
			);
			assert.equal(sum(m, 'secsvc_runbooks_in_phase'), 1);
			assert.equal(sum(m, 'secsvc_changes_applied_total'), st.changes, 'applied once each');
			assert.equal(sum(m, 'secsvc_changes_reapplied_total'), st.reapplied);
			assert.equal(sum(m, 'secsvc_change_conflicts_total'), 1);
			const listedRows = await waitFor(
				'one row in secsvc list',
				async () => {
					const rows = await listRunbooks(env.client, { site: ids.site_id });
					return rows.length === 1 && rows[0].status === 'RUNNING' ? rows : undefined;
				},
				15_000,
				500,
			);
			assert.equal(listedRows[0].phase, 'waiting');

			// The attack ends: the cooldown (3 s + 2 s) is observed, then the revert.
			sim.sim.stopAttack(attack.id);
			const r = (await h.result()) as AttackResponseResult; // the handle of the first run: result() follows the chain
			assert.equal(r.outcome, 'reverted');
			assert.deepEqual(
				comparable(await liveSettings(op, ids)),
				comparable({ ...snapshot, ipAuth: operatorAuth }),
				'every setting equals the snapshot; the operator value is kept',
			);
			assert.deepEqual(
				r.conflicts.map((c) => c.kind),
				['ipAuth'],
			);
			assert.equal(r.changes.find((c) => c.kind === 'switch')?.reapplied, 1);
			assert.equal(r.changes.find((c) => c.kind === 'blacklistAdd')?.reapplied, 1);
			assert.ok(
				r.timeToMitigateSeconds !== undefined && r.timeToRevertSeconds !== undefined && r.timeToRevertSeconds >= 5,
				JSON.stringify(r.marks),
			);

			// The whole audit across runs: snapshot and apply of run 1, every continue, the re-applies, the conflict, the revert.
			const steps = r.audit.map((a) => `${a.step}: ${a.what}${a.result ? ` (${a.result})` : ''}`);
			const continues = r.audit.filter((a) => /^continued as new \(run \d+\)$/.test(a.what));
			assert.ok(
				steps.some((s) => s.startsWith('snapshot: snapshot of every setting')),
				steps.join('\n'),
			);
			assert.ok(
				steps.some((s) => s.startsWith('tightening: detection mode')),
				steps.join('\n'),
			);
			assert.ok(continues.length >= 3, `${continues.length} continues in the audit`);
			assert.deepEqual(
				continues.map((a) => a.what),
				continues.map((_, i) => `continued as new (run ${i + 2})`),
			);
			assert.equal(r.audit.filter((a) => a.result === 're-applied').length, 2);
			assert.equal(r.audit.filter((a) => a.result === 'conflict').length, 1);
			assert.ok(r.audit.some((a) => a.step === 'signal' && a.what === 'extend cooldown by 2s'));
			assert.ok(r.audit.filter((a) => a.step === 'reverting').length >= 5);
			assert.deepEqual(await timeline(env.client, ids.site_id), r.audit, 'secsvc timeline: the same audit');
			const shown = await inspect(env.client, ids.site_id);
			assert.equal(shown.status, 'COMPLETED');
			assert.equal(shown.result?.outcome, 'reverted');
			// The samples of every poll of every run.
			const polls = sim.sim.requests({ op: 'dashboard.isUnderAttack' }).length - pollsBefore;
			assert.ok(
				r.traffic && r.traffic.length >= polls - 2 && r.traffic.length <= polls,
				`${r.traffic?.length} samples for ${polls} polls`,
			);

			// Released, metrics of one runbook, one row listed; every run short, none failed, every run replays.
			assert.deepEqual(
				await env.client.workflow
					.getHandle(coordinatorIdFor(ids.site_id))
					.query(holdsQuery)
					.catch(() => []),
				[],
			);
			const fin = await scrape();
			assert.equal(sum(fin, 'secsvc_runbooks_finished_total', { outcome: 'reverted' }), 1);
			assert.equal(sum(fin, 'secsvc_runbooks_in_phase'), 0, 'no run left counted in a phase');
			assert.equal(sum(fin, 'secsvc_changes_restored_total'), r.changes.filter((c) => c.status === 'restored').length);
			const runs = await chain(h);
			checkRuns(runs, 5);
			assert.equal(runs.length, continues.length + 1);
			await waitFor(
				'secsvc list: one row, done',
				async () => {
					const rows = await listRunbooks(env.client, { site: ids.site_id });
					return rows.length === 1 && rows[0].status === 'COMPLETED' && rows[0].outcome === 'reverted';
				},
				15_000,
				500,
			);
			await replayAll(h.workflowId, runs);
		} finally {
			await op.close();
		}
	},
);

test(
	'abort and maxDurationSeconds in a continued run: abort reverts at once; the maximum counts from the first run',
	{ timeout: 120_000 },
	async () => {
		const [, a, b] = sites;
		const op = operatorClient(sim.url);
		try {
			const snapA = await liveSettings(op, a);
			const snapB = await liveSettings(op, b);
			sim.sim.startAttack({ site_id: a.site_id, duration: 0, sources: ATTACK_SOURCES });
			sim.sim.startAttack({ site_id: b.site_id, duration: 0, sources: ATTACK_SOURCES });
			const hA = await startAttackResponse(env.client, queue, plan(a, { maxDurationSeconds: 600, execution: TINY }));
			// B: the attack never ends; 12 s of mitigation is the most it may keep (several runs of ~5 s each).
			const hB = await startAttackResponse(env.client, queue, plan(b, { maxDurationSeconds: 12, execution: TINY }));
			await waitFor('A continued twice', async () => (await continued(hA)) >= 2, 60_000);
			await abort(env.client, a.site_id, 'alice', 'test: abort a continued runbook');
			const rA = (await hA.result()) as AttackResponseResult;
			assert.equal(rA.outcome, 'aborted-reverted');
			assert.deepEqual(comparable(await liveSettings(op, a)), comparable(snapA));
			assert.ok(rA.audit.some((x) => x.step === 'signal' && x.what === 'abort' && x.result === 'alice'));
			checkRuns(await chain(hA), 3);

			const rB = (await hB.result()) as AttackResponseResult;
			assert.equal(rB.outcome, 'max-duration-reverted');
			assert.deepEqual(comparable(await liveSettings(op, b)), comparable(snapB));
			const mitigated = Date.parse(rB.marks?.mitigatedAt ?? '');
			const ended = Date.parse(rB.audit.find((x) => x.what.startsWith('MAXIMUM DURATION REACHED'))?.at ?? '');
			assert.ok(
				ended - mitigated >= 12_000 && ended - mitigated < 20_000,
				`the maximum ended the wait ${ended - mitigated} ms after the mitigation`,
			);
			const runsB = await chain(hB);
			checkRuns(runsB, 2);
			await replayAll(hB.workflowId, runsB);
		} finally {
			await op.close();
		}
	},
);

test('a carried state that the runbook did not write fails the run at once, naming the field; nothing is written', async () => {
	const ids = sites[0];
	const seq = sim.sim.requests().at(-1)?.seq ?? 0;
	// a forged carry: the typed client never sends one (it starts from a plan), so the start names the type itself
	const h = await env.client.workflow.start<typeof attackResponse>(WORKFLOW_TYPE.attackResponse, {
		taskQueue: queue,
		workflowId: `can-forged-${process.pid}`,
		args: [{ plan: plan(ids), carry: { v: 1, startedMs: Date.now(), state: { phase: 'reverting' } } as never }],
	});
	await assert.rejects(h.result(), (e: unknown) =>
		/carry\.state: must be a runbook state in phase 'waiting'/.test(String((e as { cause?: Error }).cause?.message)),
	);
	assert.equal(
		sim.sim.requests({ since: seq }).filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'))
			.length,
		0,
	);
});

/** The runbook as it was before continue-as-new: a copy of workflows/ whose wait never calls continueIfFull. */
function oldBuild(): string {
	oldRoot = join(ROOT, '.tmp', 'continue-as-new-old-build'); // .tmp/ is git-ignored
	rmSync(oldRoot, { recursive: true, force: true });
	mkdirSync(oldRoot, { recursive: true });
	const dir = join(oldRoot, 'workflows');
	cpSync(join(ROOT, 'workflows'), dir, { recursive: true });
	symlinkSync(join(ROOT, 'api'), join(oldRoot, 'api'));
	const file = join(dir, 'attackResponse', 'wait.mts');
	const src = readFileSync(file, 'utf8');
	const call = '\t\tawait continueIfFull(rb, ctx);\n';
	assert.ok(src.includes(call), 'the continue call found in wait.mts');
	writeFileSync(file, src.replace(call, ''));
	// Nor did it know the patch (asked in the run's first activation since 84d3303): it never recorded its marker.
	const entry = join(dir, 'attackResponse', 'attackResponse.mts');
	const ask = 'continueAsNew: patched(CONTINUE_PATCH),';
	const main = readFileSync(entry, 'utf8');
	assert.ok(main.includes(ask), 'the continue patch found in attackResponse.mts');
	writeFileSync(entry, main.replace(ask, 'continueAsNew: false,'));
	return dir;
}

test(
	'a history recorded without continue-as-new that waited past the threshold replays unchanged',
	{ timeout: 120_000 },
	async () => {
		const ids = sites[3];
		const oldQueue = uniqueQueue('can-old');
		workers.push(
			await startWorkerProcess({
				temporalAddress: env.address,
				taskQueue: oldQueue,
				simUrl: sim.url,
				appId: APP_ID,
				secret: SECRET,
				env: { SECSVC_WORKFLOWS_DIR: oldBuild(), SECSVC_DEPLOYMENT_NAME: `secsvc-can-old-${process.pid}` },
			}),
		);
		const attack = sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(env.client, oldQueue, plan(ids, { cooldownSeconds: 1, execution: TINY }));
		await waitFor(
			'the old code waited well past the threshold',
			async () => (await h.describe()).historyLength >= TINY.continueAsNewAfterEvents + 60,
			60_000,
			500,
		);
		sim.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const runs = await chain(h);
		assert.equal(runs.length, 1, 'the old code never continued as new');
		assert.ok(runs[0].events.length > TINY.continueAsNewAfterEvents + 60);
		await replayAll(h.workflowId, runs); // the current bundle: patched() is false where the history has no marker
	},
);
