/**
 * Bench I — the interleaving soak (issue 37 item 4): test/temporal/interleave.test.mts's schedules, many more of them,
 * on the same shared world (one dev server, the runbooks' worker process, the blocks / drift worker, one simulator,
 * one site per schedule). Figures: schedules per minute, schedules that broke the invariant (by seed, and by what
 * they held), worker kills, schedule duration p50 / p95.
 *
 *   node --import tsx bench/interleave.mts [--count 1000] [--seed 1] [--concurrency 24] [--kill-gap 30]
 *                                          [--record "note"]   (--record stores the bench-I rows and results.interleave)
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { pct, recordBench, round, table, type Row } from './lib.mts';
import { startWorld } from '../test/temporal/interleave/world.mts';
import { failureReport, runMany } from '../test/temporal/interleave/many.mts';

const { values } = parseArgs({
	options: {
		count: { type: 'string', default: '1000' },
		seed: { type: 'string', default: '1' },
		concurrency: { type: 'string', default: '24' },
		'kill-gap': { type: 'string', default: '30' },
		record: { type: 'string' },
	},
});
const count = Number(values.count);
const first = Number(values.seed);
const concurrency = Number(values.concurrency);

process.env.SECSVC_INTERLEAVE_TIMELINE = '1'; // every runbook's own timeline (run.mts), for the liveness figures
const w = await startWorld({ sites: count, killGapMs: Number(values['kill-gap']) * 1000 });
const loads: number[] = [];
const sampler = setInterval(() => loads.push(loadavg()[0]), 15_000);
let s: Awaited<ReturnType<typeof runMany>>;
try {
	s = await runMany(w, {
		first,
		count,
		concurrency,
		onDone: (x, done) => {
			if (x.violations.length || x.errors.length) process.stderr.write(`${failureReport(x)}\n`);
			else if (x.windows.length) process.stderr.write(`seed ${x.schedule.seed}: ${x.windows.join('; ')}\n`);
			if (done % 50 === 0) process.stderr.write(`${done}/${count} schedules\n`);
		},
	});
} finally {
	clearInterval(sampler);
	loads.push(loadavg()[0]);
	loads.sort((a, b) => a - b);
	await w.close();
}
const ms = s.outcomes.map((x) => x.ms).sort((a, b) => a - b);
const violated = s.outcomes.filter((x) => x.violations.length);
const errored = s.outcomes.filter((x) => x.errors.length);
const byRule: Record<string, number> = {};
for (const x of violated) for (const r of new Set(x.violations.map((v) => v.rule))) byRule[r] = (byRule[r] ?? 0) + 1;
const failingKinds = Object.entries(s.kinds)
	.filter(([, k]) => k.failed)
	.sort((a, b) => b[1].failed / b[1].runs - a[1].failed / a[1].runs)
	.map(([name, k]) => `${name} ${k.failed}/${k.runs}`);
function seedList(xs: typeof s.outcomes): string {
	return xs
		.map((x) => x.schedule.seed)
		.sort((a, b) => a - b)
		.join(' ');
}
const what = `${count} schedules (seeds ${first}–${first + count - 1}), ${concurrency} at once`;
const rows: Row[] = [
	{
		bench: 'I',
		measure: `${what}: schedules per minute · duration p50 / p95 · worker kills`,
		ours: `${round(s.perMinute, 0)}/min · ${round(pct(ms, 0.5) / 1000, 1)} / ${round(pct(ms, 0.95) / 1000, 1)} s · ${s.kills}`,
		baseline: '—',
		ratio: '—',
		goal: '—',
		met: null,
	},
	{
		bench: 'I',
		measure: `${what}: schedules that broke the invariant (${
			Object.entries(byRule)
				.map(([r, n]) => `${r} ${n}`)
				.join(', ') || 'none'
		}) · that failed otherwise · with a write of others inside a runbook write's own read → write window (accepted)`,
		ours: `${violated.length} · ${errored.length} · ${s.windows}`,
		baseline: '—',
		ratio: '—',
		goal: '0 · 0',
		met: violated.length === 0 && errored.length === 0,
	},
];
/** Liveness (issue 37): where runbooks' time went, on time vs late (test/temporal/interleave/timeline.mts). */
function liveness() {
	const late = s.outcomes.filter((x) => x.lateS !== undefined);
	const onTime = s.outcomes.filter((x) => x.lateS === undefined && x.timeline);
	type K = 'totalS' | 'wftQueueS' | 'actQueueS' | 'actRunS' | 'timerS' | 'afterTimeoutS';
	const p = (xs: typeof s.outcomes, k: K) => {
		const v = xs.map((x) => x.timeline?.[k] ?? 0).sort((a, b) => a - b);
		return `${round(pct(v, 0.5), 1)} / ${round(pct(v, 0.95), 1)}`;
	};
	const parts = (xs: typeof s.outcomes) =>
		Object.fromEntries(
			(['totalS', 'wftQueueS', 'actQueueS', 'actRunS', 'timerS', 'afterTimeoutS'] as const).map((k) => [
				k,
				xs.length ? p(xs, k) : '—',
			]),
		);
	return {
		late: late.length,
		stalled: late.filter((x) => x.lateS === Number.POSITIVE_INFINITY).map((x) => x.schedule.seed),
		/** runbooks with a workflow task timeout: all, and of the late ones */
		withTimeouts: `${s.outcomes.filter((x) => x.timeline?.wftTimeouts).length} of ${s.outcomes.length}; late ${late.filter((x) => x.timeline?.wftTimeouts).length} of ${late.length}`,
		lateBy: late.map((x) => `${x.schedule.seed}: +${round(x.lateS ?? 0, 0)} s`).join(', '),
		/** p50 / p95 seconds of each part of a runbook's history */
		onTime: parts(onTime),
		lateParts: parts(late),
	};
}
const live = liveness();
const result = {
	count,
	first,
	concurrency,
	seconds: round(s.seconds, 1),
	perMinute: round(s.perMinute, 1),
	kills: s.kills,
	durationMs: { p50: pct(ms, 0.5), p95: pct(ms, 0.95), max: ms.at(-1) },
	// seeds as one line each (a soak fails hundreds): rerun one with SECSVC_INTERLEAVE_SEED=N SECSVC_INTERLEAVE_COUNT=1
	violatedSeeds: seedList(violated),
	erroredSeeds: seedList(errored),
	// the API's accepted gap (test/temporal/interleave/invariant.mts `window`), not a break: counted to show how often
	windowSeeds: seedList(s.outcomes.filter((x) => x.windows.length)),
	byRule,
	/** What the failing schedules held, the most often failing first (a schedule counts under each of its kinds). */
	failingKinds: failingKinds.slice(0, 15).join(', '),
	liveness: live,
	/** the 1-min load average, sampled every 15 s over the run: min – median – max */
	load1: `${round(loads[0], 1)} – ${round(pct(loads, 0.5), 1)} – ${round(loads.at(-1) ?? 0, 1)}`,
};
process.stdout.write(`${table(rows)}\n${JSON.stringify(result)}\n`);
if (values.record !== undefined) recordBench({ key: 'interleave', bench: 'I', rows, result, note: values.record });
