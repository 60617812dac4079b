/**
 * Diagnosis for bench 3 (not in run.mts): where a runbook's time to mitigate goes, step by step. One runbook per
 * API latency on the bench's stack (dev server, compiled worker, simulator in its own process); its history, the
 * site coordinator's history and the simulator's request log (arrival times) on one clock, from the start to the
 * last mitigation write's answer. Prints the timeline and the time of each step.
 *
 *   node --import tsx bench/ttmSteps.mts [--delays 0,20] [--runs 3] [--timeline]
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import type { temporal as T } from '@temporalio/proto';
import { startTemporalDev } from '../demo/stack.mts';
import { benchPlan, plainMitigation, prepare, timeRunbook } from './attack.mts';
import { median, startRunbookStack } from './lib.mts';
import { apiChain, taskCounts } from './ttmCounts.mts';
import { createApiClient } from '../worker/src/service/client.mts';

type Event = T.api.history.v1.IHistoryEvent;
type Mark = import('./ttmCounts.mts').Mark;

const APP_ID = 'bench-attack';
const SECRET = 'bench-attack-secret-1';
const EVENT_TYPES: Record<number, string> = {};

const ms = (e: Event) => {
	const t = e.eventTime as { seconds?: number | { toNumber(): number }; nanos?: number };
	const s = typeof t.seconds === 'number' ? t.seconds : (t.seconds?.toNumber() ?? 0);
	return s * 1000 + (t.nanos ?? 0) / 1e6;
};

/** A local activity's type from its marker (the SDK's marker data: JSON with `activityType`). */
function markerName(e: Event): string {
	const d = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
	if (!d) return 'marker';
	try {
		return `LA ${JSON.parse(Buffer.from(d).toString()).activityType}`;
	} catch {
		return 'marker';
	}
}

function marksOf(events: Event[], prefix: string): Mark[] {
	const types = new Map<number, string>();
	const out: Mark[] = [];
	for (const e of events) {
		const type = EVENT_TYPES[e.eventType as number] ?? String(e.eventType);
		const at = ms(e);
		const id = Number(e.eventId);
		if (type === 'ActivityTaskScheduled') {
			const t = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?';
			types.set(id, t);
			out.push({ at, what: `${prefix}activity scheduled ${t}` });
		} else if (type === 'ActivityTaskStarted' || type === 'ActivityTaskCompleted') {
			const a = e.activityTaskStartedEventAttributes ?? e.activityTaskCompletedEventAttributes;
			out.push({
				at,
				what: `${prefix}activity ${type.slice(12).toLowerCase()} ${types.get(Number(a?.scheduledEventId))}`,
			});
		} else if (type === 'MarkerRecorded') out.push({ at, what: `${prefix}${markerName(e)}` });
		else out.push({ at, what: `${prefix}${type}` });
	}
	return out;
}

const { values } = parseArgs({
	options: {
		delays: { type: 'string', default: '0,20' },
		runs: { type: 'string', default: '3' },
		timeline: { type: 'boolean', default: false },
	},
});
const proto = ((await import('@temporalio/proto')) as unknown as { default: { temporal: typeof T } }).default.temporal;
for (const [k, v] of Object.entries(proto.api.enums.v1.EventType))
	if (typeof v === 'number')
		EVENT_TYPES[v] = k
			.replace(/^EVENT_TYPE_/, '')
			.toLowerCase()
			.split('_')
			.map((w) => w[0].toUpperCase() + w.slice(1))
			.join('');

