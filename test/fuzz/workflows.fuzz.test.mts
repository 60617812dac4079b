// Fuzz straight against Temporal (real dev server, in-process worker, simulator): every workflow
// type started with generated bad inputs (wrong types, empty, huge, negative, zero, NaN, deeply nested, 5 MB
// strings), and every Update and signal of the long-running workflows sent bad inputs. Properties: each run ends
// FAILED within seconds naming a field (the server refuses what exceeds its payload limit at the call), each Update
// is refused and changes nothing, each bad signal changes nothing, no history holds a WorkflowTaskFailed event (no
// task retries), the worker's process stays up with a bounded RSS, and a normal runbook completes alongside. Plus the
// issues' named cases (10 KB site, drift "..", a threshold raised to 999999999999G).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { WorkflowHandle } from '@temporalio/client';
import {
	env,
	useDevServer,
	plan,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	waitFor,
	ATTACK_SOURCES,
	type Ids,
} from '../temporal/helpers.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import type { RunningWorker } from '../../worker/src/process/worker.mts';
import { addBlock } from '../../workflows/blocks/client.mts';
import { decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { failureText } from '../../worker/src/temporal/failureText.mts';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { coordinatorIdFor } from '../../workflows/coordinator/coordination.mts';
import { blocksIdFor } from '../../api/blockRules.ts';
import { setAt } from './hostile.mts';
import { problems } from '../../workflows/input/inputChecks.mts';
import {
	blocksRules,
	coordinatorRules,
	driftRules,
	durableCallRules,
	reportRules,
	runbookStartRules,
	watcherConfigRules,
	watcherInputRules,
} from '../../workflows/input/inputRules.mts';
import { parsePlan } from '../../api/runbook/plan.ts';
import { checkDesiredState } from '../../api/runbook/desired.ts';
import { checkBlockRequest, checkChangeRequest } from '../../api/blockRules.ts';

let sim: RunningSimulator;
let worker: RunningWorker;
const queue = uniqueQueue('wffuzz');
let ids: Ids;
const rss: number[] = [];
const sampler = setInterval(() => rss.push(process.memoryUsage().rss), 250);

useDevServer({
	bundle: false,
	start: async () => {
		sim = await startSim(29);
		ids = sim.sim.firstIds();
		worker = await startInProcessWorker(env, sim.url, queue);
		rss.push(process.memoryUsage().rss);
	},
	stop: async () => {
		clearInterval(sampler);
		await worker?.shutdown();
		await sim?.close();
	},
});

const FIVE_MB = 'z'.repeat(5 << 20);
/** Under the server's 2 MB payload limit: it reaches the workflow, which must refuse it. */
const BIG = 'b'.repeat(1_500_000);
const deep = (n: number): unknown => (n === 0 ? 1 : { a: deep(n - 1) });
/** Bad values: wrong types, empty, huge, negative, zero, NaN (JSON: null), 1e308, deeply nested, path tricks, 5 MB. */
const BAD: unknown[] = [
	null,
	'',
	0,
	-1,
	Number.NaN,
	1e308,
	'1e308',
	3.5,
	true,
	[],
	{},
	[null],
	deep(60),
	'..',
	'a/b',
	'x?y',
	'a\nb',
	'k'.repeat(10_240),
	BIG,
];
const badValue = fc.constantFrom(...BAD);

const site = () => ids.site_id;
const dp = () => ids.domain_port_id;
/** A valid input per workflow type (each field path below is then set to a bad value). */
const BASES: Record<string, { input: () => unknown; paths: string[] }> = {
	attackResponse: {
		input: () => ({ plan: { site_id: site(), customer_id: ids.customer_id, domain_ports: [dp()] }, dryRun: true }),
		paths: ['plan', 'plan.site_id', 'plan.domain_ports', 'plan.cooldownSeconds', 'dryRun'],
	},
	attackWatch: {
		input: () => ({ plan: { site_id: site(), customer_id: ids.customer_id, domain_ports: [dp()] } }),
		paths: ['plan', 'plan.site_id', 'plan.pollSeconds', 'dryRun'],
	},
	driftAudit: {
		input: () => ({ desired: { site_id: site(), domain_ports: { [dp()]: { switches: { p_filt: 1 } } } } }),
		paths: [
			'desired',
			'desired.site_id',
			'desired.domain_ports',
			`desired.domain_ports.x`,
			'desired.detection',
			'enforce',
		],
	},
	durableCall: {
		input: () => ({ op: 'dashboard.isUnderAttack', params: { site_id: site() } }),
		paths: ['op', 'params'],
	},
	attackReport: {
		input: () => ({ site_id: site(), periodHours: 1 }),
		paths: ['site_id', 'periodHours', 'range', 'html'],
	},
	blocks: {
		input: () => ({ site_id: site(), domain_port_id: `fz${Date.now()}` }),
		paths: ['site_id', 'domain_port_id', 'maxPrefix', 'blocks', 'ended'],
	},
	siteCoordinator: { input: () => ({ site_id: `fz${Date.now()}` }), paths: ['site_id', 'holds', 'successors'] },
	fleetWatch: {
		input: () => ({
			config: {
				fleet: 'fz',
				index: 0,
				revision: 'r1',
				settings: { intervalSeconds: 3600, batchSize: 10, concurrency: 2, activities: 'local', ticksPerRun: 10 },
				template: {},
				sites: [{ site_id: 'fuzz-nosite', customer_id: ids.customer_id, domain_ports: [dp()] }],
			},
		}),
		paths: [
			'config',
			'config.settings.batchSize',
			'config.settings.intervalSeconds',
			'config.settings.concurrency',
			'config.sites',
			'config.sites.0.site_id',
			'carry',
		],
	},
};
/** The oracle: the workflow's own pure rules, and the CLI's schemas for plans and desired states. A valid input is skipped. */
const RULES: Record<string, Parameters<typeof problems>[1]> = {
	attackResponse: runbookStartRules,
	attackWatch: runbookStartRules,
	driftAudit: driftRules,
	durableCall: durableCallRules,
	attackReport: reportRules,
	blocks: blocksRules,
	siteCoordinator: coordinatorRules,
	fleetWatch: watcherInputRules,
};
function valid(type: string, input: unknown): boolean {
	if (problems(input, RULES[type], type === 'driftAudit' ? { maxString: 1024, maxList: 1000, maxDepth: 8 } : {}).length)
		return false;
	try {
		if (type === 'attackResponse' || type === 'attackWatch') parsePlan((input as { plan: unknown }).plan);
		if (type === 'driftAudit') checkDesiredState((input as { desired: unknown }).desired);
		if (type === 'durableCall') return false; // its params: the client's rules (every generated case breaks one)
		return true;
	} catch {
		return false;
	}
}

async function taskFailures(h: WorkflowHandle): Promise<number> {
	const hist = await h.fetchHistory();
	return (hist.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes != null).length;
}

let n = 0;
test('every workflow type started with bad input fails the run naming a field, within seconds, without a task retry', async () => {
	const cases = Object.entries(BASES).flatMap(([type, b]) =>
		fc
			.sample(fc.tuple(fc.constantFrom(...b.paths), badValue), { numRuns: 9, seed: 2600 + type.length })
			.map(([path, v]) => ({ type, path, v, input: setAt(b.input() as Record<string, unknown>, path, v) })),
	);
	// The 1.5 MB string on every type at least once, and batchSize 0 (which once blew up the heap).
	for (const type of Object.keys(BASES))
		cases.push({
			type,
			path: BASES[type].paths[0],
			v: BIG,
			input: setAt(BASES[type].input() as Record<string, unknown>, BASES[type].paths[0], BIG),
		});
	cases.push({
		type: 'fleetWatch',
		path: 'config.settings.batchSize',
		v: 0,
		input: setAt(BASES.fleetWatch.input() as Record<string, unknown>, 'config.settings.batchSize', 0),
	});
	type Ended = { ok: true; at: number } | { ok: false; error: unknown; at: number };
	const started: { what: string; field: string; h: WorkflowHandle; t0: number; ended: Promise<Ended> }[] = [];
	let refusedAtCall = 0;
	for (const c of cases) {
		if (valid(c.type, c.input)) continue;
		const what = `${c.type} ${c.path} = ${typeof c.v === 'string' && c.v.length > 40 ? `<${c.v.length} chars>` : JSON.stringify(c.v)?.slice(0, 40)}`;
		try {
			const h = await env.client.workflow.start(c.type, {
				taskQueue: c.type === 'siteCoordinator' ? `${queue}-coordinators` : queue,
				workflowId: `fuzz-${c.type}-${++n}-${Date.now()}`,
				args: [c.input],
			});
			// Each run's end is taken when its result arrives, not when the loop below gets to it (it checks the runs one
			// after another: a late one in the list looked 21 s long at load 30 though it had ended long before).
			const ended = h.result().then(
				(): Ended => ({ ok: true, at: performance.now() }),
				(error: unknown): Ended => ({ ok: false, error, at: performance.now() }),
			);
			started.push({ what, field: c.path.split('.').pop() as string, h, t0: performance.now(), ended });
		} catch (e) {
			// The server (or gRPC) refuses a payload over its limit (2 MB / 4 MB): nothing runs.
			assert.ok(JSON.stringify(c.input).length > 2e6, `${what}: start refused: ${failureText(e).slice(0, 200)}`);
			refusedAtCall++;
		}
	}
	for (const s of started) {
		const r = await Promise.race([
			s.ended,
			new Promise<{ ok: 'timeout' }>((res) => setTimeout(() => res({ ok: 'timeout' }), 20_000)),
		]);
		assert.equal(r.ok, false, `${s.what}: must fail (${JSON.stringify(r).slice(0, 100)})`);
		const text = failureText((r as { error: unknown }).error);
		const took = (r as Ended).at - s.t0;
		assert.ok(took < 20_000, `${s.what}: ended after ${Math.round(took)} ms`);
		assert.match(text, /invalid [a-z ]+ — /, `${s.what}: ${text.slice(0, 300)}`);
		assert.ok(text.length < 4096, `${s.what}: ${text.length} characters`);
		assert.equal((await s.h.describe()).status.name, 'FAILED', s.what);
		assert.equal(await taskFailures(s.h), 0, `${s.what}: a workflow task failed (would be retried)`);
	}
	assert.ok(started.length >= 60, `${started.length} runs started`);
	// A 5 MB string never reaches a workflow: the client / server refuse the start (gRPC 4 MB, Temporal's 2 MB payload limit).
	const hugeId = `fuzz-5mb-${Date.now()}`;
	const ac = new AbortController();
	const stop = setTimeout(() => ac.abort(), 10_000); // the SDK retries RESOURCE_EXHAUSTED: stop it (no run exists)
	const huge = await env.client
		.withAbortSignal(ac.signal, () =>
			env.client.workflow.start('attackResponse', {
				taskQueue: queue,
				workflowId: hugeId,
				args: [{ plan: { site_id: FIVE_MB } }],
			}),
		)
		.then(
			() => 'started',
			(e: Error) => `refused: ${e.message}`,
		);
	clearTimeout(stop);
	assert.match(huge, /^refused/, huge);
	await assert.rejects(env.client.workflow.getHandle(hugeId).describe(), /not found/i, `5 MB start: ${huge}`);
	console.log(
		`# workflow starts: ${started.length} runs failed naming a field, ${refusedAtCall} refused by the server at the call`,
	);
});

test('Updates and signals with bad input are refused and change nothing; a normal runbook completes alongside', async () => {
	const t0 = performance.now();
	// A normal runbook, awaiting approval (the signals and Updates below go to it), then approved and completed.
	const attack = sim.sim.startAttack({ site_id: site(), duration: 0, sources: ATTACK_SOURCES });
	const rb = await startAttackResponse(
		env.client,
		queue,
		plan(ids, {
			cooldownSeconds: 1,
			pollSeconds: 1,
			ipAuth: undefined,
			switches: [],
			blacklist: { enabled: false },
			detection: { rapidMode: true, thresholds: [] },
			approval: { required: true, timeoutSeconds: 600, approvers: ['alice'] },
		}),
		{ workflowId: `attack-response-${site()}-fuzz-${Date.now()}` },
	);
	await waitFor('awaiting approval', async () => (await rb.query(stateQuery)).phase === 'awaiting-approval');
	// A block (its workflow and the site's coordinator stay up while it lives).
	await addBlock(env.client, queue, site(), dp(), { entry: '192.0.2.77', seconds: 3600, by: 'fuzz', reason: 'fuzz' });
	const blocks = env.client.workflow.getHandle(blocksIdFor(site(), dp()));
	const coord = env.client.workflow.getHandle(coordinatorIdFor(site()));
	const watcher = await env.client.workflow.start('fleetWatch', {
		taskQueue: queue,
		workflowId: `fleet-watch-fz-0-${Date.now()}`,
		args: [BASES.fleetWatch.input()],
	});
	const validCfg = (BASES.fleetWatch.input() as { config: Record<string, unknown> }).config;

	const updates: [WorkflowHandle, string, (v: unknown) => unknown, string[]][] = [
		[rb, 'decide', (v) => v, ['', 'by', 'approved']],
		[rb, 'decide', (v) => ({ approved: true, by: v }), []],
		[watcher, 'fleetConfigure', (v) => v, []],
		[watcher, 'fleetConfigure', (v) => setAt(validCfg, 'settings.batchSize', v), []],
		[watcher, 'fleetConfigure', (v) => setAt(validCfg, 'settings.intervalSeconds', v), []],
		[watcher, 'fleetConfigure', (v) => setAt(validCfg, 'sites', v), []],
		[blocks, 'addBlock', (v) => ({ entry: v, seconds: 60, by: 'x', reason: 'y' }), []],
		[blocks, 'addBlock', (v) => ({ entry: '192.0.2.78', seconds: v, by: 'x', reason: 'y' }), []],
		[blocks, 'addBlocks', (v) => ({ blocks: v }), []],
		[blocks, 'extendBlock', (v) => ({ entry: '192.0.2.77', seconds: v, by: 'x' }), []],
		[blocks, 'removeBlock', (v) => v, []],
		[coord, 'claim', (v) => ({ owner: 'fuzz', mode: 'hold', keys: v }), []],
		[coord, 'claim', (v) => ({ owner: v, mode: 'lease', keys: ['k'] }), []],
		[coord, 'release', (v) => v, []],
		[coord, 'handover', (v) => ({ owner: 'fuzz', keys: v }), []],
	];
	/** Inputs a validator rightly accepts (not bad after all): skipped. */
	const passes = (f: () => unknown) => {
		try {
			f();
			return true;
		} catch {
			return false;
		}
	};
	const acceptable = (name: string, arg: unknown, v: unknown) =>
		(name === 'fleetConfigure' && problems(arg, (r, x) => watcherConfigRules(r, x)).length === 0) ||
		(name === 'addBlock' && passes(() => checkBlockRequest(arg as never))) ||
		(name === 'extendBlock' && passes(() => checkChangeRequest(arg as never, true))) ||
		((name === 'claim' || name === 'handover') && Array.isArray(v) && v.length === 0) ||
		(name === 'claim' && typeof v === 'string' && v.length > 0 && v.length <= 500);
	let refused = 0;
	let atCall = 0;
	for (const [h, name, make] of updates)
		for (const v of BAD) {
			const arg = make(v);
			if (acceptable(name, arg, v)) continue;
			try {
				await h.executeUpdate(name, { args: [arg] });
				assert.fail(`${name} ${JSON.stringify(arg)?.slice(0, 80)}: accepted`);
			} catch (e) {
				const msg = String((e as { cause?: Error }).cause?.message ?? (e as Error).message);
				if (typeof v === 'string' && v.length > 2e6)
					atCall++; // over the server's payload limit: refused at the call
				else {
					assert.match(msg, /^[\w.[\]()]+: /, `${name} ${JSON.stringify(arg)?.slice(0, 80)}: ${msg.slice(0, 200)}`);
					refused++;
				}
			}
		}
	const signals: [WorkflowHandle, string, (v: unknown) => unknown][] = [
		[rb, 'approve', (v) => v],
		[rb, 'approve', (v) => ({ approved: true, by: v })],
		[rb, 'extendCooldown', (v) => ({ seconds: v })],
		// an abort without a reason is a valid abort: every reason sent here breaks the rule (not text, or too long)
		[
			rb,
			'abort',
			(v) => ({ reason: v === null || Number.isNaN(v) ? 3 : typeof v === 'string' && v.length <= 1000 ? { v } : v }),
		],
		[blocks, 'handedOver', (v) => ({ site_id: site(), keys: v })],
		[coord, 'releaseKeys', (v) => ({ owner: v, keys: ['k'] })],
	];
	let sent = 0;
	for (const [h, name, make] of signals)
		for (const v of BAD) {
			try {
				await h.signal(name, make(v));
				sent++;
			} catch (e) {
				assert.ok(typeof v === 'string' && v.length > 2e6, `${name}: ${String((e as Error).message).slice(0, 200)}`);
			}
		}
	const st = await rb.query(stateQuery);
	assert.equal(
		st.phase,
		'awaiting-approval',
		`the runbook still waits: no bad signal decided, aborted or extended: ${JSON.stringify(await rb.query('audit')).slice(-1500)}`,
	);
	assert.equal(st.aborted, false);
	assert.equal(st.extraCooldownSeconds, 0);
	assert.ok((st.refusedSignals ?? 0) >= 3 * (BAD.length - 1), `refused signals: ${st.refusedSignals}`);
	for (const h of [blocks, coord, watcher]) assert.equal((await h.describe()).status.name, 'RUNNING', h.workflowId);
	const bl = (await blocks.query('blocks')) as { range: string; state: string }[];
	assert.deepEqual(
		bl.map((b) => [b.range, b.state]),
		[['192.0.2.77', 'active']],
		'the block is as it was',
	);

	// The normal runbook completes.
	await decide(env.client, rb.workflowId, { approved: true, by: 'alice', via: 'api' });
	await waitFor('mitigating', async () => (await rb.query(stateQuery)).phase === 'waiting');
	sim.sim.stopAttack(attack.id);
	const r = (await rb.result()) as AttackResponseResult;
	assert.equal(r.outcome, 'reverted');
	for (const h of [rb, blocks, coord, watcher])
		assert.equal(await taskFailures(h), 0, `${h.workflowId}: a workflow task failed`);
	await watcher.terminate('fuzz done');
	await env.client.workflow
		.getHandle(blocks.workflowId)
		.executeUpdate('removeBlock', { args: [{ entry: '192.0.2.77', by: 'fuzz' }] });
	console.log(
		`# updates refused: ${refused} (+${atCall} over the payload limit), bad signals sent: ${sent}, ${Math.round(performance.now() - t0)} ms`,
	);
});

test("the issues' named cases: a 10 KB site fails (not TERMINATED), drift '..' is refused, a threshold raise is refused", async () => {
	const bigSite = await env.client.workflow.start('attackResponse', {
		taskQueue: queue,
		workflowId: `fuzz-10k-${Date.now()}`,
		args: [{ plan: { site_id: 'k'.repeat(10_240), customer_id: ids.customer_id, domain_ports: [dp()] } }],
	});
	const drift = await env.client.workflow.start('driftAudit', {
		taskQueue: queue,
		workflowId: `fuzz-drift-${Date.now()}`,
		args: [{ desired: { site_id: '..' } }],
	});
	const raise = await env.client.workflow.start('attackResponse', {
		taskQueue: queue,
		workflowId: `fuzz-raise-${Date.now()}`,
		args: [
			{
				plan: {
					site_id: site(),
					customer_id: ids.customer_id,
					domain_ports: [dp()],
					detection: { rapidMode: false, thresholds: [{ name: 'tcp_syn', high_pps: '999999999999G' }] },
					blacklist: { enabled: false },
				},
				dryRun: true,
			},
		],
	});
	const writesBefore = sim.sim
		.requests()
		.filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.')).length;
	for (const [h, re] of [
		[bigSite, /invalid plan — site_id: must be at most 128 characters/],
		[drift, /invalid desired state — desired\.site_id: must be 1–128 characters/],
		[
			raise,
			/invalid plan — detection\.thresholds\.0\.high_pps: 999999999999G is above the live \S+; a runbook only lowers thresholds/,
		],
	] as const) {
		const err = await h.result().then(
			() => undefined,
			(e: unknown) => e,
		);
		assert.match(failureText(err), re, h.workflowId);
		assert.equal((await h.describe()).status.name, 'FAILED', h.workflowId);
		assert.equal(await taskFailures(h), 0, h.workflowId);
	}
	assert.equal(
		sim.sim.requests().filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.')).length,
		writesBefore,
		'nothing written',
	);
});

test("the worker's RSS stayed bounded", () => {
	const max = Math.max(...rss);
	const first = rss[0];
	console.log(`# RSS: first ${Math.round(first / 1e6)} MB, max ${Math.round(max / 1e6)} MB`);
	assert.ok(max - first < 400e6, `RSS grew by ${Math.round((max - first) / 1e6)} MB`);
});
