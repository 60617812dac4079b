import type { ListEntry } from '../ranges.mts';
import type { PlanContext, Runbook } from './context.mts';
import type { Params } from './settings.mts';

/** Step 1 — snapshot: every setting the plan touches, the event to act on, and its top attacking sources. */

export interface Snapshot {
	detection?: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
	dp: Record<string, { black?: ListEntry[]; white?: ListEntry[]; ipAuth?: Params; switches?: Params }>;
}

export async function takeSnapshot(rb: Runbook, ctx: PlanContext): Promise<{ snap: Snapshot; events?: { events?: unknown[] } }> {
	const { plan, readActs, op, dpParams } = ctx;
	const snap: Snapshot = { dp: {} };
	const needDetection = plan.detection.rapidMode || plan.detection.thresholds.length > 0;
	// Every snapshot read and the event lookup are independent: one round (plan.execution.parallel).
	const reads: (() => Promise<void>)[] = [];
	if (needDetection) reads.push(async () => void (snap.detection = await readActs['detection.getPolicy'](op)));
	for (const dp of plan.domain_ports) {
		const s: Snapshot['dp'][string] = {};
		snap.dp[dp] = s;
		if (plan.blacklist.enabled) {
			reads.push(async () => void (s.black = (await readActs['applicationProtection.ipBlacklist.get'](dpParams(dp)))?.p_info?.ipv4?.black_soc ?? []));
			reads.push(async () => void (s.white = (await readActs['applicationProtection.ipWhitelist.get'](dpParams(dp)))?.p_info?.ipv4?.white_soc ?? []));
		}
		if (plan.ipAuth) reads.push(async () => void (s.ipAuth = await readActs['applicationProtection.authIp.get'](dpParams(dp))));
		if (plan.switches.length) reads.push(async () => void (s.switches = await readActs['applicationProtection.switch.list'](dpParams(dp))));
	}
	let events: { events?: unknown[] } | undefined;
	const eventQuery = plan.event_id ? { site_id: ctx.site, alert_id: plan.event_id, status: 'all' } : { site_id: ctx.site, status: 'ongoing', num: '50' };
	reads.push(async () => void (events = await readActs['dashboard.ddosEvents'](eventQuery)));
	await ctx.all(reads);
	rb.log('snapshot', 'snapshot of every setting the plan touches', 'revert restores exactly these values', {
		after: { detectionModel: snap.detection?.model, domainPorts: plan.domain_ports },
	});
	return { snap, events };
}

/** The event to act on: the plan's, or the newest ongoing one of the site. Records its id and start in the state. */
export function pickEvent(rb: Runbook, ctx: PlanContext, events: { events?: unknown[] } | undefined): string | undefined {
	let eventId = ctx.plan.event_id;
	if (!eventId) {
		const ongoing = ((events?.events ?? []) as { alert_id: string; status: number; start_time: number }[])
			.filter((e) => e.status === 1)
			.sort((a, b) => b.start_time - a.start_time);
		if (ongoing[0]) {
			eventId = ongoing[0].alert_id;
			rb.state.eventStart = ongoing[0].start_time;
		}
	} else {
		const ev = ((events?.events ?? []) as { alert_id: string; start_time: number }[]).find((e) => e.alert_id === eventId);
		if (ev) rb.state.eventStart = ev.start_time;
	}
	rb.state.eventId = eventId;
	rb.obs.event(eventId);
	rb.log('snapshot', eventId ? `event ${eventId}` : 'no ongoing event found', eventId ? 'the runbook acts on this event' : 'blacklisting is skipped without an event');
	return eventId;
}

/** The event's top attacking sources (threat map, the plan's metric), strongest first. */
export async function topSources(ctx: PlanContext, eventId: string | undefined): Promise<string[]> {
	const { plan } = ctx;
	if (!plan.blacklist.enabled || !eventId || !plan.domain_ports.length) return [];
	const detail = await ctx.readActs['dashboard.eventDetail']({ event_id: eventId, module: 'threat_map' });
	// The module's content may come wrapped ({threat_map: {bps, pps}}) or bare ({bps, pps}); accept both.
	const tm = detail?.threat_map ?? detail;
	const items = ((tm?.[plan.blacklist.metric] ?? []) as { ip: string; percent: number; size: string }[])
		.filter((i) => (i.percent ?? 0) >= plan.blacklist.minPercent)
		.sort((a, b) => (b.percent ?? 0) - (a.percent ?? 0) || Number(b.size) - Number(a.size));
	return items.slice(0, plan.blacklist.topN).map((i) => i.ip);
}
