import { proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import { holdDownOf, LAST_RUN_ACTIVITY, rearmExtraCooldown, type LastRun } from '../../api/runbook/holdDownRules.ts';
import type { PlanContext, Runbook } from './context.mts';
import { errText } from './settings.mts';

/**
 * Hold-down re-arm (issue 39 item 2; api/runbook/holdDownRules.ts): a runbook that starts within plan.holdDown.seconds
 * (default 30 min) of the site's last revert is a RETURN: the last run's entries (every wave, minus what a person
 * removed or the allow-list ended) are pre-blocked with this run's top sources, the cooldown is lengthened
 * (×cooldownFactor per return, capped), and the approval follows plan.holdDown.approval (`gate` by default; `skip`:
 * no new approval inside the hold-down). `patched('runbook-hold-down')`: runbooks recorded before it never look.
 */
export const REARM_PATCH = 'runbook-hold-down';

/**
 * A return's time cut (issue 39 item 6, bench R), `patched('rearm-fast')` (runbooks recorded before it do neither):
 * - every runbook asks for the last run while it holds its settings and takes its snapshot (a read of Temporal, not of
 *   the site: it needs neither), not after them;
 * - a re-armed runbook writes its plan in ONE group (apply.mts): the same plan on the same site was applied and
 *   reverted within the hold-down, so the group order (a first plan learns step by step whether the site takes its
 *   writes) buys nothing the last run did not show; its blacklist entries go out 4 at once. Every write is still
 *   held, recorded and exact; only the wait for one group before the next goes.
 */
export const REARM_FAST_PATCH = 'rearm-fast';
/** A re-arm's blacklist adds to one list at once, at least (the plan's blacklistConcurrency when higher; max 16). */
export const REARM_BLACKLIST_CONCURRENCY = 4;

type LastRunActs = {
	[LAST_RUN_ACTIVITY]: (input: { site_id: string; currentRunId: string }) => Promise<LastRun | undefined>;
};
const lastRunOptions = { startToCloseTimeout: '30s', retry: { initialInterval: '500ms', maximumAttempts: 3 } } as const;
const acts = proxyActivities<LastRunActs>(lastRunOptions);
/** Since `hold-beside-snapshot` (ownership.mts) a local activity: it runs beside the snapshot's local-activity reads. */
const localActs = proxyLocalActivities<LastRunActs>(lastRunOptions);

/** The sources to pre-block (empty when this is not a return). */
export async function rearmFromLast(rb: Runbook, ctx: PlanContext): Promise<string[]> {
	const cfg = holdDownOf(ctx.plan);
	if (rb.dryRun || cfg.seconds <= 0 || !rb.patches.rearm) return [];
	let last: LastRun | undefined;
	try {
		last = await (rb.patches.holdBeside ? localActs : acts)[LAST_RUN_ACTIVITY]({
			site_id: ctx.site,
			currentRunId: workflowInfo().runId,
		});
	} catch (e) {
		rb.log('snapshot', 'hold-down: the last runbook could not be read', `${errText(e)}; starting from nothing`);
		return [];
	}
	if (!last) return [];
	const ago = Math.round((Date.now() - Date.parse(last.revertedAt)) / 1000);
	if (!(ago <= cfg.seconds)) return [];
	const returns = last.returns + 1;
	const extra = rearmExtraCooldown(ctx.plan.cooldownSeconds, returns, cfg);
	rb.state.extraCooldownSeconds += extra;
	const pre = [...new Set(Object.values(last.entries).flat())];
	rb.state.rearm = {
		from: last.runId,
		revertedAt: last.revertedAt,
		returns,
		preBlocked: pre.length,
		extraCooldownSeconds: extra,
		gate: cfg.approval,
	};
	rb.log(
		'snapshot',
		`re-armed: return ${returns} within the hold-down (the last runbook, run ${last.runId}, reverted ${ago}s ago)`,
		`${pre.length} source(s) of its last waves pre-blocked; cooldown +${extra}s; approval: ${
			cfg.approval === 'skip'
				? 'not asked again inside the hold-down (plan.holdDown.approval skip)'
				: 'the gate as usual'
		}`,
	);
	return pre;
}
