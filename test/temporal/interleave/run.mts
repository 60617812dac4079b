/**
 * Runs one schedule on its own site: the attack and the runbook, each step at its anchor, then waits until every
 * actor is done (runbook result, blocks expired, drift finished) and checks the invariant from the simulator's log
 * and the site's final settings.
 */
import type { Client } from '../../../api/client.ts';
import type { LogEntry } from '../../../simulator/index.mts';
import { decide, startAttackResponse } from '../../../workflows/attackResponse/client.mts';
import { blocksShardId } from '../../../api/blockShards.ts';
import type { AttackResponseResult, Change } from '../../../api/runbook/contract.ts';
import { plan, type Ids } from '../helpers.mts';
import { SOURCES, type Schedule } from './schedule.mts';
import { Run } from './actors.mts';
import { check, settingValues, unknownKeys, writesOf, type Values, type Violation } from './invariant.mts';
import type { World } from './world.mts';
import { timelineOf, timelineText, type Timeline } from './timeline.mts';

export interface Outcome {
	schedule: Schedule;
	site: string;
	violations: Violation[];
	/** A step or the runbook failed in a way the test does not expect (not an invariant violation). */
	errors: string[];
	/** What happened, in order (steps as run, the runbook's outcome). */
	trace: string[];
	/** The site's writes as the invariant read them: seq, caller, op. */
	writes: string[];
	/** Writes of others inside a runbook write's own read → write window (the API's accepted gap: invariant.mts). */
	windows: string[];
	ms: number;
	kills: number;
	/** The runbook's own history: where its time went (late runbooks; every one with SECSVC_INTERLEAVE_TIMELINE). */
	timeline?: Timeline;
	/** Seconds after the 150 s bound a late runbook finished (Infinity: not within 300 s more). */
	lateS?: number;
}

/** The error of a runbook past the liveness bound (many.mts tells it from a broken invariant). */
export const LATE = 'the runbook did not finish within 150 s';

/** `p`, or `undefined` after `ms` (the timer is cleared either way: nothing keeps the process alive). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
	let timer: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
	} finally {
		clearTimeout(timer);
	}
}

export async function readValues(c: Client, ids: Ids): Promise<Values> {
	const op = { customer_id: ids.customer_id, site_id: ids.site_id, network_id: '0', host_id: '0' };
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const [pol, bl, ipAuth, sw] = await Promise.all([
		c.call('detection.getPolicy', op),
		c.call('applicationProtection.ipBlacklist.get', dp),
		c.call('applicationProtection.authIp.get', dp),
		c.call('applicationProtection.switch.list', dp),
	]);
	const p = pol as unknown as Record<string, Record<string, Record<string, unknown>>>;
	return settingValues(ids.domain_port_id, {
		model: (pol as { model: unknown }).model,
		leaves: { tcp_syn: p.tcp.tcp_syn, total_traffic: p.total_traffic.total_traffic },
		blacklist: (bl as { p_info: { ipv4: { black_soc: Record<string, unknown>[] } } }).p_info.ipv4.black_soc,
		ipAuth: ipAuth as unknown as Record<string, unknown>,
		pAuth: (sw as unknown as Record<string, { enable: unknown }>).p_auth.enable,
	});
}

/** The log entries after `from` (the log is in seq order), of this site. */
function siteLog(w: World, from: number, site: string): LogEntry[] {
	const log = w.sim.sim.log;
	let lo = 0;
	let hi = log.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (log[mid].seq <= from) lo = mid + 1;
		else hi = mid;
	}
	const mark = `/site/${site}/`;
	return log.slice(lo).filter((e) => e.path.includes(mark));
}

export async function runSchedule(w: World, s: Schedule, ids: Ids): Promise<Outcome> {
	const from = w.sim.sim.log.at(-1)?.seq ?? 0;
	const initial = await readValues(w.n8n, ids);
	const run = new Run(w, s, ids);
	let result: AttackResponseResult | undefined;
	try {
		result = await drive(run);
	} catch (e) {
		run.errors.push(`schedule: ${(e as Error).message}`);
	}
	const killed = w.kills.filter((k) => k >= run.t0).map((k) => `+${((k - run.t0) / 1000).toFixed(1)}s`);
	if (killed.length)
		run.trace.push(`(the runbooks' worker was SIGKILLed during this schedule at ${killed.join(', ')})`);
	const final = await readValues(w.n8n, ids);
	const log = siteLog(w, from, ids.site_id);
	const windows: string[] = [];
	const violations = check(
		initial,
		final,
		log.flatMap((e) => writesOf(e, w.actorOf)),
		unknownKeys(result?.changes ?? []),
		windows,
	);
	for (const x of windows) run.trace.push(`(read → write window) ${x}`);
	return {
		schedule: s,
		site: ids.site_id,
		violations,
		windows,
		errors: run.errors,
		trace: run.trace,
		writes: writeLines(w, log),
		ms: Date.now() - run.t0,
		kills: run.kills,
		timeline: run.timeline,
		lateS: run.lateS,
	};
}

