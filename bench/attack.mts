/**
 * Bench 3: attack-response time to mitigate — the durable runbook (Temporal dev server + worker process, every API
 * call an activity) vs a plain script making the same API calls directly with the client. Both start with an
 * ongoing attack on a freshly reset simulator (its own process) and a warm token; time = start → last mitigation
 * write. The plain script's sequence of operations is checked against the runbook's (simulator request log).
 * Measured without and with an injected API latency (the real service is not on loopback).
 */
import type { Client } from '@temporalio/client';
import { getOperation } from '../api/catalog/index.ts';
import { abortSignal } from '../workflows/attackResponse/messages.mts';
import { ITEM_GROUP, ITEM_TYPE, parsePlan, type PlanInput } from '../api/runbook/plan.ts';
import { blacklistCandidates, formatRange, parseAll } from '../workflows/pure/ranges.mts';
import { scaleThreshold } from '../workflows/pure/thresholds.mts';
import { startAttackResponse } from '../workflows/attackResponse/client.mts';
import { createApiClient } from '../worker/src/service/client.mts';
import type { TemporalDev } from '../demo/stack.mts';
import { loadText, median, round, startRunbookStack, timeToMitigate, type Row, type SimProcess } from './lib.mts';

/** Goals (issue 42): the runbook's time to mitigate at most this many times the script's, by API latency, equal calls. */
export const TTM_GOALS: Record<number, number> = { 20: 1.15, 100: 1.05 };

const APP_ID = 'bench-attack';
const SECRET = 'bench-attack-secret-1';
const SOURCES = [
	{ ip: '203.0.113.10', weight: 3 },
	{ ip: '203.0.113.11', weight: 3 },
	{ cidr: '198.51.100.4/30' },
	{ country: 'CN' },
];

export function benchPlan(ids: { site_id: string; customer_id: string; domain_port_id: string }): PlanInput {
	return {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		detection: {
			rapidMode: true,
			thresholds: [
				{ name: 'udp_total', factor: 0.5 },
				{ name: 'total_traffic', factor: 0.5 },
			],
		},
		blacklist: { enabled: true, topN: 20, metric: 'bps', minPercent: 0, protectedRanges: [] },
		ipAuth: {
			action: 'ratelimit',
			enable: 1,
			mode: 2,
			action_ratelimit: { duration: 300, ratelimit_rps: 50, threshold_rps: 100 },
		},
		switches: [{ name: 'p_auth', enable: 1 }],
		cooldownSeconds: 0,
		pollSeconds: 1,
		activityTimeoutSeconds: 10,
		maxDurationSeconds: 120,
		// BENCH_EXECUTION='{"localActivities":"all","blacklistConcurrency":4}' measures other execution settings
		...(process.env.BENCH_EXECUTION ? { execution: JSON.parse(process.env.BENCH_EXECUTION) } : {}),
	};
}

type Call = (opId: string, params: Record<string, unknown>) => Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The same decisions and API calls as the runbook up to the last mitigation write, as a plain script. It
 * parallelizes exactly as the runbook does when plan.execution.parallel (the default): every snapshot read and the
 * event lookup at once; then the event detail; then the writes in groups (mode → detection items at once →
 * blacklist adds, plan.execution.blacklistConcurrency at once → IP authentication → switches at once). Like the
 * worker's write activities (exact ownership, worker/src/activities/exactWrites.mts), every write reads its setting
 * or list first and is sent only when the live value is not the target yet: a script that must revert exactly what
 * it wrote needs that read too. `check`: the client's checks before a send (the guard's own-address lookup), which
 * the worker's adds run beside their list read.
 */
