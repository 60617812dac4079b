import type { Change } from '../../api/runbook/contract.ts';
import { DEFAULT_WIDEST_PREFIX } from '../../api/blastRadius.ts';
import {
	MAX_SEEN_EVENTS,
	waveChangeId,
	wavesOf,
	type WavesConfig,
	type WaveState,
} from '../../api/runbook/waveRules.ts';
import {
	blacklistCandidates,
	entryRange,
	formatRange,
	parseAll,
	parseEntry,
	topThreatSources,
	type ListEntry,
	type Range,
} from '../pure/ranges.mts';
import { iso, type PlanContext, type Runbook } from './context.mts';
import { readSettings, type Need } from './live.mts';
import { sourceGuard } from './planChanges.mts';
import { errText } from './settings.mts';
import { applyWave } from './waveApply.mts';

/**
 * Second waves (issue 39 item 1): while the runbook waits, each poll that sees the attack reads the site's ongoing
 * events (newest first, plan.blacklist.waves.maxEvents) and their threat maps. Top sources that no entry of this
 * runbook covers (nor a whitelist, a protected range, the guard, another owner's hold, the live blacklist) are a new
 * wave: one blacklist change per domain-port (`blacklist.<dp>.wave<n>`), held at the coordinator, written and owned
 * exactly like the first wave's (waveApply.mts); hold-the-line, the hand-over to expiring blocks and the revert treat
 * it like any other change. The cooldown starts again. Bounded: maxWaves waves, maxEntries entries.
 */
export const WAVES_PATCH = 'runbook-waves';

/** Decided once, when the wait begins (the state carries it): runbooks recorded before it never read waves. */
export function decideWaves(rb: Runbook): WaveState {
	rb.state.waves ??= {
		on: rb.patches.waves,
		n: 1,
		entries: 0,
		events: rb.state.eventId ? [rb.state.eventId] : [],
		log: [],
	};
	return rb.state.waves;
}

interface Ev {
	alert_id: string;
	status: number;
	start_time: number;
	site_ip?: string;
}

/**
 * Checks for a new wave after a poll that saw the attack; blocks it. Returns whether a wave was blocked. A check that
 * got no answer makes the runbook blind from the check's start (`blind`), as a poll does: the service may have stopped
 * answering just after the poll, and the next poll starts only when every attempt of the check has timed out.
 */
export async function checkWave(
	rb: Runbook,
	ctx: PlanContext,
	blind: (error: unknown, startedMs: number) => void,
): Promise<boolean> {
	const w = rb.state.waves;
	const cfg = wavesOf(ctx.plan);
	if (!w?.on || !cfg.follow || !ctx.plan.blacklist.enabled || !ctx.plan.domain_ports.length) return false;
	if (w.n - 1 >= cfg.maxWaves || w.entries >= cfg.maxEntries) return capOnce(rb, w, cfg);
	const startedMs = Date.now();
	const seenAt = iso(startedMs);
	let read: Awaited<ReturnType<typeof readWave>>;
	try {
		read = await readWave(ctx, cfg);
	} catch (e) {
		rb.log('waiting', 'new-wave check: no answer', `${errText(e)}; checked again at the next poll`);
		blind(e, startedMs);
		return false;
	}
	const fresh = read.events.filter((e) => !w.events.includes(e.alert_id)).map((e) => e.alert_id);
	if (fresh.length) {
		w.events = [...w.events, ...fresh].slice(-MAX_SEEN_EVENTS);
		rb.log('waiting', `new event(s) on the site: ${fresh.join(', ')}`, 'their top sources are checked for a new wave');
	}
	const changes = await planWave(rb, ctx, w, read, cfg);
	if (!changes.length) return false;
	const entries = await applyWave(rb, ctx, changes, w.n + 1);
	w.n++; // after its writes: a query that sees the wave sees its entries
	w.entries += entries;
	const events = [...new Set(read.sources.map((s) => s.event))];
	w.log.push({ n: w.n, at: iso(Date.now()), events, entries, firstSeenAt: seenAt });
	if (w.log.length > cfg.maxWaves) w.log.shift();
	return entries > 0;
}

/** The ongoing events (newest first) and the union of their threat maps' top sources, each with its event. */
async function readWave(
	ctx: PlanContext,
	cfg: WavesConfig,
): Promise<{ events: Ev[]; sources: { ip: string; event: string }[]; all: unknown }> {
	const { blacklist } = ctx.plan;
	const all = await ctx.pollActs['dashboard.ddosEvents']({ site_id: ctx.site, status: 'ongoing', num: '50' });
	const events = (((all as { events?: unknown[] })?.events ?? []) as Ev[])
		.filter((e) => e && e.status === 1 && typeof e.alert_id === 'string')
		.sort((a, b) => b.start_time - a.start_time)
		.slice(0, cfg.maxEvents);
	const maps = await ctx.all(
		events.map(
			(e) => () =>
				ctx.pollActs['dashboard.eventDetail']({ event_id: e.alert_id, module: 'threat_map' }) as Promise<unknown>,
		),
	);
	const sources: { ip: string; event: string }[] = [];
	events.forEach((e, i) => {
		for (const t of topThreatSources(maps[i], blacklist.metric, blacklist.topN, blacklist.minPercent))
			if (!sources.some((s) => s.ip === t.ip)) sources.push({ ip: t.ip, event: e.alert_id });
	});
	return { events, sources, all };
}

