import { proxyActivities } from '@temporalio/workflow';
import type { OperationActivities } from '../pure/activityTypes.mts';
import { summarize, toMarkdown, type AttackReport, type ReportEvent } from './report.mts';
import { periodReportModel } from '../../api/report/model.ts';
import { renderReportHtml } from '../../api/report/html.ts';
import { failOn, problems } from '../input/inputChecks.mts';
import { reportRules } from '../input/inputRules.mts';

/** Scheduled summary of ddos_events and network_summary for a period → JSON and Markdown. */

export interface AttackReportInput {
	site_id: string;
	/** Period length in hours ending now (workflow time); ≤ 744 (31 days, the ddos_events limit). */
	periodHours?: number;
	range?: 'hour' | 'day' | 'week' | 'month';
	type?: 'bps' | 'pps';
	/** Also render the self-contained HTML report (api/report), with the traffic of the period's newest event. */
	html?: boolean;
}

const acts = proxyActivities<OperationActivities>({
	startToCloseTimeout: '30s',
	retry: { maximumAttempts: 8, maximumInterval: '10s' },
});

const p2 = (n: number) => String(n).padStart(2, '0');
export const ymdhms = (ms: number) => {
	const d = new Date(ms);
	return `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`;
};

export async function attackReport(
	input: AttackReportInput,
): Promise<{ report: AttackReport; markdown: string; html?: string }> {
	failOn('report input', problems(input, reportRules));
	const hours = Math.min(744, Math.max(1, Math.floor(input.periodHours ?? 24)));
	const now = Date.now();
	const period = { start_time: ymdhms(now - hours * 3600_000), end_time: ymdhms(now) };
	const events: ReportEvent[] = [];
	const num = 50;
	for (let start = 0; start < 10_000; start += num) {
		const page = await acts['dashboard.ddosEvents']({
			site_id: input.site_id,
			...period,
			status: 'all',
			start: String(start),
			num: String(num),
		});
		const evs = (page?.events ?? []) as ReportEvent[];
		events.push(...evs);
		if (evs.length < num || events.length >= Number(page?.total ?? 0)) break;
	}
	const networkSummary = await acts['dashboard.networkSummary']({
		site_id: input.site_id,
		range: input.range ?? 'day',
		type: input.type ?? 'bps',
	});
	const report = summarize(input.site_id, period, new Date(now).toISOString(), events, networkSummary);
	if (!input.html) return { report, markdown: toMarkdown(report) };
	const newest = [...events].sort((a, b) => b.start_time - a.start_time)[0];
	const detail = newest
		? await acts['dashboard.eventDetail']({ event_id: newest.alert_id, module: 'traffic' })
		: undefined;
	const traffic = (detail?.traffic ?? detail) as Parameters<typeof periodReportModel>[1]; // wrapped or bare module content
	return { report, markdown: toMarkdown(report), html: renderReportHtml(periodReportModel(report, traffic)) };
}