export async function plainMitigation(call: Call, planInput: PlanInput, check?: Call): Promise<void> {
	const plan = parsePlan(planInput);
	const par = plan.execution.parallel;
	const all = async <T,>(fns: (() => Promise<T>)[]): Promise<T[]> => {
		if (par) return Promise.all(fns.map((f) => f()));
		const out: T[] = [];
		for (const f of fns) out.push(await f());
		return out;
	};
	const site = plan.site_id;
	const op = { customer_id: plan.customer_id, site_id: site, network_id: plan.network_id, host_id: plan.host_id };
	const dps: Record<string, { black: any[]; white: any[]; ipAuth: any; switches: any }> = {}; // eslint-disable-line @typescript-eslint/no-explicit-any
	let pol: any; // eslint-disable-line @typescript-eslint/no-explicit-any
	let evs: any; // eslint-disable-line @typescript-eslint/no-explicit-any
	const reads: (() => Promise<void>)[] = [async () => void (pol = await call('detection.getPolicy', op))];
	for (const dp of plan.domain_ports) {
		const p = { site_id: site, domain_port_id: dp };
		const d = (dps[dp] = { black: [], white: [], ipAuth: undefined, switches: undefined });
		reads.push(
			async () =>
				void (d.black = (await call('applicationProtection.ipBlacklist.get', p))?.p_info?.ipv4?.black_soc ?? []),
		);
		reads.push(
			async () =>
				void (d.white = (await call('applicationProtection.ipWhitelist.get', p))?.p_info?.ipv4?.white_soc ?? []),
		);
		reads.push(async () => void (d.ipAuth = await call('applicationProtection.authIp.get', p)));
		reads.push(async () => void (d.switches = await call('applicationProtection.switch.list', p)));
	}
	reads.push(
		async () => void (evs = await call('dashboard.ddosEvents', { site_id: site, status: 'ongoing', num: '50' })),
	);
	await all(reads);
	const ev = (evs.events as { alert_id: string; status: number; start_time: number }[])
		.filter((e) => e.status === 1)
		.sort((a, b) => b.start_time - a.start_time)[0];
	const detail = await call('dashboard.eventDetail', { event_id: ev.alert_id, module: 'threat_map' });
	const tm = detail?.threat_map ?? detail;
	const sources = ((tm?.[plan.blacklist.metric] ?? []) as { ip: string; percent: number; size: string }[])
		.sort((a, b) => (b.percent ?? 0) - (a.percent ?? 0) || Number(b.size) - Number(a.size))
		.slice(0, plan.blacklist.topN)
		.map((i) => i.ip);
	// a setting's write: its read first, the write only when the live value is not the target (exactSet)
	const exactSet = async (
		read: string,
		readParams: object,
		atTarget: (live: { model?: unknown } | undefined) => boolean,
		write: () => Promise<unknown>,
	) => {
		if (!atTarget(await call(read, readParams as Record<string, unknown>))) await write();
	};
	if (plan.detection.rapidMode && Number(pol.model) !== 1)
		await exactSet(
			'detection.getPolicy',
			op,
			(l) => Number(l?.model) === 1,
			() => call('detection.setMode', { ...op, model: '1' }),
		);
	const items: (() => Promise<void>)[] = [];
	for (const t of plan.detection.thresholds) {
		const leaf = pol[ITEM_GROUP[t.name]][t.name] as Record<string, unknown>;
		const body: Record<string, unknown> = {};
		for (const f of [
			'is_enabled',
			'low_pps',
			'high_pps',
			'low_bps',
			'high_bps',
			'blackhole_bps',
			'blackhole_pps',
			'blackhole_time',
		] as const) {
			if (leaf[f] === undefined) continue;
			body[f] =
				f === 'blackhole_time'
					? Number(leaf[f])
					: ['low_pps', 'high_pps', 'low_bps', 'high_bps'].includes(f)
						? scaleThreshold(String(leaf[f]), t.factor ?? 1)
						: String(leaf[f]);
		}
		body.is_enabled = '1';
		items.push(
			async () =>
				void (await exactSet(
					'detection.getPolicy',
					op,
					() => false,
					() => call('detection.setPolicy', { ...op, name: t.name, type: ITEM_TYPE[t.name], ...body }),
				)),
		);
	}
	await all(items);
	const toRanges = (l: { type: string; ip?: string; start_ip?: string; end_ip?: string }[]) =>
		parseAll(l.map((e) => (e.type === 'range' ? `${e.start_ip}-${e.end_ip}` : String(e.ip)))).ranges;
	await all(
		plan.domain_ports.map((dp) => async () => {
			const p = { site_id: site, domain_port_id: dp };
			const cand = blacklistCandidates({
				sources,
				whitelist: toRanges(dps[dp].white),
				protectedRanges: parseAll(plan.blacklist.protectedRanges).ranges,
				alreadyListed: toRanges(dps[dp].black),
			});
			const k = par ? plan.execution.blacklistConcurrency : 1;
			for (let i = 0; i < cand.add.length; i += k) {
				await Promise.all(
					cand.add.slice(i, i + k).map(async (r) => {
						// like the worker's activity: the list is read before each add, so a repeated add is not a duplicate, and
						// the add's guard (own-address lookup, cached per site) is checked beside that read
						const add = { ...p, ip_black_list: formatRange(r) };
						await Promise.all([
							check?.('applicationProtection.ipBlacklist.add', add),
							call('applicationProtection.ipBlacklist.get', p),
						]);
						await call('applicationProtection.ipBlacklist.add', add);
					}),
				);
			}
		}),
	);
	if (plan.ipAuth) {
		const a = plan.ipAuth;
		await all(
			plan.domain_ports.map(
				(dp) => async () =>
					void (await exactSet(
						'applicationProtection.authIp.get',
						{ site_id: site, domain_port_id: dp },
						() => false,
						() => call('applicationProtection.authIp.set', { site_id: site, domain_port_id: dp, ...a }),
					)),
			),
		);
	}
	await all(
		plan.domain_ports.flatMap((dp) =>
			plan.switches.map(
				(sw) => async () =>
					void (await exactSet(
						'applicationProtection.switch.list',
						{ site_id: site, domain_port_id: dp },
						() => false,
						() =>
							call('applicationProtection.switch.set', {
								site_id: site,
								domain_port_id: dp,
								name: sw.name,
								enable: sw.enable,
							}),
					)),
			),
		),
	);
}

