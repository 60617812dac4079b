/**
 * The attack report's content, from a runbook's result (or a period's events): what the HTML report
 * (./html.ts) draws. Pure and dependency-free: used by the CLI, the attack report playbook (workflow code),
 * the demo and the n8n Runbook node.
 */

/** The part of an attack response result (api/runbook/contract.ts AttackResponseResult) the report reads. */
export interface RunbookResultLike {
	outcome: string;
	site_id: string;
	eventId?: string;
	timeToDetectSeconds?: number;
	timeToMitigateSeconds?: number;
	timeToRevertSeconds?: number;
	changes: {
		id: string;
		kind: string;
		what: string;
		before: unknown;
		after: unknown;
		status: string;
		live?: unknown;
		note?: string;
		appliedAt?: string;
		revertedAt?: string;
		written?: { wrote?: unknown; replaced?: unknown; notOurs?: unknown; unknown?: unknown };
	}[];
	skipped: { source: string; reason: string }[];
	audit: { at: string; step: string; what: string; why: string; result?: string }[];
	marks?: {
		startedAt?: string;
		eventStart?: number;
		mitigatedAt?: string;
		attackEndedAt?: string;
		revertedAt?: string;
		decision?: string;
	};
	traffic?: { at: string; underAttack: boolean; bps?: number }[];
	eventTraffic?: { bps?: Record<string, number[][]> };
	error?: string;
}

export type SeriesKind = 'attack' | 'clean' | 'reported';
export type MarkerKind = 'start' | 'detected' | 'mitigated' | 'over' | 'reverted';

export interface ReportModel {
	title: string;
	subtitle: string;
	generatedAt: string;
	outcome?: string;
	/** Time series in bits per second; x in epoch milliseconds. */
	series: { kind: SeriesKind; label: string; points: [number, number][] }[];
	markers: { kind: MarkerKind; label: string; at: number }[];
	times: { label: string; seconds?: number; hint: string }[];
	changes: { setting: string; before: string; applied: string; restored: string; status: string; note?: string }[];
	blacklisted: string[];
	skipped: { source: string; reason: string }[];
	approval?: { decision: string; by?: string; at?: string; reason?: string };
	events?: { id: string; type: string; start: string; end: string; maxBps: number; status: string }[];
	error?: string;
	/** Sentences under the chart: what a series means, and series too thin to draw. */
	notes?: string[];
}

export const SERIES_LABEL: Record<SeriesKind, string> = {
	attack: 'attack traffic (event)',
	clean: 'clean traffic (event)',
	// The service's current-traffic view reports the attack's size at its edge, before mitigation: not what reaches
	// the site, so it can grow after "mitigated" while the mitigation holds.
	reported: 'attack size the service reports (runbook polls, before mitigation)',
};

/** A series needs two samples to show a course; fewer is said in words instead of drawn as a flat line. */
export const MIN_SERIES_POINTS = 2;

export const REPORT_NOTES = {
	reported:
		'The runbook\'s polls show the attack\'s size as the service reports it, before mitigation: not the traffic that reaches the site. It can grow after "mitigated" while the mitigation holds.',
	thin: (label: string, n: number) =>
		`${label}: ${n} sample${n === 1 ? '' : 's'} when the runbook read it (the event had just begun): not drawn.`,
};

export const MARKER_LABEL: Record<MarkerKind, string> = {
	start: 'attack start',
	detected: 'detected',
	mitigated: 'mitigated',
	over: 'attack over',
	reverted: 'reverted',
};

const text = (v: unknown): string => {
	if (v === undefined) return '—';
	if (Array.isArray(v)) return v.map((x) => text(x)).join(', ') || '—';
	if (v && typeof v === 'object')
		return Object.entries(v as Record<string, unknown>)
			.filter(([, x]) => x !== undefined)
			.map(([k, x]) => `${k}: ${x && typeof x === 'object' ? text(x) : String(x)}`)
			.join(', ');
	return String(v);
};

