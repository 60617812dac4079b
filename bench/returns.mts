/**
 * Bench R (issue 39 item 6): attackers come back. On bench 3's stack (dev server, compiled worker process, simulator
 * in its own process, +20 ms API latency), one site, side by side in each run:
 *  - a FIRST wave: a runbook with bench 3's plan (plus a 10-minute hold-down) against an attack; time to mitigate
 *    (start → last mitigation write answered, bench 3's measure); the attack stops, the runbook reverts;
 *  - a RETURN inside the hold-down, once the first run's site coordinator has closed (a return comes later than
 *    the same second): the same plan against the attack's return (two sources back, two new); same measure; goal
 *    ≤ ⅓ of the first;
 *  - a NEW WAVE during the return's wait (simulator waves: the same alert_id, two new sources from `WAVE_AT` s):
 *    from the wave's first appearance in the threat map to the blacklist add of each new source (both on the
 *    simulator's clock); goal ≤ one poll interval (plan.pollSeconds, 1 s).
 * Each run on a site of its own, so its first wave finds no earlier runbook of the site.
 *
 *   node --import tsx bench/returns.mts [--runs 3] [--delay 20]   (or run.mts --only R)
 */
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { type AttackResponseResult, workflowIdFor } from '../api/runbook/contract.ts';
import { startAttackResponse } from '../workflows/attackResponse/client.mts';
import { sleep, startTemporalDev, type TemporalDev } from '../demo/stack.mts';
import { coordinatorIdFor } from '../workflows/coordinator/coordination.mts';
import { benchPlan } from './attack.mts';
import {
	loadText,
	median,
	round,
	startRunbookStack,
	timeToMitigate,
	writesOf,
	type Row,
	type SimProcess,
	type SimRequest,
} from './lib.mts';

export const RETURN_GOAL = 1 / 3;
const APP_ID = 'bench-returns';
const SECRET = 'bench-returns-secret-1';
const WAVE_AT = 6;
const ip = (n: number) => `203.0.113.${n}`;
const FIRST = [{ ip: ip(10), weight: 3 }, { ip: ip(11), weight: 3 }, { cidr: '198.51.100.4/30' }];
const RETURNING = [{ ip: ip(10), weight: 3 }, { ip: ip(11), weight: 3 }, { ip: ip(20) }, { ip: ip(21) }];
const WAVE = [{ ip: ip(10), weight: 3 }, { ip: ip(30) }, { ip: ip(31) }];

type Ids = { site_id: string; customer_id: string; domain_port_id: string };
/** Start → last mitigation write answered (bench 3's measure), and what the run's result says. */
async function mitigate(sim: SimProcess, tc: Client, taskQueue: string, ids: Ids, delayMs: number) {
	await sim.control('DELETE', '/requests');
	const plan = { ...benchPlan(ids), holdDown: { seconds: 600 } };
	const t0 = Date.now();
	const h = await startAttackResponse(tc, taskQueue, plan, { workflowId: workflowIdFor(ids.site_id) });
	const { ms, st, log } = await timeToMitigate(sim, h, t0, delayMs);
	const coord = process.env.BENCH_R_TIMELINE ? await coordinatorRows(tc, ids.site_id) : [];
	return { h, ms, writes: writesOf(log).length, rearm: st.rearm, split: await split(h, t0, ms, [...log, ...coord]) };
}

/** The site coordinator's latest run as simulator-like rows (`coord <event type>`): its start, tasks and Updates. */
async function coordinatorRows(tc: Client, site: string): Promise<SimRequest[]> {
	const events = (await tc.workflow.getHandle(coordinatorIdFor(site)).fetchHistory()).events ?? [];
	return events.map((e) => ({ method: 'coord', opId: String(e.eventType), time: eventMs(e) }));
}

/** A history event's time, ms since the epoch. */
function eventMs(e: { eventTime?: unknown }): number {
	const t = e.eventTime as { seconds?: number | { toNumber(): number }; nanos?: number };
	return (typeof t.seconds === 'number' ? t.seconds : (t.seconds?.toNumber() ?? 0)) * 1000 + (t.nanos ?? 0) / 1e6;
}