export async function prepare(sim: SimProcess, delayMs: number) {
	await sim.control('POST', '/reset', {});
	const ids = await sim.control<{ site_id: string; customer_id: string; domain_port_id: string }>('GET', '/ids');
	await sim.control('POST', '/attacks', { site_id: ids.site_id, duration: 0, sources: SOURCES });
	if (delayMs > 0) await sim.control('POST', '/faults', { op: '*', kind: 'delay', delayMs, count: 100_000 });
	return ids;
}

/**
 * The API operations made up to the last mitigation write (time to mitigate ends there; the runbook's polls of the
 * wait that follow are not part of it), tokens and is_under_attack left out.
 */
const opSeq = async (sim: SimProcess) => {
	const ops = (await sim.control<{ opId?: string; method: string }[]>('GET', '/requests'))
		.map((r) => ({ op: r.opId ?? '', write: r.method !== 'GET' }))
		.filter((r) => r.op && !r.op.startsWith('authorization.') && r.op !== 'dashboard.isUnderAttack');
	const lastWrite = ops.map((r) => r.write).lastIndexOf(true);
	return ops.slice(0, lastWrite + 1).map((r) => r.op);
};

/**
 * The runbook's calls against the script's, as multisets (calls made at once arrive in any order). The same calls,
 * plus reads the runbook repeats when a write's record (worker/src/activities/exactWrites.mts) was stored only after
 * the write's read had answered: those re-reads are counted apart (and in the runbook's time); any other difference
 * makes the calls differ.
 */
export function callDiff(runbook: string[], plain: string[]): { same: boolean; reReads: number } {
	const left = new Map<string, number>();
	for (const op of plain) left.set(op, (left.get(op) ?? 0) + 1);
	let reReads = 0;
	for (const op of runbook) {
		const n = left.get(op) ?? 0;
		if (n > 0) left.set(op, n - 1);
		else if (plain.includes(op) && getOperation(op).method === 'GET') reReads++;
		else return { same: false, reReads };
	}
	return { same: [...left.values()].every((n) => n === 0), reReads };
}

/**
 * One runbook on a fresh simulator with an ongoing attack: start → last mitigation write answered (see below).
 * Returns the time, the client-side observation (upper bound) and the API operations the runbook made.
 */
export async function timeRunbook(
	sim: SimProcess,
	tc: Client,
	taskQueue: string,
	delayMs: number,
	i: number,
): Promise<{ ms: number; observedMs: number; seq: string[]; workflowId: string; site: string; t0: number }> {
	const ids = await prepare(sim, delayMs);
	// warm the worker's token: an attack watch on another site (not under attack) makes one API call
	await tc.workflow.execute('attackWatch', {
		taskQueue,
		workflowId: `bench-warm-${Date.now()}`,
		args: [{ plan: { ...benchPlan(ids), site_id: '20002' } }],
	});
	await sim.control('DELETE', '/requests');
	const t0 = Date.now();
	const workflowId = `bench-attack-${t0}-${i}`;
	const h = await startAttackResponse(tc, taskQueue, benchPlan(ids), { workflowId });
	const { ms, observedMs } = await timeToMitigate(sim, h, t0, delayMs);
	const seq = await opSeq(sim);
	await h.signal(abortSignal, { by: 'bench', reason: 'measured' });
	await h.result();
	return { ms, observedMs, seq, workflowId, site: ids.site_id, t0 };
}