/** Only the fields that differ between before and after (thresholds, IP authentication), both sides. */
function diff(before: unknown, after: unknown): [string, string] {
	if (
		before &&
		after &&
		typeof before === 'object' &&
		typeof after === 'object' &&
		!Array.isArray(before) &&
		!Array.isArray(after)
	) {
		const b = before as Record<string, unknown>;
		const a = after as Record<string, unknown>;
		const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter(
			(k) => JSON.stringify(b[k]) !== JSON.stringify(a[k]),
		);
		if (keys.length) {
			const pick = (o: Record<string, unknown>) =>
				Object.fromEntries(keys.map((k) => [k, o[k] === undefined ? '—' : o[k]]));
			return [text(pick(b)), text(pick(a))];
		}
	}
	return [text(before), text(after)];
}

const seriesPoints = (rows: number[][] | null | undefined): [number, number][] =>
	(rows ?? [])
		.filter((r) => Array.isArray(r) && Number.isFinite(r[0]) && Number.isFinite(r[1]))
		.map((r) => [r[0] * 1000, r[1]]);

/**
 * The report of one attack response. Tolerates nulls where the result has empty lists or absent fields (Temporal's
 * HTTP API JSON shorthand turns empty arrays into null; n8n reads results through it).
 */
export function runbookReportModel(given: RunbookResultLike, generatedAt: string): ReportModel {
	const r: RunbookResultLike = {
		...given,
		changes: (given.changes ?? []).map((c) => ({ ...c, after: c.kind === 'blacklistAdd' ? (c.after ?? []) : c.after })),
		skipped: given.skipped ?? [],
		audit: given.audit ?? [],
		traffic: given.traffic ?? [],
	};
	const m = r.marks ?? {};
	const { series, notes } = eventSeries(r.eventTraffic?.bps);
	const samples = (r.traffic ?? []).filter((s) => s && Number.isFinite(Date.parse(s.at)));
	if (samples.length) {
		series.push({
			kind: 'reported',
			label: SERIES_LABEL.reported,
			points: samples.map((s) => [Date.parse(s.at), s.underAttack ? Math.max(0, s.bps ?? 0) : 0]),
		});
		notes.push(REPORT_NOTES.reported);
	}

	const markers: ReportModel['markers'] = [];
	const mark = (kind: MarkerKind, at: number | undefined) => {
		if (at !== undefined && Number.isFinite(at)) markers.push({ kind, label: MARKER_LABEL[kind], at });
	};
	mark('start', m.eventStart !== undefined ? m.eventStart * 1000 : undefined);
	mark('detected', m.startedAt ? Date.parse(m.startedAt) : undefined);
	mark('mitigated', m.mitigatedAt ? Date.parse(m.mitigatedAt) : undefined);
	mark('over', m.attackEndedAt ? Date.parse(m.attackEndedAt) : undefined);
	mark('reverted', m.revertedAt && r.changes.some((c) => c.appliedAt) ? Date.parse(m.revertedAt) : undefined);

	const changes = changeRows(r.changes);

	let approval: ReportModel['approval'];
	if (m.decision && m.decision !== 'not-required') {
		const sig = [...(r.audit ?? [])]
			.reverse()
			.find((a) => a.step === 'signal' && (a.what === 'approve' || a.what === 'reject'));
		approval = { decision: m.decision, by: sig?.result, at: sig?.at, reason: sig?.why };
	} else if (m.decision === 'not-required')
		approval = { decision: 'not required', reason: 'the plan asks for no approval' };

	return {
		title: `Attack report — site ${r.site_id}`,
		subtitle: r.eventId ? `event ${r.eventId}` : 'no event found',
		generatedAt,
		outcome: r.outcome,
		series,
		markers: markers.sort((a, b) => a.at - b.at),
		times: [
			{ label: 'Time to detect', seconds: r.timeToDetectSeconds, hint: 'attack start → runbook start' },
			{ label: 'Time to mitigate', seconds: r.timeToMitigateSeconds, hint: 'attack start → last mitigation write' },
			{ label: 'Time to revert', seconds: r.timeToRevertSeconds, hint: 'attack over → everything restored' },
		],
		changes,
		blacklisted: r.changes.filter((c) => c.kind === 'blacklistAdd' && c.appliedAt).flatMap((c) => ownedEntries(c)),
		skipped: r.skipped,
		approval,
		error: r.error,
		...(notes.length ? { notes } : {}),
	};
}

