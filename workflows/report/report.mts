/** Pure rendering of the attack report (JSON → Markdown). Deterministic; used inside the attackReport workflow. */

export interface ReportEvent {
	alert_id: string;
	attack_type: string;
	start_time: number;
	end_time: number;
	duration: number;
	max_bps: number;
	max_pps: number;
	severity: number;
	status: number;
}

export interface AttackReport {
	site_id: string;
	period: { start_time: string; end_time: string };
	generatedAt: string;
	totals: {
		events: number;
		ongoing: number;
		maxBps: number;
		maxPps: number;
		totalAttackSeconds: number;
		byType: Record<string, number>;
	};
	events: ReportEvent[];
	networkSummary: unknown;
}

const SEVERITY: Record<number, string> = { 0: 'low', 1: 'high', 2: 'medium/blackhole' };

export function summarize(
	site_id: string,
	period: AttackReport['period'],
	generatedAt: string,
	events: ReportEvent[],
	networkSummary: unknown,
): AttackReport {
	const byType: Record<string, number> = {};
	for (const e of events) byType[e.attack_type] = (byType[e.attack_type] ?? 0) + 1;
	return {
		site_id,
		period,
		generatedAt,
		totals: {
			events: events.length,
			ongoing: events.filter((e) => e.status === 1).length,
			maxBps: events.reduce((m, e) => Math.max(m, e.max_bps), 0),
			maxPps: events.reduce((m, e) => Math.max(m, e.max_pps), 0),
			totalAttackSeconds: events.reduce((s, e) => s + (e.duration || 0), 0),
			byType,
		},
		events,
		networkSummary,
	};
}

const ts = (s: number) => (s ? new Date(s * 1000).toISOString().replace('.000Z', 'Z') : '—');
const esc = (s: unknown) => String(s ?? '').replace(/\|/g, '\\|');

export function toMarkdown(r: AttackReport): string {
	const lines = [
		`# Attack report — site ${esc(r.site_id)}`,
		'',
		`Period: ${r.period.start_time} → ${r.period.end_time} (generated ${r.generatedAt})`,
		'',
		`- Events: ${r.totals.events} (${r.totals.ongoing} ongoing)`,
		`- Peak: ${r.totals.maxBps} bps, ${r.totals.maxPps} pps`,
		`- Time under attack: ${r.totals.totalAttackSeconds} s`,
		`- By type: ${
			Object.entries(r.totals.byType)
				.map(([t, n]) => `${esc(t)} ${n}`)
				.join(', ') || 'none'
		}`,
		'',
		'## Events',
		'',
		'| alert_id | type | start | end | duration s | max bps | max pps | severity | status |',
		'|---|---|---|---|---|---|---|---|---|',
		...r.events.map(
			(e) =>
				`| ${esc(e.alert_id)} | ${esc(e.attack_type)} | ${ts(e.start_time)} | ${e.status === 1 ? 'ongoing' : ts(e.end_time)} | ${e.duration} | ${e.max_bps} | ${e.max_pps} | ${SEVERITY[e.severity] ?? e.severity} | ${e.status === 1 ? 'ongoing' : 'stopped'} |`,
		),
	];
	const ns = r.networkSummary as Record<string, { size: number; [k: string]: unknown }[]> | undefined;
	if (ns && typeof ns === 'object') {
		lines.push('', '## Network summary', '');
		for (const [key, label] of [
			['attack_type', 'attack_type'],
			['ip', 'ip'],
			['country', 'country'],
			['proto', 'proto'],
			['as_num', 'as'],
			['app', 'app'],
		] as const) {
			const rows = Array.isArray(ns[key]) ? [...ns[key]].sort((a, b) => b.size - a.size).slice(0, 10) : [];
			if (!rows.length) continue;
			lines.push(
				`### ${key}`,
				'',
				`| ${label} | size |`,
				'|---|---|',
				...rows.map((x) => `| ${esc(x[label])} | ${x.size} |`),
				'',
			);
		}
	}
	return lines.join('\n') + '\n';
}