export async function benchAttack(temporal: TemporalDev, o: { runs?: number; delays?: number[] } = {}) {
	const runs = o.runs ?? 3;
	const delays = o.delays ?? [0, 20, 100];
	const { sim, taskQueue, tc, stop } = await startRunbookStack(temporal, APP_ID, SECRET, 'attack');
	const api = createApiClient({
		baseUrl: sim.url,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		connections: 4,
		retries: 0,
	});
	const call: Call = (opId, params) => api.call(opId, params);
	const out: {
		delayMs: number;
		runbookMs: number[];
		plainMs: number[];
		observedMs: number[];
		sameCalls: boolean;
		calls: number;
		reReads: number[];
		load: string;
	}[] = [];
	try {
		for (const delayMs of delays) {
			const runbookMs: number[] = [];
			const plainMs: number[] = [];
			const observedMs: number[] = [];
			let sameCalls = true;
			let calls = 0;
			const reReads: number[] = [];
			for (let i = 0; i < runs; i++) {
				// runbook
				const rb = await timeRunbook(sim, tc, taskQueue, delayMs, i);
				runbookMs.push(rb.ms);
				observedMs.push(rb.observedMs);
				const seqRunbook = rb.seq;

				// plain script
				const ids = await prepare(sim, delayMs);
				await call('dashboard.isUnderAttack', { site_id: ids.site_id }); // warm token
				await sim.control('DELETE', '/requests');
				const t1 = performance.now();
				await plainMitigation(call, benchPlan(ids), (opId, params) => api.check(opId, params));
				plainMs.push(performance.now() - t1);
				const seqPlain = await opSeq(sim);
				// the same calls (as a multiset: calls made at once arrive in any order); after its last mitigation write
				// the runbook only polls is_under_attack (filtered out) until the abort
				const d = callDiff(seqRunbook, seqPlain);
				reReads.push(d.reReads);
				if (!d.same) {
					sameCalls = false;
					process.stderr.write(
						`bench 3: calls differ\n runbook ${seqRunbook.join(',')}\n plain   ${seqPlain.join(',')}\n`,
					);
				}
				calls = seqPlain.length;
			}
			out.push({ delayMs, runbookMs, plainMs, observedMs, sameCalls, calls, reReads, load: loadText() });
		}
	} finally {
		await api.close();
		await stop();
	}
	const rows: Row[] = out.map((x) => {
		const rb = median(x.runbookMs);
		const pl = median(x.plainMs);
		const goal = TTM_GOALS[x.delayMs];
		return {
			bench: '3',
			measure: `time to mitigate: runbook vs plain script, ${x.sameCalls ? 'the same' : 'DIFFERENT'} ${x.calls} API calls up to the last mitigation write${x.reReads.some((n) => n > 0) ? ` (+ the runbook's own re-reads, its write record stored after the read: ${x.reReads.join(' / ')})` : ''}, API latency +${x.delayMs} ms (runs ${x.runbookMs.map((m) => Math.round(m)).join(' / ')} vs ${x.plainMs.map((m) => Math.round(m)).join(' / ')} ms; load ${x.load})`,
			ours: `${round(rb, 0)} ms`,
			baseline: `${round(pl, 0)} ms`,
			ratio: `${(rb / pl).toFixed(2)}×`,
			goal: goal ? `≤ ${goal.toFixed(2)}×, equal calls` : '—',
			met: goal ? rb / pl <= goal && x.sameCalls : null,
		};
	});
	return {
		result: out.map((x) => ({
			...x,
			runbookMedianMs: round(median(x.runbookMs), 1),
			plainMedianMs: round(median(x.plainMs), 1),
			ratio: round(median(x.runbookMs) / median(x.plainMs), 3),
		})),
		rows,
	};
}