const temporal = await startTemporalDev();
const { sim, taskQueue, tc, stop } = await startRunbookStack(temporal, APP_ID, SECRET, 'steps');
const api = createApiClient({
	baseUrl: sim.url,
	credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
	connections: 4,
	retries: 0,
});
type Req = { opId?: string; method: string; recvAt?: number };
const apiOnly = (log: Req[]) => log.filter((r) => r.opId && !r.opId.startsWith('authorization.') && r.recvAt);
/** The script's sequential round trips (bench 3's plain script, same plan and latency). */
async function scriptChain(delayMs: number): Promise<number> {
	const ids = await prepare(sim, delayMs);
	await api.call('dashboard.isUnderAttack', { site_id: ids.site_id });
	await sim.control('DELETE', '/requests');
	await plainMitigation(
		(op, p) => api.call(op, p),
		benchPlan(ids),
		(op, p) => api.check(op, p),
	);
	return apiChain(
		apiOnly(await sim.control<Req[]>('GET', '/requests')).map((r) => r.recvAt as number),
		delayMs,
	);
}
try {
	for (const delayMs of String(values.delays).split(',').map(Number)) {
		const steps: Record<string, number[]> = {};
		for (let i = 0; i < Number(values.runs); i++) {
			const rb = await timeRunbook(sim, tc, taskQueue, delayMs, i);
			const hist = (await tc.workflow.getHandle(rb.workflowId).fetchHistory()).events ?? [];
			const coord =
				(
					await tc.workflow
						.getHandle(`site-${rb.site}`)
						.fetchHistory()
						.catch(() => ({ events: [] }))
				).events ?? [];
			const t0 = ms(hist[0]);
			const reqs = apiOnly(await sim.control<Req[]>('GET', '/requests')).map((r) => ({
				at: r.recvAt as number,
				what: `  API ${r.method} ${r.opId}`,
			}));
			const end = t0 + rb.ms;
			const all = [...marksOf(hist, ''), ...marksOf(coord, '    coordinator '), ...reqs]
				.filter((m) => m.at >= t0 - 5 && m.at <= end + 1)
				.sort((a, b) => a.at - b.at);
			if (values.timeline) {
				process.stdout.write(`\n+${delayMs} ms run ${i}: ${rb.ms} ms (load ${loadavg()[0].toFixed(1)})\n`);
				for (const m of all) process.stdout.write(`${(m.at - t0).toFixed(1).padStart(7)}  ${m.what}\n`);
			}
			for (const [k, v] of Object.entries(stepsOf(all, t0, end, delayMs))) (steps[k] ??= []).push(v);
			const counts = {
				...taskCounts(all),
				'sequential API round trips, runbook': apiChain(
					all.filter((m) => /^ *API /.test(m.what)).map((m) => m.at),
					delayMs,
				),
				'sequential API round trips, script': delayMs >= 20 ? await scriptChain(delayMs) : 0,
			};
			for (const [k, v] of Object.entries(counts)) (steps[`count: ${k}`] ??= []).push(v);
		}
		process.stdout.write(
			`\n+${delayMs} ms, median of ${values.runs} (load ${loadavg()
				.map((x) => x.toFixed(1))
				.join(' ')}):\n`,
		);
		for (const [k, v] of Object.entries(steps).sort(([a], [b]) => parseFloat(a) - parseFloat(b)))
			process.stdout.write(
				k.startsWith('count: ')
					? `${String(median(v)).padStart(7)}     ${k.slice(7)} (runs: ${v.join(' / ')})\n`
					: `${median(v).toFixed(1).padStart(7)} ms  ${k}\n`,
			);
	}
} finally {
	await api.close();
	await stop();
	await temporal.stop();
}

/**
 * The steps on the critical path, from observable points: history events (a local activity's marker is written when
 * its workflow task completes, so local activities show through their API requests) and API arrivals (answered
 * `delayMs` later). Each write group (activities scheduled together) splits into Temporal time (scheduled → its
 * first request arrives; its last answer → the next group scheduled) and API time (first arrival → last answer).
 */
