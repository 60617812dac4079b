/**
 * Hold-down re-arm and stop conditions (issue 39 item 2), without zod (workflow code imports this; the schema is in
 * holdDownSchema.ts). For `seconds` after a runbook's revert, an attack on the same site starts the next runbook from
 * the last one: its last waves' sources pre-blocked, its approval by `approval` (`gate` keeps the gate, the default;
 * `skip`: a re-arm inside the hold-down needs no new approval), its cooldown ×cooldownFactor per return, capped.
 */
export interface HoldDownConfig {
	/** Seconds after a revert during which a new runbook of the site re-arms from the last one (0: off). */
	seconds: number;
	approval: 'gate' | 'skip';
	/** The cooldown is multiplied by factor^returns (returns inside consecutive hold-downs), at most maxCooldownFactor. */
	cooldownFactor: number;
	maxCooldownFactor: number;
}

export const HOLD_DOWN_DEFAULTS: Readonly<HoldDownConfig> = Object.freeze({
	seconds: 1800,
	approval: 'gate',
	cooldownFactor: 2,
	maxCooldownFactor: 4,
});

/**
 * When the wait ends (Sightline's stop conditions): `attack-ended` — the attack is over + cooldownSeconds (today's
 * rule, the default); `after-start` — maxDurationSeconds after the mitigation started, whatever the attack does;
 * `manual` — held until a person aborts it. maxDurationSeconds bounds every mode (the safety bound stays).
 */
export type StopWhen = 'attack-ended' | 'after-start' | 'manual';
export const STOP_WHEN: readonly StopWhen[] = ['attack-ended', 'after-start', 'manual'];

export function holdDownOf(plan: { holdDown?: Partial<HoldDownConfig> }): HoldDownConfig {
	return { ...HOLD_DOWN_DEFAULTS, ...(plan.holdDown ?? {}) };
}

/** The cooldown's extra seconds for the `returns`-th return inside the hold-down. */
export function rearmExtraCooldown(cooldownSeconds: number, returns: number, cfg: HoldDownConfig): number {
	const f = Math.min(cfg.cooldownFactor ** returns, cfg.maxCooldownFactor);
	return Math.round(cooldownSeconds * (f - 1));
}

/** What the previous run of the site left (activity `runbook.lastRun`). */
export interface LastRun {
	runId: string;
	revertedAt: string;
	outcome: string;
	/** The blacklist entries it owned at the end, per domain-port (every wave). */
	entries: Record<string, string[]>;
	/** Returns it was itself (0: a first runbook). */
	returns: number;
}

/** What a re-armed runbook keeps (RunbookState.rearm). */
export interface RearmState {
	from: string;
	revertedAt: string;
	returns: number;
	preBlocked: number;
	extraCooldownSeconds: number;
	gate: 'gate' | 'skip';
}

/** Activity: the site's last finished runbook (worker/src/activities/holdDown.mts). */
export const LAST_RUN_ACTIVITY = 'runbook.lastRun';