/**
 * Where a runbook's time to mitigate goes, from its history: start → its first write scheduled (holds, snapshot,
 * the last-run lookup, the event detail, planning), the last-run lookup alone, and the write groups after it.
 */
async function split(h: Awaited<ReturnType<typeof startAttackResponse>>, t0: number, ms: number, log: SimRequest[]) {
	const events = (await h.fetchHistory()).events ?? [];
	const at = eventMs;
	const start = at(events[0]);
	const sched = events.filter((e) => e.activityTaskScheduledEventAttributes);
	const name = (e: (typeof events)[number]) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
	const firstWrite = sched.find((e) =>
		/^(detection\.|applicationProtection\.|runbook\.(writeSteps|blacklistAddEach))/.test(name(e)),
	);
	const look = sched.find((e) => name(e) === 'runbook.lastRun');
	const lookDone = look
		? events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(look.eventId))
		: undefined;
	const before = firstWrite ? at(firstWrite) - start : NaN;
	if (process.env.BENCH_R_TIMELINE) timeline(events, at, start, t0, ms, log, name);
	return {
		beforeWritesMs: Math.round(before),
		lastRunLookupMs: look && lookDone ? Math.round(at(lookDone) - at(look)) : null,
		writesMs: Math.round(ms - (start - t0) - before),
	};
}

/**
 * The history's events and the simulator's requests on one clock (ms from the run's start event; both processes
 * read this machine's clock; the simulator's to the ms): where each hop of the time to mitigate goes.
 */
function timeline<E extends { eventType?: unknown; markerRecordedEventAttributes?: unknown }>(
	events: E[],
	at: (e: E) => number,
	start: number,
	t0: number,
	ms: number,
	log: SimRequest[],
	name: (e: E) => string,
) {
	const ref = (e: E) => {
		const x = e as { activityTaskStartedEventAttributes?: object; activityTaskCompletedEventAttributes?: object };
		const a = (x.activityTaskStartedEventAttributes ?? x.activityTaskCompletedEventAttributes) as
			| { scheduledEventId?: unknown }
			| undefined;
		return a ? `of ${String(a.scheduledEventId)}` : '';
	};
	const rows = [
		...events
			.filter((e) => e.eventType !== 40 && (e.eventType !== 25 || localText(e)))
			.map((e) => ({ t: at(e) - start, text: `${e.eventType} ${name(e) || localText(e) || ref(e)}` })),
		...log
			.filter((x) => !x.opId?.startsWith('authorization.'))
			.map((r) => ({ t: r.time - start, text: `sim ${r.method} ${r.opId}` })),
	].filter((r) => r.t <= ms + 50);
	console.error(
		`-- run at ${start.toFixed(1)}: the client's start ${(t0 - start).toFixed(1)} ms, time to mitigate ${Math.round(ms)} ms`,
	);
	for (const r of rows.sort((a, b) => a.t - b.t)) console.error(`${r.t.toFixed(1).padStart(7)} ${r.text}`);
}

/**
 * A local activity's marker: its type and number (the order the workflow asked for it). Not its stamps: core's
 * original_schedule_time is the worker's clock, its complete_time workflow time + run time.
 */
function localText(e: { markerRecordedEventAttributes?: unknown }): string {
	const m = e.markerRecordedEventAttributes as
		| { details?: { data?: { payloads?: { data?: Uint8Array }[] } } }
		| undefined;
	const d = m?.details?.data?.payloads?.[0]?.data;
	if (!d) return '';
	const la = JSON.parse(Buffer.from(d).toString()) as { activity_type?: string; seq?: number };
	return la.activity_type ? `local #${la.seq} ${la.activity_type}` : '';
}

/**
 * The new wave's sources, in sim ms from the wave's start: when the first threat-map read after it arrived (the first
 * poll that could see it), and when the add that blocks each source arrived.
 */
