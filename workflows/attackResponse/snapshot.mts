import type { PlanContext, Runbook } from './context.mts';
import { readSettings, type Need, type Settings } from './live.mts';
import { topThreatSources } from '../pure/ranges.mts';

/** Step 1 — snapshot: every setting the plan touches, the event to act on, and its top attacking sources. */

export type Snapshot = Settings;

export async function takeSnapshot(
	rb: Runbook,
	ctx: PlanContext,
): Promise<{ snap: Snapshot; events?: { events?: unknown[] } }> {
	const { plan } = ctx;
	const need: Need = { detection: plan.detection.rapidMode || plan.detection.thresholds.length > 0, dp: {} };
	for (const dp of plan.domain_ports)
		need.dp[dp] = {
			black: plan.blacklist.enabled,
			white: plan.blacklist.enabled,
			ipAuth: Boolean(plan.ipAuth),
			switches: plan.switches.length > 0,
		};
	let events: { events?: unknown[] } | undefined;
	const eventQuery = plan.event_id
		? { site_id: ctx.site, alert_id: plan.event_id, status: 'all' as const }
		: { site_id: ctx.site, status: 'ongoing' as const, num: '50' };
	// Every snapshot read and the event lookup are independent: one round (plan.execution.parallel).
	const snap = await readSettings(ctx, ctx.readActs, need, [
		async () => void (events = await ctx.readActs['dashboard.ddosEvents'](eventQuery)),
	]);
	rb.log('snapshot', 'snapshot of every setting the plan touches', 'revert restores exactly these values', {
		after: { detectionModel: snap.detection?.model, domainPorts: plan.domain_ports },
	});
	return { snap, events };
}

/** The event to act on: the plan's, or the newest ongoing one of the site. Records its id and start in the state. */
export function pickEvent(
	rb: Runbook,
	ctx: PlanContext,
	events: { events?: unknown[] } | undefined,
): string | undefined {
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
		const ev = ((events?.events ?? []) as { alert_id: string; start_time: number }[]).find(
			(e) => e.alert_id === eventId,
		);
		if (ev) rb.state.eventStart = ev.start_time;
	}
	rb.state.eventId = eventId;
	rb.obs.event(eventId);
	rb.log(
		'snapshot',
		eventId ? `event ${eventId}` : 'no ongoing event found',
		eventId ? 'the runbook acts on this event' : 'blacklisting is skipped without an event',
	);
	return eventId;
}

/** The event's top attacking sources (threat map, the plan's metric), strongest first. */
export async function topSources(ctx: PlanContext, eventId: string | undefined): Promise<string[]> {
	const { plan } = ctx;
	if (!plan.blacklist.enabled || !eventId || !plan.domain_ports.length) return [];
	const detail = await ctx.readActs['dashboard.eventDetail']({ event_id: eventId, module: 'threat_map' });
	return topThreatSources(detail, plan.blacklist.metric, plan.blacklist.topN, plan.blacklist.minPercent).map(
		(i) => i.ip,
	);
}