const rangesOf = (texts: unknown): Range[] => (Array.isArray(texts) ? parseAll(texts as string[]).ranges : []);
const inAny = (ip: string, rs: Range[]) => {
	const r = parseEntry(ip);
	return r !== undefined && rs.some((x) => x.start <= r.start && r.end <= x.end);
};

/** What this runbook already answered on a domain-port: its entries (any wave, theirs since included), holds of others. */
function coveredOn(rb: Runbook, dp: string): Range[] {
	const out: Range[] = [];
	for (const c of rb.changes)
		if (c.kind === 'blacklistAdd' && c.target.domain_port_id === dp)
			out.push(...rangesOf(c.after), ...rangesOf(c.written?.notOurs), ...rangesOf(c.live));
	const prefix = `${dp}/blacklist/`;
	for (const h of rb.heldByOthers) if (h.key.startsWith(prefix)) out.push(...rangesOf([h.key.slice(prefix.length)]));
	return out;
}

/** The wave's changes: per domain-port, the new sources under the same guard and bounds as the first wave's. */
async function planWave(
	rb: Runbook,
	ctx: PlanContext,
	w: WaveState,
	read: Awaited<ReturnType<typeof readWave>>,
	cfg: WavesConfig,
): Promise<Change[]> {
	const { plan } = ctx;
	const protectedRanges = parseAll(plan.blacklist.protectedRanges).ranges;
	const freshOn = new Map<string, string[]>();
	for (const dp of plan.domain_ports) {
		const covered = [...coveredOn(rb, dp), ...protectedRanges];
		const ips = read.sources
			.map((s) => s.ip)
			.filter((ip) => !inAny(ip, covered) && !rb.skipped.some((k) => k.source === `${dp}:${ip}`));
		if (ips.length) freshOn.set(dp, ips);
	}
	if (!freshOn.size) return [];
	const need: Need = { detection: false, dp: {} };
	for (const dp of freshOn.keys()) need.dp[dp] = { black: true, white: true };
	let live;
	try {
		live = await readSettings(ctx, ctx.pollActs, need);
	} catch (e) {
		rb.log('waiting', 'new-wave check: lists not read', `${errText(e)}; checked again at the next poll`);
		return [];
	}
	const refuse = sourceGuard(read.all as { events?: unknown[] });
	const toRanges = (l: ListEntry[] | undefined) => (l ?? []).map(entryRange).filter((r): r is Range => r !== undefined);
	let room = cfg.maxEntries - w.entries;
	const out: Change[] = [];
	const n = w.n + 1;
	for (const [dp, ips] of freshOn) {
		const cand = blacklistCandidates({
			sources: ips,
			whitelist: toRanges(live.dp[dp]?.white),
			protectedRanges,
			alreadyListed: toRanges(live.dp[dp]?.black),
			refuse,
			widestPrefix: DEFAULT_WIDEST_PREFIX,
		});
		for (const sk of cand.skipped) rb.skipped.push({ ...sk, source: `${dp}:${sk.source}` });
		const add = cand.add.slice(0, Math.max(0, room)).map(formatRange);
		room -= add.length;
		if (!add.length) continue;
		out.push({
			id: waveChangeId(dp, n),
			kind: 'blacklistAdd',
			what: `IP blacklist of ${dp} (wave ${n})`,
			target: ctx.dpParams(dp),
			before: [],
			after: add,
			why: `wave ${n}: new top sources of event(s) ${[...new Set(read.sources.filter((s) => ips.includes(s.ip)).map((s) => s.event))].join(', ')} (${plan.blacklist.metric}), aggregated, minus whitelist and protected ranges`,
			status: 'planned',
		});
	}
	return out;
}

/** The wave cap is said once in the audit; later waves are left to the operator (a new runbook, or a higher cap). */
function capOnce(rb: Runbook, w: WaveState, cfg: WavesConfig): false {
	if (!w.capped) {
		w.capped = true;
		rb.log(
			'waiting',
			`WAVE CAP REACHED (${w.n - 1} wave(s), ${w.entries} entries)`,
			`plan.blacklist.waves.maxWaves ${cfg.maxWaves} / maxEntries ${cfg.maxEntries}: later waves are not blocked by this runbook`,
		);
	}
	return false;
}