function waveTimes(log: SimRequest[], waveStartMs: number, sources: string[]) {
	const seen = log.find((r) => r.opId === 'dashboard.eventDetail' && r.time >= waveStartMs);
	const blocked = sources.map((s) => {
		const add = log.find(
			(r) =>
				r.opId === 'applicationProtection.ipBlacklist.add' &&
				r.time >= waveStartMs &&
				JSON.stringify(r.body ?? '').includes(s),
		);
		return add ? add.time - waveStartMs : undefined;
	});
	// the poll whose round read it: the last is_under_attack sent at or before that read (the wave's answer from its poll)
	const poll = seen && log.filter((r) => r.opId === 'dashboard.isUnderAttack' && r.time <= seen.time).at(-1);
	return {
		seenMs: seen ? seen.time - waveStartMs : undefined,
		pollMs: poll ? poll.time - waveStartMs : undefined,
		blocked,
	};
}

async function settled(tc: Client, workflowId: string) {
	for (let k = 0; k < 100; k++) {
		const d = await tc.workflow
			.getHandle(workflowId)
			.describe()
			.catch(() => undefined);
		if (d?.status.name !== 'RUNNING') return;
		await sleep(100);
	}
}

/** Run i's site (a fresh one each run: a run's first wave must find no earlier runbook of its site), and another. */
async function sitesFor(sim: SimProcess, i: number): Promise<{ ids: Ids; other: string }> {
	const st = await sim.control<{
		customers: { customer_id: string; site_ids: string[] }[];
		sites: { site_id: string; domain_port_ids: string[] }[];
	}>('GET', '/state');
	const all = st.customers.flatMap((c) => c.site_ids.map((site_id) => ({ customer_id: c.customer_id, site_id })));
	const pick = all[i % all.length];
	const site = st.sites.find((x) => x.site_id === pick.site_id);
	if (!site || i >= all.length) throw new Error(`bench R: the simulator's world has only ${all.length} sites`);
	return { ids: { ...pick, domain_port_id: site.domain_port_ids[0] }, other: all[(i + 1) % all.length].site_id };
}

async function oneRun(sim: SimProcess, tc: Client, taskQueue: string, delayMs: number, i: number) {
	await sim.control('POST', '/reset', {});
	const { ids, other } = await sitesFor(sim, i);
	if (delayMs > 0) await sim.control('POST', '/faults', { op: '*', kind: 'delay', delayMs, count: 100_000 });
	// warm the worker's token: an attack watch on another site (not under attack) makes one API call
	await tc.workflow.execute('attackWatch', {
		taskQueue,
		workflowId: `bench-returns-warm-${Date.now()}`,
		args: [{ plan: { ...benchPlan(ids), site_id: other } }],
	});
	const a1 = await sim.control<{ id: string }>('POST', '/attacks', {
		site_id: ids.site_id,
		duration: 0,
		sources: FIRST,
	});
	const first = await mitigate(sim, tc, taskQueue, ids, delayMs);
	await sim.control('POST', `/attacks/${a1.id}/stop`, {});
	const r1 = (await first.h.result()) as AttackResponseResult;
	// A return comes minutes later, not in the same second: the site's coordinator has let go and closed by then.
	await settled(tc, coordinatorIdFor(ids.site_id));

	const a2 = await sim.control<{ id: string; start: number }>('POST', '/attacks', {
		site_id: ids.site_id,
		duration: 0,
		sources: RETURNING,
		waves: [{ at: WAVE_AT, sources: WAVE }],
	});
	const ret = await mitigate(sim, tc, taskQueue, ids, delayMs);
	const waveStartMs = (a2.start + WAVE_AT) * 1000;
	let wave = waveTimes([], waveStartMs, []);
	for (let k = 0; k < 100; k++) {
		await sleep(200);
		wave = waveTimes(await sim.control<SimRequest[]>('GET', '/requests'), waveStartMs, [ip(30), ip(31)]);
		if (wave.blocked.every((x) => x !== undefined)) break;
	}
	await sim.control('POST', `/attacks/${a2.id}/stop`, {});
	const r2 = (await ret.h.result()) as AttackResponseResult;
	return {
		firstMs: first.ms,
		returnMs: ret.ms,
		firstSplit: first.split,
		returnSplit: ret.split,
		firstWrites: first.writes,
		returnWrites: ret.writes,
		preBlocked: ret.rearm?.preBlocked ?? 0,
		returns: ret.rearm?.returns ?? 0,
		firstTtmSeconds: r1.timeToMitigateSeconds,
		returnTtmSeconds: r2.timeToMitigateSeconds,
		waveMs: wave.blocked,
		waveSeenMs: wave.seenMs,
		wavePollMs: wave.pollMs,
		outcomes: [r1.outcome, r2.outcome],
		load: loadText(),
	};
}

