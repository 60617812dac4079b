import type { Change } from '../../api/runbook/contract.ts';
import { ITEM_TYPE, THRESHOLD_FIELDS } from '../../api/runbook/planItems.ts';
import { blastRadiusIssues, DEFAULT_WIDEST_PREFIX, type BlastRadiusPolicy } from '../../api/blastRadius.ts';
import { blacklistCandidates, entryRange, formatRange, parseAll, type ListEntry, type Range } from '../pure/ranges.mts';
import { scaleThreshold, thresholdValue } from '../pure/thresholds.mts';
import { ApplicationFailure } from '@temporalio/workflow';
import type { PlanContext, Runbook } from './context.mts';
import type { Snapshot } from './snapshot.mts';
import { findSwitch, ipAuthBody, pickLeaf, sameJson, sameLeaf, type Params } from './settings.mts';
import { detectionLeaf } from './live.mts';

/**
 * A runbook only LOWERS thresholds: a plan value above the live one (e.g. `999999999999G` for tcp_syn) fails the run
 * before anything is written (dry runs too), naming the field. Factors are ≤ 1 by the plan's schema.
 */
function refuseRaise(field: string, wanted: string, live: string): void {
	const w = thresholdValue(wanted);
	const l = thresholdValue(live);
	if (Number.isFinite(w) && Number.isFinite(l) && w > l)
		throw ApplicationFailure.nonRetryable(
			`invalid plan — ${field}: ${wanted} is above the live ${live}; a runbook only lowers thresholds`,
			'ValidationError',
		);
}

/**
 * Step 2 — planning: the changes the plan asks for, against the snapshot (a setting already at the wanted value is
 * not a change). Order: detection mode → detection items → per domain-port blacklist, IP authentication, switches.
 */
export function planChanges(
	rb: Runbook,
	ctx: PlanContext,
	snap: Snapshot,
	sources: string[],
	eventId: string | undefined,
	events?: { events?: unknown[] },
): void {
	rb.phase('planning');
	const add: Add = (c) => rb.changes.push({ ...c, status: 'planned' });
	planDetection(rb, ctx, snap, add);
	const bl = blacklistPlanner(rb, ctx, sources, eventId, events, add);
	for (const dp of ctx.plan.domain_ports) {
		const s = snap.dp[dp];
		bl(dp, s);
		planIpAuth(ctx, dp, s, add);
		planSwitches(rb, ctx, dp, s, add);
	}
}

type Add = (c: Omit<Change, 'status'>) => void;
type DpSnapshot = Snapshot['dp'][string];

function planDetection(rb: Runbook, { plan, op }: PlanContext, snap: Snapshot, add: Add): void {
	if (snap.detection && plan.detection.rapidMode && Number(snap.detection.model) !== 1)
		add({
			id: 'detection.mode',
			kind: 'detectionMode',
			what: 'detection mode',
			target: op,
			before: snap.detection.model,
			after: 1,
			why: 'rapid mode detects the attack faster',
		});
	plan.detection.thresholds.forEach((t, i) => {
		const leaf = detectionLeaf(snap.detection, t.name);
		if (!leaf) {
			rb.log('planning', `detection item ${t.name}`, 'not present in the live policy; left alone');
			return;
		}
		const after: Record<string, unknown> = { ...leaf };
		for (const f of THRESHOLD_FIELDS) {
			if (leaf[f] === undefined) continue;
			if (t[f]) {
				refuseRaise(`detection.thresholds.${i}.${f}`, String(t[f]), String(leaf[f]));
				after[f] = t[f];
			} else if (t.factor !== undefined) after[f] = scaleThreshold(String(leaf[f]), t.factor);
		}
		after.is_enabled = 1;
		if (!sameLeaf(leaf, after))
			add({
				id: `detection.policy.${t.name}`,
				kind: 'detectionPolicy',
				what: `detection thresholds of ${t.name}`,
				target: { ...op, name: t.name, type: ITEM_TYPE[t.name] },
				before: pickLeaf(leaf),
				after: pickLeaf(after),
				why: 'lower thresholds so the attack traffic is caught',
			});
	});
}

