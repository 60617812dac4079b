import { writeFileSync } from 'node:fs';
import { renderReportHtml } from '../../api/report/html.ts';
import { runbookReportModel } from '../../api/report/model.ts';
import { inspect } from '../attackResponse/client.mts';
import { hoursArg, siteArg, UsageError, type Command } from '../../worker/src/commands/args.mts';
import { startAttackReport } from './client.mts';

/** `secsvc report SITE|ID --html FILE` (one runbook) and `secsvc report --site SITE` (the attack report playbook). */
export const report: Command = async ({ pos, o, conn, t, out }) => {
	if (o.html !== undefined && typeof o.html !== 'string') throw new UsageError('--html: a file path is required');
	if (pos[0]) {
		if (typeof o.html !== 'string')
			throw new UsageError('report SITE|ID: --html FILE is required (the period report takes --site)');
		const r = await inspect(await conn(), pos[0]);
		if (!r.result)
			throw new UsageError(
				`${r.workflowId}: no result yet (status ${r.status}); the report is written once the runbook has finished`,
			);
		writeFileSync(o.html, renderReportHtml(runbookReportModel(r.result, new Date().toISOString())));
		out(o.html);
		return 0;
	}
	const site = siteArg(o.site, '--site');
	const input = { site_id: site, periodHours: hoursArg(o.hours), html: typeof o.html === 'string' };
	const r = await (await startAttackReport(await conn(), t.taskQueue, input)).result();
	if (typeof o.html === 'string') {
		writeFileSync(o.html, r.html ?? '');
		out(o.html);
		return 0;
	}
	out(o.markdown ? r.markdown : r.report);
	return 0;
};