export async function benchReturns(temporal: TemporalDev, o: { runs?: number; delayMs?: number } = {}) {
	const runs = o.runs ?? 3;
	const delayMs = o.delayMs ?? 20;
	const { sim, taskQueue, tc, stop } = await startRunbookStack(temporal, APP_ID, SECRET, 'returns');
	const out: Awaited<ReturnType<typeof oneRun>>[] = [];
	try {
		for (let i = 0; i < runs; i++) out.push(await oneRun(sim, tc, taskQueue, delayMs, i));
	} finally {
		await stop();
	}
	const first = median(out.map((x) => x.firstMs));
	const ret = median(out.map((x) => x.returnMs));
	const waves = out.flatMap((x) => x.waveMs);
	const worstWave = waves.some((x) => x === undefined) ? Infinity : Math.max(...(waves as number[]));
	const pollMs = (benchPlan({ site_id: '', customer_id: '', domain_port_id: '' }).pollSeconds ?? 1) * 1000;
	const runsText = (f: (x: (typeof out)[number]) => number) => out.map((x) => Math.round(f(x))).join(' / ');
	const rows: Row[] = [
		{
			bench: 'R',
			measure: `time to mitigate: a return inside the hold-down (${out[0]?.preBlocked} pre-blocked, ${out[0]?.returnWrites} writes) vs the first wave (${out[0]?.firstWrites} writes), one site, API latency +${delayMs} ms (runs ${runsText((x) => x.returnMs)} vs ${runsText((x) => x.firstMs)} ms; load ${out.map((x) => x.load).join(' | ')})`,
			ours: `${round(ret, 0)} ms`,
			baseline: `${round(first, 0)} ms`,
			ratio: `${(ret / first).toFixed(2)}×`,
			goal: '≤ 0.33×',
			met: ret / first <= RETURN_GOAL,
		},
		{
			bench: 'R',
			measure: `a new wave during the return's wait: its 2 new sources blocked after their first appearance in the threat map (simulator clock; ${runs} runs: ${waves.map((x) => (x === undefined ? 'never' : Math.round(x))).join(', ')} ms; the first poll that could see it read the threat map at ${out.map((x) => (x.waveSeenMs === undefined ? '?' : Math.round(x.waveSeenMs))).join(', ')} ms)`,
			ours: `${worstWave === Infinity ? 'never' : `${Math.round(worstWave)} ms`} (worst)`,
			baseline: `${pollMs} ms poll`,
			ratio: `${(worstWave / pollMs).toFixed(2)}×`,
			goal: '≤ 1 poll interval',
			met: worstWave <= pollMs,
		},
	];
	return {
		result: { delayMs, runs: out, firstMedianMs: first, returnMedianMs: ret, ratio: round(ret / first, 3) },
		rows,
	};
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { values } = parseArgs({
		options: { runs: { type: 'string', default: '3' }, delay: { type: 'string', default: '20' } },
	});
	const temporal = await startTemporalDev();
	try {
		const r = await benchReturns(temporal, { runs: Number(values.runs), delayMs: Number(values.delay) });
		console.log(JSON.stringify(r.result, null, 2));
		for (const row of r.rows)
			console.log(
				`${row.measure}\n  ${row.ours} vs ${row.baseline}: ${row.ratio} (goal ${row.goal}) ${row.met ? 'met' : 'NOT met'}`,
			);
	} finally {
		await temporal.stop();
	}
}
