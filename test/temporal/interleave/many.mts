/** Many schedules at once on the shared world (one site each), and the failure report: seed, schedule, what happened. */
import { describe, generate } from './schedule.mts';
import { LATE, runSchedule, type Outcome } from './run.mts';
import type { World } from './world.mts';

export interface Summary {
	outcomes: Outcome[];
	failed: Outcome[];
	seconds: number;
	perMinute: number;
	kills: number;
	/** Schedules in which a write of others fell inside a runbook write's own read → write window (invariant.mts). */
	windows: number;
	/** Schedules by what they held (a schedule counts under each of its kinds). */
	kinds: Record<string, { runs: number; failed: number }>;
}

/** Runs seeds first … first+count-1, `concurrency` at a time, schedule i on world.sites[i]. */
export async function runMany(
	w: World,
	o: { first: number; count: number; concurrency: number; onDone?: (x: Outcome, done: number) => void },
): Promise<Summary> {
	if (o.count > w.sites.length)
		throw new Error(`${o.count} schedules want ${o.count} sites; the world has ${w.sites.length}`);
	const t0 = Date.now();
	const outcomes: Outcome[] = [];
	let next = 0;
	const lane = async () => {
		while (next < o.count) {
			const i = next++;
			const x = await runSchedule(w, generate(o.first + i), w.sites[i]);
			outcomes.push(x);
			o.onDone?.(x, outcomes.length);
		}
	};
	await Promise.all(Array.from({ length: Math.min(o.concurrency, o.count) }, lane));
	const seconds = (Date.now() - t0) / 1000;
	const failed = outcomes
		.filter((x) => x.violations.length || x.errors.length)
		.sort((a, b) => a.schedule.seed - b.schedule.seed);
	const kinds: Summary['kinds'] = {};
	for (const x of outcomes)
		for (const k of kindsOf(x)) {
			const e = (kinds[k] ??= { runs: 0, failed: 0 });
			e.runs++;
			if (x.violations.length) e.failed++;
		}
	return {
		outcomes,
		failed,
		seconds,
		perMinute: (outcomes.length / seconds) * 60,
		kills: outcomes.reduce((n, x) => n + x.kills, 0),
		windows: outcomes.filter((x) => x.windows.length).length,
		kinds,
	};
}

/** What a schedule exercised: the anchor and actor of each step, and its gate. */
export function kindsOf(x: Outcome): string[] {
	const k = new Set<string>([`gate:${x.schedule.gate}`]);
	for (const st of x.schedule.steps) {
		const a = st.act;
		const what = 'op' in a ? `${a.actor}.${a.op}` : a.actor;
		k.add(`${st.at}:${what}`);
	}
	return [...k].sort();
}

/**
 * What the failed schedules did, by kind: a violation broke the invariant; a runbook past the 150 s bound with no
 * violation missed the liveness bound (not a broken invariant); any other error is named as an error.
 */
export function failedWhat(failed: Outcome[], count: number): string {
	const late = (x: Outcome) => x.errors.some((e) => e.startsWith(LATE));
	const broke = failed.filter((x) => x.violations.length).length;
	const missed = failed.filter((x) => !x.violations.length && late(x)).length;
	const other = failed.length - broke - missed;
	return [
		broke && `${broke} of ${count} schedules broke the invariant`,
		missed && `${missed} of ${count} missed the liveness bound (runbook not done within 150 s)`,
		other && `${other} of ${count} failed with an error`,
	]
		.filter(Boolean)
		.join('; ');
}

/** One line per failing schedule: its seed, what it held and what broke. */
export function failureLine(x: Outcome): string {
	const what = [
		...new Set(x.violations.map((v) => `${v.rule}${v.by ? ` by ${v.by}` : ''} ${v.key}`)),
		...x.errors,
	].join('; ');
	return `seed ${x.schedule.seed} [${kindsOf(x).join(' ')}]: ${what}`;
}

export function failureReport(x: Outcome): string {
	return [
		`--- ${describe(x.schedule)}`,
		`site ${x.site}, ${(x.ms / 1000).toFixed(1)} s; rerun: SECSVC_INTERLEAVE_SEED=${x.schedule.seed} SECSVC_INTERLEAVE_COUNT=1`,
		...x.violations.map((v) => `  VIOLATION ${v.rule}: ${v.text}`),
		...x.errors.map((e) => `  ERROR ${e}`),
		'  what happened:',
		...x.trace.map((t) => `    ${t}`),
		'  writes (simulator log):',
		...x.writes.map((t) => `    ${t}`),
	].join('\n');
}
