import { condition, log as wlog } from '@temporalio/workflow';
import type { Change } from '../../api/runbook/contract.ts';
import { iso, type PlanContext, type Runbook } from './context.mts';
import { continueIfFull } from './continue.mts';
import { holdTheLine } from './holdLine.mts';
import { needFor, readSettings, type Settings } from './live.mts';
import { errText } from './settings.mts';
import { checkWave, decideWaves } from './waves.mts';

/** Runs recorded before it sleep pollSeconds after each round (nextPoll). */
export const POLL_GRID_PATCH = 'runbook-poll-grid';

/**
 * Step 5 — wait out the attack. Each poll asks is_under_attack and, in the same round, reads the settings the runbook
 * applied (one read per resource) to hold the line (holdLine.mts).
 *  - The cooldown counts from the first poll that saw no attack; a new attack resets it; extendCooldown adds to it.
 *  - Never disarm on doubt: a poll that fails (API down, timeouts, rate limiting, auth failures) makes the runbook
 *    BLIND — the mitigation stays, the state says since when (the start of the first poll, or of the new-wave
 *    check after one, that got no answer), and the cooldown starts again from the next poll that sees no attack
 *    (only an observed attack-free cooldown ends the mitigation).
 *  - An operator's abort ends the wait; so does maxDurationSeconds — loudly (outcome max-duration-reverted, a warning
 *    in the worker log and the audit).
 *  - A long wait continues as new between two polls (continue.mts); the wait's clock (rb.wait: since when mitigated,
 *    since when quiet) is carried, so the cooldown and maxDurationSeconds go on where they were.
 *  - The polls keep a fixed grid from the wait's start (nextPoll).
 */
export async function waitOut(rb: Runbook, ctx: PlanContext): Promise<void> {
	const { plan } = ctx;
	const { state } = rb;
	const clock = rb.wait;
	clock.mitigatedMs ??= Date.now();
	decideWaves(rb); // new waves during the wait (waves.mts)
	for (;;) {
		if (state.aborted) {
			state.endedBy = 'abort';
			return;
		}
		await continueIfFull(rb, ctx);
		const applied = rb.changes.filter((c) => c.status === 'applied');
		const p = await poll(ctx, applied);
		const now = Date.now();
		if (p.error !== undefined) goneBlind(rb, p.error, p.startedMs);
		else {
			answered(rb, ctx, now, p.status, p.bps);
			if (p.live) await holdTheLine(rb, ctx, applied, p.live);
			// the attack goes on: the cooldown starts again anyway
			if (Number(p.status) === 1) await checkWave(rb, ctx, (e, startedMs) => goneBlind(rb, e, startedMs));
		}
		const cooldownMs = (plan.cooldownSeconds + state.extraCooldownSeconds) * 1000;
		if (ended(rb, ctx, now, cooldownMs)) return;
		const extra = state.extraCooldownSeconds;
		const next = nextPoll(rb, plan.pollSeconds * 1000);
		const wait =
			clock.endedAtMs !== undefined ? Math.min(next, Math.max(1, cooldownMs - (now - clock.endedAtMs))) : next;
		await condition(() => state.aborted || state.extraCooldownSeconds !== extra, wait);
	}
}

/**
 * How long until the next poll. Since `patched('runbook-poll-grid')` the polls keep a fixed grid from the wait's start
 * (mitigatedMs + k·pollSeconds, carried across continue-as-new): a slow poll, hold-the-line or new-wave round no
 * longer pushes the next poll back by its own duration (issue 39: a new wave blocked within one poll interval of its
 * first appearance); slots missed by a round longer than the interval are skipped, never made up in a burst. Runs
 * recorded before the patch sleep pollSeconds after each round.
 */
function nextPoll(rb: Runbook, intervalMs: number): number {
	if (!rb.patches.pollGrid) return intervalMs;
	return intervalMs - ((Date.now() - (rb.wait.mitigatedMs as number)) % intervalMs);
}

