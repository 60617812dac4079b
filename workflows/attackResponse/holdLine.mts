import type { Change } from '../../api/runbook/contract.ts';
import { applyChange } from './apply.mts';
import type { PlanContext, Runbook } from './context.mts';
import { compare, presentEntries, type Settings } from './live.mts';
import { errText } from './settings.mts';

/**
 * Hold the line (during the wait and the cooldown): every applied change is compared with the live settings read
 * in the same round as the poll.
 *  - still the runbook's value → nothing;
 *  - back at the snapshot's value (the mitigation was undone: another playbook, a script, a console reset) →
 *    written again, audit `re-applied`; blacklist entries of the runbook that disappeared are added again;
 *  - any other value → an operator decided: kept, reported as a conflict, and no longer watched or reverted.
 * A failed re-apply is tried again at the next poll.
 */
export async function holdTheLine(rb: Runbook, ctx: PlanContext, applied: Change[], live: Settings): Promise<void> {
	for (const c of applied) {
		if (c.kind === 'blacklistAdd') {
			const present = presentEntries(c, live);
			const missing = (c.after as string[]).filter((e) => !present.includes(e));
			if (missing.length)
				await reapply(rb, ctx, c, missing, `${missing.length} blacklisted range(s) removed during the attack`);
			continue;
		}
		const { value, is } = compare(c, live);
		if (is === 'before') await reapply(rb, ctx, c, c.after, 'the setting was back at its value before the attack');
		else if (is === 'other') {
			c.status = 'conflict';
			rb.obs.conflict(c);
			c.live = value;
			rb.log(
				'waiting',
				c.what,
				'changed by an operator during the attack: the operator value is kept, not re-applied and not reverted',
				{
					before: c.after,
					after: value,
					result: 'conflict',
				},
			);
		}
	}
}

async function reapply(rb: Runbook, ctx: PlanContext, c: Change, value: unknown, why: string): Promise<void> {
	try {
		await applyChange(ctx.acts, c, ctx.plan.execution.blacklistConcurrency, value);
		c.reapplied = (c.reapplied ?? 0) + 1;
		rb.state.reapplied++;
		rb.obs.reapplied(c);
		rb.log('waiting', c.what, `${why}: re-applied`, { before: c.before, after: value, result: 're-applied' });
	} catch (e) {
		rb.log('waiting', c.what, `${why}: re-apply failed (${errText(e)}); tried again at the next poll`, {
			result: 're-apply failed',
		});
	}
}