function stepsOf(all: Mark[], t0: number, end: number, delayMs: number): Record<string, number> {
	const first = (re: RegExp, after = t0 - 1) => all.find((m) => m.at > after && re.test(m.what))?.at;
	const out: Record<string, number> = {};
	const span = (name: string, a?: number, b?: number) => {
		if (a !== undefined && b !== undefined) out[name] = (out[name] ?? 0) + (b - a);
	};
	// Since patched('hold-beside-snapshot') the hold is a local activity beside the snapshot reads: the first API read
	// comes before any claim activity, and the hold is off the critical path while it answers before the event detail.
	const beside = (first(/API GET/) ?? Infinity) < (first(/activity scheduled coordination\.claim/) ?? Infinity);
	const detailOf = (from?: number) => first(/API GET dashboard\.eventDetail/, from);
	let read0: number | undefined;
	let detail: number | undefined;
	if (beside) {
		read0 = first(/API GET/);
		detail = detailOf(read0);
		const upd1 = first(/coordinator WorkflowExecutionUpdateCompleted/);
		span(
			'1 start → first snapshot read arrives (plan parsed; hold, reads, last-run lookup: local activities)',
			t0,
			read0,
		);
		span(
			'2 hold of the plan settings: coordinator start → Update answered (beside the reads)',
			first(/coordinator WorkflowExecutionStarted/) ?? first(/coordinator WorkflowTaskScheduled/),
			upd1,
		);
		if (upd1 !== undefined && detail !== undefined)
			span(
				'5b hold answered after the event detail (on the critical path)',
				detail + delayMs,
				Math.max(upd1, detail + delayMs),
			);
	} else {
		const claim1 = first(/activity scheduled coordination\.claim/);
		const upd1 = first(/coordinator WorkflowExecutionUpdateCompleted/);
		const claim1Done = first(/activity completed coordination\.claim/);
		span('1 start → first workflow task done (plan parsed: local activity), hold asked', t0, claim1);
		span('2 hold of the plan settings: Update(-with-start) at the coordinator', claim1, upd1);
		span('3 hold: Update answered → claim activity completed', upd1, claim1Done);
		read0 = first(/API GET/, claim1Done);
		span('4 workflow task → first snapshot read arrives (local activity dispatch)', claim1Done, read0);
		detail = detailOf(read0);
	}
	span('5 snapshot reads, one round (API)', read0, detail);
	const claim2 = first(/activity scheduled coordination\.claim/, detail);
	const upd2 = first(/coordinator WorkflowExecutionUpdateCompleted/, claim2);
	const claim2Done = first(/activity completed coordination\.claim/, claim2);
	const write = /activity scheduled (detection|applicationProtection|runbook\.(blacklistAddEach|writeSteps))/;
	const firstWrite = first(write, detail);
	// Since patched('entries-hold-overlaps-writes') the entries' hold runs beside the first write groups.
	const overlapped = firstWrite !== undefined && claim2 !== undefined && firstWrite <= claim2 + 2;
	span(
		'6 event detail (or the hold) answered → planning → workflow task done, writes (or entries hold) asked',
		Math.max((detail ?? 0) + delayMs, beside ? (first(/coordinator WorkflowExecutionUpdateCompleted/) ?? 0) : 0),
		overlapped ? firstWrite : claim2,
	);
	const off = overlapped ? ' (beside the writes: off the critical path)' : '';
	span(`7 hold of the blacklist entries: Update at the coordinator${off}`, claim2, upd2);
	span(`8 hold: Update answered → claim activity completed → next workflow task${off}`, upd2, claim2Done);
	// write groups: activities scheduled within 2 ms of each other
	let prevEnd = overlapped ? firstWrite : claim2Done;
	for (let cur = firstWrite; cur !== undefined; ) {
		const at = cur;
		const name = (all.find((m) => m.at === at)?.what ?? '').replace(/.*scheduled /, '');
		const next = all.find((m) => m.at > at + 2 && write.test(m.what))?.at;
		const stop = next ?? end + 1;
		const reqs = all.filter((m) => m.at >= at && m.at < stop && /^ *API /.test(m.what));
		const kind = /blacklist/.test(name) ? 'blacklist add' : name.replace(/^.*\./, '');
		span(`9 write groups: workflow task after the previous step → scheduled`, prevEnd, at);
		if (reqs.length) {
			span(`10 write groups: scheduled → first request arrives (activity start, client)`, at, reqs[0].at);
			span(
				`11 write groups: API (first request → last answer): ${kind}`,
				reqs[0].at,
				reqs[reqs.length - 1].at + delayMs,
			);
			if (next !== undefined)
				span(
					`12 write groups: last answer → activity completed → next group scheduled`,
					reqs[reqs.length - 1].at + delayMs,
					next,
				);
		}
		prevEnd = next;
		cur = next;
	}
	span('total (start → last mitigation write answered)', t0, end);
	return out;
}
