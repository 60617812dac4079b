import { checkDesiredState } from '../../../api/runbook/desired.ts';
import { parsePlan } from '../../../api/runbook/plan.ts';
import { createSchedule, deleteSchedule, scheduleStatuses, type ScheduleKind } from '../temporal/schedules.mts';
import { scheduledBy } from '../../../workflows/playbooks.mts';
import { everyArg, hoursArg, readJson, siteArg, UsageError, type Command } from './args.mts';

/** `secsvc schedule create watch|drift|report …`, `schedule delete ID`, `schedule list` (exit 3: one failing or stuck). */
export const schedule: Command = async ({ o, conn, t, out, err, need }) => {
	const sub = need(0, 'create|delete|list');
	if (sub === 'list') {
		const all = await scheduleStatuses(await conn());
		out(all);
		const bad = all.filter((x) => x.health === 'failing' || x.health === 'stuck');
		for (const b of bad)
			err(`secsvc: schedule ${b.scheduleId} is ${b.health}${b.lastError ? `: ${b.lastError}` : ''}\n`);
		return bad.length ? 3 : 0;
	}
	if (sub === 'delete') {
		await deleteSchedule(await conn(), need(1, 'SCHEDULE_ID'));
		out('deleted');
		return 0;
	}
	if (sub !== 'create') throw new UsageError(`schedule ${sub}: must be create, delete or list`);
	const kind = need(1, 'watch|drift|report') as ScheduleKind;
	const every = everyArg(o.every, scheduledBy(kind)?.schedule?.every ?? '24h');
	let site: string;
	let input: unknown;
	if (kind === 'watch') {
		// Validated here: a schedule with a bad plan would fail every tick (or never watch at all).
		const plan = readJson(o.plan, 'plan');
		site = parsePlan(plan).site_id;
		input = { plan };
	} else if (kind === 'drift') {
		const desired = checkDesiredState(readJson(o.desired, 'desired'));
		site = desired.site_id;
		input = { desired, enforce: o.enforce === true };
	} else if (kind === 'report') {
		site = siteArg(o.site, '--site');
		input = { site_id: site, periodHours: hoursArg(o.hours), html: o['with-html'] === true };
	} else throw new UsageError(`schedule create ${kind}: must be watch, drift or report`);
	const h = await createSchedule(await conn(), t.taskQueue, kind, site, every, input);
	out({ scheduleId: h.scheduleId, every });
	return 0;
};
