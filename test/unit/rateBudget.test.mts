/**
 * The request budget's queue (api/rateBudget.ts) on real timers: the rate holds, a higher class never waits behind
 * a lower one, a pause (retry hint) holds everyone, a deadline gives up without a grant; and the worker's
 * api.rateLimit settings (worker/src/process/rateLimitConfig.mts) refuse bad values naming the setting.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateBudget, retryAfterMs } from '../../api/rateBudget.ts';
import { loadRateLimit } from '../../worker/src/process/rateLimitConfig.mts';
import { ConfigError, loadConfig } from '../../worker/src/process/config.mts';

// node timers (the api's default sleep does not keep a process alive; the worker passes these too)
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

test('the rate holds: 12 requests at 20/s with burst 2 take about (12 - 2) / 20 s', async () => {
	const b = new RateBudget({ app: { rps: 20, burst: 2 }, sleep });
	const t0 = Date.now();
	await Promise.all(Array.from({ length: 12 }, () => b.acquire('report')));
	const ms = Date.now() - t0;
	assert.ok(ms >= 450, `12 grants in ${ms} ms: faster than the budget`);
});

test('a mitigation request goes ahead of a queue of polls', async () => {
	const b = new RateBudget({ app: { rps: 10, burst: 2 }, sleep });
	const order: string[] = [];
	const polls = Array.from({ length: 10 }, (_, i) => b.acquire('watch').then(() => order.push(`poll${i}`)));
	await new Promise((r) => setTimeout(r, 150));
	const t0 = Date.now();
	await b.acquire('mitigate').then(() => order.push('write'));
	const waited = Date.now() - t0;
	assert.ok(waited < 200, `the write waited ${waited} ms behind polls`);
	assert.ok(order.indexOf('write') <= 3, `write granted at position ${order.indexOf('write')}: ${order.join(',')}`);
	await Promise.all(polls);
});

test('within a class the oldest `since` goes first, whatever the arrival; without it or later than now, first come first served', async () => {
	const b = new RateBudget({ app: { rps: 50, burst: 1 }, sleep });
	await b.acquire('watch'); // the bucket is empty: the rest wait
	const order: string[] = [];
	const t = Date.now();
	const calls = [
		b.acquire('watch', { since: t - 1000 }).then(() => order.push('1s')),
		b.acquire('watch').then(() => order.push('now-a')),
		b.acquire('watch', { since: 0 }).then(() => order.push('never')),
		b.acquire('watch', { since: t - 9000 }).then(() => order.push('9s')),
		b.acquire('watch', { since: t + 60_000 }).then(() => order.push('not yet due')),
		b.acquire('watch').then(() => order.push('now-b')),
		b.acquire('revert', { since: t }).then(() => order.push('revert')),
	];
	await Promise.all(calls);
	assert.deepEqual(order, ['revert', 'never', '9s', '1s', 'now-a', 'not yet due', 'now-b']);
});

test('a pause holds every class; a deadline gives up without sending', async () => {
	const b = new RateBudget({ app: { rps: 100, burst: 5 }, sleep });
	b.pauseUntil(Date.now() + 400);
	const t0 = Date.now();
	const late = await b.acquire('watch', { deadline: Date.now() + 150 });
	assert.equal(late, false);
	await b.acquire('mitigate');
	assert.ok(Date.now() - t0 >= 380, 'granted during the pause');
});

test('a free turn is taken at once without a promise, counted as acquire counts it; one that must wait is left to acquire', async () => {
	let t = 1_000_000;
	const now = () => t;
	const events: unknown[][] = [[], []];
	const [sync, queued] = [0, 1].map(
		(i) =>
			new RateBudget({
				app: { rps: 1, burst: 2 },
				tenant: { rps: 1, burst: 3 },
				now,
				sleep,
				onWait: (e) => events[i].push(e),
			}),
	);
	// burst 2 leaves 1 token in reserve for the top class: a report needs 2, a mitigation 1
	assert.equal(sync.tryAcquire('report', 'c1'), true);
	assert.equal(await queued.acquire('report', { key: 'c1' }), true);
	assert.equal(sync.tryAcquire('report', 'c1'), false, 'one token left: the reserve, not for a report');
	assert.equal(sync.tryAcquire('mitigate', 'c1', t), false, 'its deadline has come');
	assert.equal(sync.tryAcquire('mitigate', 'c1'), true);
	assert.equal(await queued.acquire('mitigate', { key: 'c1' }), true);
	assert.equal(sync.tryAcquire('mitigate', 'c1'), false, 'the bucket is empty');
	assert.deepEqual(events[0], events[1], 'the same grant events (class, budget, wait 0)');
	assert.deepEqual(sync.granted, queued.granted);
	assert.deepEqual(sync.takeDemand(), queued.takeDemand(), 'refused tries are not counted');
	t += 5000; // full again
	sync.pauseUntil(t + 10);
	assert.equal(sync.tryAcquire('mitigate'), false, 'paused');
	t += 10;
	assert.equal(sync.tryAcquire('mitigate'), true);
	const watch = sync.acquire('watch', { deadline: t + 1 }); // needs 2 tokens, 1 left: it waits
	assert.equal(sync.tryAcquire('mitigate'), false, 'a call waits: the turn is left to acquire, which orders the queue');
	assert.equal(await sync.acquire('mitigate'), true, 'and grants the higher class at once');
	t += 1;
	assert.equal(await watch, false);
	assert.deepEqual(sync.granted, { mitigate: 3, revert: 0, watch: 0, report: 1 });
});

test('the share divides the rate (1/3 of 30/s is 10/s)', () => {
	const b = new RateBudget({ app: { rps: 30, burst: 3 } });
	b.setShare(1 / 3);
	assert.equal(Math.round(b.rate), 10);
});

test('retry hints: seconds, an HTTP date, bounded', () => {
	assert.equal(retryAfterMs({ 'Retry-After': '3' }, 0), 3000);
	assert.equal(retryAfterMs({ 'retry-after': new Date(10_000).toUTCString() }, 4000), 6000);
	assert.equal(retryAfterMs({ 'retry-after': '999999' }, 0), 600_000);
	assert.equal(retryAfterMs({ 'retry-after': 'soon' }, 0), undefined);
	assert.equal(retryAfterMs({}, 0), undefined);
});

test('api.rateLimit: unset is none; 0, negative, not numbers, burst below 1 are refused naming the setting', () => {
	assert.deepEqual(loadRateLimit({}, undefined), { issues: [] });
	assert.equal(
		loadRateLimit({ SECSVC_RATE_LIMIT_RPS: '60', SECSVC_RATE_LIMIT_BURST: '10' }, undefined).config?.burst,
		10,
	);
	const bad: [Record<string, string>, unknown, RegExp][] = [
		[{ SECSVC_RATE_LIMIT_RPS: '0' }, undefined, /^api\.rateLimit\.rps \(SECSVC_RATE_LIMIT_RPS\)/],
		[{}, { rps: -1 }, /^api\.rateLimit\.rps/],
		[{}, { rps: '60' }, /^api\.rateLimit\.rps .*must be a number/],
		[{ SECSVC_RATE_LIMIT_RPS: 'NaN' }, undefined, /SECSVC_RATE_LIMIT_RPS.*must be a number/],
		[{}, { rps: 10, burst: 0.5 }, /^api\.rateLimit\.burst \(SECSVC_RATE_LIMIT_BURST\)/],
		[{}, { burst: 5 }, /^api\.rateLimit\.rps .*required/],
		[{}, { rps: 10, tenant: { rps: 0 } }, /^api\.rateLimit\.tenant\.rps/],
	];
	for (const [env, json, want] of bad) {
		const r = loadRateLimit(env, json);
		assert.equal(r.config, undefined, JSON.stringify([env, json]));
		assert.match(r.issues.map((i) => `${i.field}: ${i.rule}`).join('; '), want);
	}
	const base = { SECSVC_BASE_URL: 'http://127.0.0.1:1', SECSVC_APP_ID: 'a', SECSVC_SECRET: 's' };
	assert.throws(
		() => loadConfig({ ...base, SECSVC_RATE_LIMIT_RPS: '-3' }, undefined),
		(e: unknown) => e instanceof ConfigError && /SECSVC_RATE_LIMIT_RPS/.test(e.message),
	);
});

test('shares by demand: a quiet worker gets what it asks (+25 %), the hungry split the rest; they add up to 1', async () => {
	const { sharesByDemand } = await import('../../worker/src/service/budgetShare.mts');
	const live = new Set(['a', 'b', 'c']);
	const s = sharesByDemand(
		live,
		{ a: { rps: 4, hungry: false, at: 0 }, b: { rps: 30, hungry: true, at: 0 }, c: { rps: 30, hungry: true, at: 0 } },
		60,
	);
	assert.equal(s.get('a'), (1.25 * 4) / 60);
	assert.equal(s.get('b'), s.get('c'));
	assert.ok(Math.abs([...s.values()].reduce((x, y) => x + y, 0) - 1) < 1e-9);
	// no report from a live worker: it counts as hungry (never assumed quiet)
	const u = sharesByDemand(live, { a: { rps: 0, hungry: false, at: 0 } }, 60);
	assert.equal(u.get('a'), 0.25 / 3);
	assert.equal(u.get('b'), (1 - 0.25 / 3) / 2);
	// everyone quiet: each keeps its need and the rest is spread evenly
	const q = sharesByDemand(
		new Set(['a', 'b']),
		{ a: { rps: 1, hungry: false, at: 0 }, b: { rps: 1, hungry: false, at: 0 } },
		60,
	);
	assert.ok(Math.abs((q.get('a') as number) - 0.5) < 1e-9);
});

test('shares by demand: hungry workers split by the calls they keep waiting; a waiting mitigation gets an even share first', async () => {
	const { sharesByDemand } = await import('../../worker/src/service/budgetShare.mts');
	const live = new Set(['a', 'b']);
	const sum = (m: Map<string, number>) => [...m.values()].reduce((x, y) => x + y, 0);
	// a runs three fleet watchers (24 lanes waiting), b one (8): 3 to 1 of what the floors leave, not half each
	const w = sharesByDemand(
		live,
		{
			a: { rps: 28, hungry: true, lowQueue: 24, at: 0 },
			b: { rps: 28, hungry: true, lowQueue: 8, at: 0 },
		},
		57,
	);
	assert.ok(Math.abs(sum(w) - 1) < 1e-9);
	assert.ok(Math.abs(((w.get('a') as number) - 0.125) / ((w.get('b') as number) - 0.125) - 3) < 1e-9);
	// b's runbook writes waited: b gets at least an even share before a's polls get the rest
	const m = sharesByDemand(
		live,
		{
			a: { rps: 50, hungry: true, lowQueue: 24, at: 0 },
			b: { rps: 3, hungry: true, rpsHigh: 3, hungryHigh: true, lowQueue: 0, at: 0 },
		},
		57,
	);
	assert.ok((m.get('b') as number) >= 0.5 - 1e-9);
	assert.ok(Math.abs(sum(m) - 1) < 1e-9);
	// a quiet worker's mitigation rate is met (+25 %) before the hungry split the rest
	const q = sharesByDemand(
		live,
		{
			a: { rps: 50, hungry: true, lowQueue: 24, at: 0 },
			b: { rps: 12, hungry: false, rpsHigh: 12, at: 0 },
		},
		57,
	);
	assert.ok(Math.abs((q.get('b') as number) - (1.25 * 12) / 57) < 1e-9);
	assert.ok(Math.abs(sum(q) - 1) < 1e-9);
});

test("a worker's reported queue holds still through a steady watch's wobble and follows a real change", async () => {
	const { steadyQueue } = await import('../../worker/src/service/budgetShare.mts');
	const q = steadyQueue();
	// a watch of two watchers (16 lanes) measured over six refreshes: one report
	assert.deepEqual([14.6, 12.3, 15.9, 11.1, 15.3, 13.8].map(q), [14.6, 14.6, 14.6, 14.6, 14.6, 14.6]);
	// a third watcher (+8 lanes) is followed within a few refreshes, to within 15 %
	const up = [23.5, 23.5, 23.5, 23.5].map(q);
	assert.ok(up[0] > 14.6 && Math.abs(up[3] - 23.5) <= 0.15 * 23.5, up.join(' '));
	// a watch that stopped decays
	const down = [0, 0, 0, 0, 0, 0].map(q);
	assert.ok(down[5] < 1, down.join(' '));
});

test("the budget reports the lower classes' average queue and the top classes' demand apart", async () => {
	const { RateBudget } = await import('../../api/rateBudget.ts');
	let t = 1000;
	const b = new RateBudget({ app: { rps: 1, burst: 1 }, now: () => t, sleep: () => new Promise(() => {}) });
	b.takeDemand();
	void b.acquire('mitigate'); // takes the one token
	void b.acquire('watch');
	void b.acquire('watch'); // two polls wait
	t += 500;
	const d = b.takeDemand();
	assert.equal(d.asked, 3);
	assert.equal(d.askedHigh, 1);
	assert.equal(d.hungry, true);
	assert.equal(d.hungryHigh, false);
	assert.ok(Math.abs(d.lowQueue - 2) < 1e-9, String(d.lowQueue));
});

test('the top classes are hungry when a call of theirs waited longer than 250 ms, not for the next token', async () => {
	const { RateBudget } = await import('../../api/rateBudget.ts');
	let t = 1000;
	const b = new RateBudget({ app: { rps: 10, burst: 1 }, now: () => t, sleep: () => new Promise(() => {}) });
	b.takeDemand();
	void b.acquire('mitigate'); // the one token
	const next = b.acquire('mitigate'); // waits 100 ms for the next
	t += 100;
	void b.acquire('watch'); // a queue change: the waiter is granted
	assert.equal(await next, true);
	assert.equal(b.takeDemand().hungryHigh, false);
	// a revert still waiting after 300 ms (the bucket emptied by a burst of writes)
	for (let i = 0; i < 5; i++) void b.acquire('mitigate');
	void b.acquire('revert');
	t += 300;
	assert.equal(b.takeDemand().hungryHigh, true);
});

test('two workers whose split moves never hold more than the whole budget between them', async () => {
	const { RateBudget } = await import('../../api/rateBudget.ts');
	const { startClusterShare } = await import('../../worker/src/service/budgetShare.mts');
	// A stand-in for Temporal (not what is tested): both workers polling, and the budget workflow's reports.
	const reports: Record<string, Record<string, unknown>> = {};
	const temporal = {
		workflowService: {
			describeTaskQueue: async () => ({
				pollers: ['a', 'b'].map((identity) => ({ identity, lastAccessTime: { seconds: Date.now() / 1000 } })),
			}),
		},
		workflow: {
			signalWithStart: async (_wf: unknown, o: { signalArgs: [Record<string, unknown>] }) => {
				const r = o.signalArgs[0];
				if (typeof r === 'object') reports[r.worker as string] = { ...r, at: Date.now() };
			},
			getHandle: () => ({ query: async () => ({ pausedUntil: 0, demand: { ...reports } }) }),
		},
	} as never;
	const budgets = ['a', 'b'].map(() => new RateBudget({ app: { rps: 60, burst: 2 } }));
	const shares = budgets.map((b, i) =>
		startClusterShare(b, () => temporal, {
			namespace: 'n',
			taskQueue: 'q',
			identity: ['a', 'b'][i],
			refreshMs: 40 + i * 17,
		}),
	);
	let worst = 0;
	const sample = setInterval(() => {
		worst = Math.max(worst, budgets[0].currentShare + budgets[1].currentShare);
	}, 2);
	try {
		// a keeps 24 polls waiting, b 2; then b 40 and a 4; then back
		const load = (b: InstanceType<typeof RateBudget>, n: number, ms: number) =>
			Array.from({ length: n }, () => b.acquire('watch', { deadline: Date.now() + ms }));
		for (const [na, nb] of [
			[24, 2],
			[4, 40],
			[30, 3],
			[2, 30],
		]) {
			const waits = [...load(budgets[0], na, 600), ...load(budgets[1], nb, 600)];
			await Promise.all(waits);
		}
		assert.ok(worst <= 1 + 1e-9, `the shares added up to ${worst}`);
		assert.ok(budgets[0].currentShare + budgets[1].currentShare > 0.5, 'and the budget is not left idle');
	} finally {
		clearInterval(sample);
		for (const s of shares) s.stop();
	}
});
