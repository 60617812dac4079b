import { abortInputProblem, extendInputProblem } from '../../../api/signalRules.ts';
import { parsePlan } from '../../../api/runbook/plan.ts';
import { abort, decide, extendCooldown, formatRunbookList, formatTimeline, inspect, listRunbooks, startAttackResponse, timeline } from '../temporal/runbooks.mts';
import { readJson, text, UsageError, type Command } from './args.mts';

/** `secsvc start | approve | reject | abort | extend | inspect | list | timeline`: one attack response. */

export const start: Command = async ({ o, conn, t, out }) => {
	const plan = readJson(o.plan, 'plan');
	parsePlan(plan);
	const h = await startAttackResponse(await conn(), t.taskQueue, plan, { dryRun: o['dry-run'] === true });
	out({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
	if (o.wait) out(await h.result());
	return 0;
};

/** approve / reject: the `decide` Update (the decision comes back, or the refusal naming the rule). */
export const decideCommand: Command = async ({ cmd, o, conn, out, need }) => {
	const approved = cmd === 'approve' && o.reject !== true;
	const id = need(0, 'SITE|ID');
	const reason = text(o.reason, '--reason');
	if (typeof o.by !== 'string' || !o.by.trim()) throw new UsageError('--by: is required (your identity, as listed in the plan\'s approval.approvers)');
	if (!approved && typeof o.reason !== 'string') throw new UsageError('--reason: is required to reject');
	out(await decide(await conn(), id, { approved, by: o.by, reason, via: 'cli' }));
	return 0;
};

export const abortCommand: Command = async ({ o, conn, out, need }) => {
	const [id, by, reason] = [need(0, 'SITE|ID'), text(o.by, '--by'), text(o.reason, '--reason')];
	const problem = abortInputProblem({ by, reason }); // the runbook's rule: it would refuse the signal silently
	if (problem) throw new UsageError(`--${problem}`);
	await abort(await conn(), id, by, reason);
	out('abort sent');
	return 0;
};

export const extend: Command = async ({ o, conn, out, need }) => {
	const s = Number(o.seconds);
	const [id, by] = [need(0, 'SITE|ID'), text(o.by, '--by')];
	const problem = extendInputProblem({ seconds: s, by }); // the runbook's rule (api/signalRules.ts)
	if (problem) throw new UsageError(`--${problem}`);
	await extendCooldown(await conn(), id, s, by);
	out(`cooldown extended by ${s}s`);
	return 0;
};

export const inspectCommand: Command = async ({ conn, out, need }) => {
	out(await inspect(await conn(), need(0, 'SITE|ID')));
	return 0;
};

export const list: Command = async ({ o, conn, out }) => {
	for (const k of ['site', 'phase'] as const) if (o[k] === true) throw new UsageError(`--${k}: a value is required`);
	const rows = await listRunbooks(await conn(), { site: text(o.site, '--site'), phase: text(o.phase, '--phase'), running: o.running === true });
	out(o.json ? rows : formatRunbookList(rows));
	return 0;
};

export const timelineCommand: Command = async ({ conn, out, need }) => {
	out(formatTimeline(await timeline(await conn(), need(0, 'SITE|ID'))));
	return 0;
};