/**
 * The site's writes for the report, each runbook write with the seq of the runbook's last read of its resource
 * before it (`read #N`): a write of someone else's between the two is inside the read→write window.
 */
function writeLines(w: World, log: LogEntry[]): string[] {
	const lastRead = new Map<string, number>();
	const out: string[] = [];
	for (const e of log) {
		const ws = writesOf(e, w.actorOf);
		if (e.method === 'GET') {
			for (const r of ws) lastRead.set(r.key, e.seq);
			continue;
		}
		if (e.code !== 0 || !e.caller) continue;
		const actor = w.actorOf(e.caller, e.opId?.includes('Blacklist') ? 'bl.' : '');
		const read = [...lastRead].filter(([k]) => ws.some((x) => x.key.startsWith(k))).map(([, seq]) => seq);
		const at = actor === 'runbook' && read.length ? ` (read #${Math.max(...read)})` : '';
		out.push(`#${e.seq} ${actor} ${e.opId} ${JSON.stringify(e.body ?? e.query)}${at}`);
	}
	return out;
}

/**
 * A runbook not done within the bound (an error: the bound stands): where its time went while it is still open, and
 * — in the soak (SECSVC_INTERLEAVE_TIMELINE), not in the CI file, whose time it would cost — whether it finishes within
 * 300 s more (slow) or not (a stall: what it waits on).
 */
async function late(run: Run, h: { workflowId: string; result(): Promise<unknown> }) {
	const open = await timelineOf(run.w.client, h.workflowId).catch((e) => (e as Error).message);
	const at = `at the bound: ${typeof open === 'string' ? open : timelineText(open)}`;
	if (!process.env.SECSVC_INTERLEAVE_TIMELINE) {
		run.errors.push(`${LATE} (${at})`);
		return undefined;
	}
	const t1 = Date.now();
	const result = (await within(h.result(), 300_000)) as AttackResponseResult | undefined;
	const after = result ? `done ${((Date.now() - t1) / 1000).toFixed(1)} s later` : 'still not done 300 s later';
	run.timeline = await timelineOf(run.w.client, h.workflowId).catch(() => undefined);
	run.lateS = result ? (Date.now() - t1) / 1000 : Number.POSITIVE_INFINITY;
	run.errors.push(`${LATE} (${after}; ${at})`);
	return result;
}

/** The schedule's course: steps before the runbook, its start, its gate, its wait, the attack's end, every actor done. */
async function drive(run: Run): Promise<AttackResponseResult | undefined> {
	const { w, s, ids } = run;
	await run.anchor('pre');
	const attack = w.sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: SOURCES.map((ip) => ({ ip })) });
	const p = plan(ids, {
		approval: { required: s.gate !== 'none', timeoutSeconds: 120, onTimeout: 'reject', approvers: [] },
		blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0, protectedRanges: [] },
		cooldownSeconds: s.cooldownSeconds,
		execution: { ...s.execution, blacklistConcurrency: 1, continueAsNewAfterEvents: 2000 },
		activityTimeoutSeconds: 5,
		maxDurationSeconds: 180,
	});
	const h = await startAttackResponse(w.client, w.queueR, p);
	run.watch(h);
	run.note(`runbook started (gate ${s.gate})`);
	await run.anchor('start');
	if (s.gate !== 'none') {
		run.note(`phase ${await run.phaseIn(['awaiting-approval', 'done'])}`);
		await run.anchor('gate');
		await decide(w.client, ids.site_id, {
			approved: s.gate === 'approve',
			by: 'oncall-alice',
			reason: s.gate === 'approve' ? undefined : 'interleaving test',
			via: 'api',
		}).catch((e) => run.note(`  decision refused: ${(e as Error).message.slice(0, 120)}`));
		run.note(s.gate);
	}
	run.note(await run.waiting());
	await run.anchor('waiting');
	w.sim.sim.stopAttack(attack.id);
	run.note('attack stopped');
	await run.anchor('stopped');
	let result = (await within(run.result as Promise<unknown>, 150_000)) as AttackResponseResult | undefined;
	if (!result) result = await late(run, h);
	else if (process.env.SECSVC_INTERLEAVE_TIMELINE)
		run.timeline = await timelineOf(w.client, h.workflowId).catch(() => undefined);
	if (result) {
		const unsure = (c: Change) =>
			c.written?.unknown === undefined ? '' : ` (outcome unknown: ${JSON.stringify(c.written.unknown)})`;
		run.note(`runbook ${result.outcome}: ${result.changes.map((c) => `${c.id} ${c.status}${unsure(c)}`).join(', ')}`);
		const n = result.changes.filter((c) => unsure(c)).length;
		if (n) process.stderr.write(`[interleave] seed ${s.seed}: ${n} change(s) of unknown outcome left as they are\n`);
	}
	if (run.blocks)
		run.pending.push(
			w.client.workflow
				.getHandle(blocksShardId(ids.site_id, ids.domain_port_id, 0))
				.result()
				.catch((e) => run.errors.push(`blocks: ${(e as Error).message}`)),
		);
	if (!(await within(Promise.all(run.pending), 120_000))) run.errors.push('blocks/drift still running after 120 s');
	return result;
}