/** The blacklist change of one domain-port: the top sources, aggregated, minus whitelist and protected ranges. */
function blacklistPlanner(
	rb: Runbook,
	{ plan, dpParams }: PlanContext,
	sources: string[],
	eventId: string | undefined,
	events: { events?: unknown[] } | undefined,
	add: Add,
) {
	const protectedRanges = parseAll(plan.blacklist.protectedRanges).ranges;
	// The blast-radius guard (api/blastRadius.ts) on each source: special ranges and the site's own addresses the
	// snapshot's events show (site_ip). The worker's client checks again before writing (its configured protected
	// ranges, active mitigations); what it refuses is skipped at apply (apply.mts).
	const refuse = sourceGuard(events);
	return (dp: string, s: DpSnapshot) => {
		if (!plan.blacklist.enabled || !sources.length) return;
		const toRanges = (l: ListEntry[] | undefined) =>
			(l ?? []).map(entryRange).filter((r): r is Range => r !== undefined);
		const cand = blacklistCandidates({
			sources,
			whitelist: toRanges(s.white),
			protectedRanges,
			alreadyListed: toRanges(s.black),
			refuse,
			widestPrefix: DEFAULT_WIDEST_PREFIX,
		});
		for (const sk of cand.skipped) rb.skipped.push({ ...sk, source: `${dp}:${sk.source}` });
		if (cand.add.length)
			add({
				id: `blacklist.${dp}`,
				kind: 'blacklistAdd',
				what: `IP blacklist of ${dp}`,
				target: dpParams(dp),
				before: [],
				after: cand.add.map(formatRange),
				why: `top ${plan.blacklist.topN} attacking sources of event ${eventId} (${plan.blacklist.metric}), aggregated, minus whitelist and protected ranges`,
			});
	};
}

function planIpAuth({ plan, dpParams }: PlanContext, dp: string, s: DpSnapshot, add: Add): void {
	if (!plan.ipAuth || !s.ipAuth) return;
	const want = ipAuthBody(plan.ipAuth as Params);
	const have = ipAuthBody(s.ipAuth);
	if (!sameJson(want, have))
		add({
			id: `ipAuth.${dp}`,
			kind: 'ipAuth',
			what: `IP authentication of ${dp}`,
			target: dpParams(dp),
			before: have,
			after: want,
			why: 'rate-limit sources per IP during the attack',
		});
}

function planSwitches(rb: Runbook, { plan, dpParams }: PlanContext, dp: string, s: DpSnapshot, add: Add): void {
	for (const sw of plan.switches) {
		const node = findSwitch(s.switches, sw.name);
		if (!node) {
			rb.log('planning', `switch ${sw.name} on ${dp}`, 'not present in the switch tree; left alone');
			continue;
		}
		if (Number(node.enable) !== sw.enable)
			add({
				id: `switch.${dp}.${sw.name}`,
				kind: 'switch',
				what: `switch ${sw.name} of ${dp}`,
				target: { ...dpParams(dp), name: sw.name },
				before: Number(node.enable),
				after: sw.enable,
				why: 'plan turns this policy on during the attack',
			});
	}
}

/** The blast-radius guard on one source: its refusal, or undefined (also for the waves during the wait, waves.mts). */
export function sourceGuard(events: { events?: unknown[] } | undefined): (source: string) => string | undefined {
	const guard: BlastRadiusPolicy = { ownAddresses: ownAddressesOf(events) };
	return (source) => {
		const i = blastRadiusIssues(source, 'source', guard).find((x) => x.kind !== 'widest-prefix');
		return i ? `refused by the blast-radius guard: ${i.rule}` : undefined;
	};
}

/** The site's own addresses the events show (`site_ip`), for the blast-radius guard. */
function ownAddressesOf(events: { events?: unknown[] } | undefined): { range: string; source: string }[] {
	const out: { range: string; source: string }[] = [];
	for (const e of (events?.events ?? []) as { site_ip?: unknown; alert_id?: unknown }[])
		if (typeof e?.site_ip === 'string' && e.site_ip && !out.some((o) => o.range === e.site_ip))
			out.push({ range: e.site_ip, source: `site_ip of DDoS event ${String(e.alert_id ?? '?')}` });
	return out;
}
