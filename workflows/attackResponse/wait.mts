import { condition } from '@temporalio/workflow';
import { iso, type PlanContext, type Runbook } from './context.mts';

/**
 * Step 5 — wait out the attack: polls is_under_attack; the cooldown counts from the first poll that saw no attack
 * (conservative: not from the last one that saw it); a new attack resets it; extendCooldown adds to it;
 * maxDurationSeconds bounds the mitigation.
 */
export async function waitOut(rb: Runbook, ctx: PlanContext): Promise<void> {
	const { plan } = ctx;
	const { state, log } = rb;
	const mitigated = Date.now();
	let endedAt: number | undefined;
	for (;;) {
		if (state.aborted) return;
		const r = await ctx.readActs['dashboard.isUnderAttack']({ site_id: plan.site_id });
		const now = Date.now();
		rb.obs.sample(now, Number(r?.status), r?.bps_size === undefined ? undefined : Number(r.bps_size));
		if (Number(r?.status) === 1) {
			if (endedAt !== undefined) log('waiting', 'attack reported again', 'cooldown restarts when it ends');
			endedAt = undefined;
			state.lastAttackSeenAt = iso(now);
			state.attackEndedAt = undefined;
		} else if (endedAt === undefined) {
			endedAt = now;
			state.attackEndedAt = iso(now);
			log('waiting', 'attack no longer reported', `cooldown of ${plan.cooldownSeconds + state.extraCooldownSeconds}s starts`);
		}
		const cooldownMs = (plan.cooldownSeconds + state.extraCooldownSeconds) * 1000;
		if (endedAt !== undefined && now - endedAt >= cooldownMs) {
			log('waiting', 'cooldown elapsed without attack', 'revert');
			return;
		}
		if (now - mitigated >= plan.maxDurationSeconds * 1000) {
			log('waiting', 'maximum duration reached', `maxDurationSeconds ${plan.maxDurationSeconds}`);
			return;
		}
		const extra = state.extraCooldownSeconds;
		const wait = endedAt !== undefined ? Math.min(plan.pollSeconds * 1000, Math.max(1, cooldownMs - (now - endedAt))) : plan.pollSeconds * 1000;
		await condition(() => state.aborted || state.extraCooldownSeconds !== extra, wait);
	}
}