/** The event's own series (attack, clean): drawn when they show a course, else named in a note. */
function eventSeries(bps: Record<string, number[][] | null | undefined> | null | undefined) {
	const series: ReportModel['series'] = [];
	const notes: string[] = [];
	for (const kind of ['attack', 'clean'] as const) {
		const points = seriesPoints(bps?.[kind]);
		if (points.length >= MIN_SERIES_POINTS) series.push({ kind, label: SERIES_LABEL[kind], points });
		else if (points.length) notes.push(REPORT_NOTES.thin(SERIES_LABEL[kind], points.length));
	}
	return { series, notes };
}

/** The part of the period report (workflows/report/report.mts AttackReport) the HTML report reads. */
export interface PeriodReportLike {
	site_id: string;
	period: { start_time: string; end_time: string };
	generatedAt: string;
	totals: { events: number; ongoing: number; maxBps: number };
	events: {
		alert_id: string;
		attack_type: string;
		start_time: number;
		end_time: number;
		max_bps: number;
		status: number;
	}[];
}

/** The attack report playbook's period report: events of the period; traffic of the newest event when given. */
export function periodReportModel(
	r: PeriodReportLike,
	traffic?: { bps?: Record<string, number[][] | null> } | null,
): ReportModel {
	const { series, notes } = eventSeries(traffic?.bps);
	const markers: ReportModel['markers'] = [];
	for (const e of r.events ?? []) {
		markers.push({ kind: 'start', label: `${MARKER_LABEL.start} ${e.alert_id}`, at: e.start_time * 1000 });
		if (e.status !== 1 && e.end_time)
			markers.push({ kind: 'over', label: `${MARKER_LABEL.over} ${e.alert_id}`, at: e.end_time * 1000 });
	}
	const iso = (s: number) => (s ? new Date(s * 1000).toISOString().replace('.000Z', 'Z') : '—');
	return {
		title: `Attack report — site ${r.site_id}`,
		subtitle: `${r.period.start_time} → ${r.period.end_time} (UTC), ${r.totals.events} event(s), ${r.totals.ongoing} ongoing`,
		generatedAt: r.generatedAt,
		series,
		markers: markers.sort((a, b) => a.at - b.at),
		times: [],
		changes: [],
		blacklisted: [],
		skipped: [],
		events: (r.events ?? []).map((e) => ({
			id: e.alert_id,
			type: e.attack_type,
			start: iso(e.start_time),
			end: e.status === 1 ? 'ongoing' : iso(e.end_time),
			maxBps: e.max_bps,
			status: e.status === 1 ? 'ongoing' : 'stopped',
		})),
		...(notes.length ? { notes } : {}),
	};
}

/**
 * The entries a blacklist change added: what it planned minus what was already listed (not ours) or of unknown
 * outcome (maybe someone else's).
 */
function ownedEntries(c: RunbookResultLike['changes'][number]): string[] {
	const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : []);
	const notOurs = [...list(c.written?.notOurs), ...list(c.written?.unknown)];
	return list(c.after).filter((e) => !notOurs.includes(e));
}

/** One row per change: the value our write replaced (or the snapshot's), what it applied, what the revert did. */
function changeRows(changes: RunbookResultLike['changes']): ReportModel['changes'] {
	return changes.map((c) => {
		// What the runbook's write replaced (`written`, since exact ownership), else the snapshot's value.
		const w = c.written;
		const [before, applied] = diff(w && 'replaced' in w ? w.replaced : c.before, c.after);
		const restored =
			c.status === 'restored'
				? c.kind === 'blacklistAdd'
					? 'removed'
					: before
				: c.status === 'conflict'
					? `kept operator value ${diff(c.after, c.live)[1]}`
					: c.status === 'unchanged'
						? 'nothing to restore'
						: '—';
		return {
			setting: c.what,
			before: c.kind === 'blacklistAdd' ? '—' : before,
			applied,
			restored,
			status: c.status,
			note: c.note,
		};
	});
}