/** One poll: is the site under attack, and the live settings of what the runbook applied (to hold the line). */
async function poll(ctx: PlanContext, applied: Change[]) {
	const r: { status?: unknown; bps?: unknown; live?: Settings; error?: unknown; startedMs: number } = {
		startedMs: Date.now(),
	};
	try {
		r.live = await readSettings(ctx, ctx.pollActs, needFor(applied), [
			async () => {
				const a = await ctx.pollActs['dashboard.isUnderAttack']({ site_id: ctx.plan.site_id });
				r.status = a?.status;
				r.bps = a?.bps_size;
			},
		]);
	} catch (e) {
		r.error = e;
	}
	return r;
}

/** A poll got no answer: the cooldown stops (blind time never counts towards it) and the blind time starts. */
function goneBlind(rb: Runbook, pollError: unknown, pollStart: number): void {
	const { state } = rb;
	rb.wait.endedAtMs = undefined; // a cooldown must be observed: blind time never counts towards it
	state.attackEndedAt = undefined;
	if (state.blindSince === undefined) {
		// from the start of the first poll that got no answer, not its end: a hung service makes a poll fail
		// only after every attempt's timeout, and the service stopped answering before that poll began
		state.blindSince = iso(pollStart);
		rb.log(
			'waiting',
			'blind: cannot tell whether the attack goes on',
			`${errText(pollError)}; the mitigation stays in place until an attack-free cooldown is observed`,
		);
	}
}

/** A poll answered: sight regained, and the attack still reported (cooldown restarts) or not (cooldown starts). */
function answered(rb: Runbook, { plan }: PlanContext, now: number, status: unknown, bps: unknown): void {
	const { state } = rb;
	const clock = rb.wait;
	if (state.blindSince !== undefined) {
		const s = Math.round((now - Date.parse(state.blindSince)) / 1000);
		state.blindSeconds += s;
		state.blindSince = undefined;
		rb.log('waiting', `sight regained after ${s}s blind`, 'the API answers again; the mitigation was kept meanwhile');
	}
	rb.obs.sample(now, Number(status), bps === undefined || bps === null ? undefined : Number(bps));
	if (Number(status) === 1) {
		if (clock.endedAtMs !== undefined) rb.log('waiting', 'attack reported again', 'cooldown restarts when it ends');
		clock.endedAtMs = undefined;
		state.lastAttackSeenAt = iso(now);
		state.attackEndedAt = undefined;
	} else if (clock.endedAtMs === undefined) {
		clock.endedAtMs = now;
		state.attackEndedAt = iso(now);
		rb.log(
			'waiting',
			'attack no longer reported',
			`cooldown of ${plan.cooldownSeconds + state.extraCooldownSeconds}s starts`,
		);
	}
}

/** The wait is over: an attack-free cooldown elapsed, or the plan's maximum duration. */
function ended(rb: Runbook, { plan }: PlanContext, now: number, cooldownMs: number): boolean {
	const { state } = rb;
	const clock = rb.wait;
	// plan.stopWhen (holdDownRules.ts): only `attack-ended` (the default) ends by the cooldown.
	if (
		(plan.stopWhen ?? 'attack-ended') === 'attack-ended' &&
		clock.endedAtMs !== undefined &&
		now - clock.endedAtMs >= cooldownMs
	) {
		state.endedBy = 'cooldown';
		rb.log('waiting', 'cooldown elapsed without attack', 'revert');
		return true;
	}
	if (now - (clock.mitigatedMs as number) < plan.maxDurationSeconds * 1000) return false;
	state.endedBy = 'max-duration';
	const why =
		state.blindSince !== undefined
			? `blind since ${state.blindSince}`
			: clock.endedAtMs === undefined
				? 'the attack was still reported'
				: 'the cooldown had not elapsed';
	rb.log(
		'waiting',
		`MAXIMUM DURATION REACHED (${plan.maxDurationSeconds}s): reverting while ${why}`,
		'maxDurationSeconds bounds every mitigation; start a new runbook if the site still needs it',
	);
	wlog.warn('attack response ended by maxDurationSeconds', {
		site_id: plan.site_id,
		maxDurationSeconds: plan.maxDurationSeconds,
		why,
	});
	return true;
}
