import type { AttackResponseResult } from './contract';

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

/**
 * What a completed run left for the next one (the worker's activity and the n8n nodes read a result the same way):
 * when it reverted, the blacklist entries it owned at the end, per domain-port (every wave, minus what a person
 * removed or the allow-list ended), and how many returns it was itself. Undefined without a revert time.
 */
export function lastRunOf(runId: string, r: AttackResponseResult | undefined | null): LastRun | undefined {
	if (!r?.marks?.revertedAt) return undefined;
	return { runId, revertedAt: r.marks.revertedAt, outcome: r.outcome, entries: entriesOf(r), returns: returnsOf(r) };
}

const list = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);

function entriesOf(r: AttackResponseResult): Record<string, string[]> {
	const out: Record<string, string[]> = {};
	for (const c of r.changes ?? []) {
		if (c.kind !== 'blacklistAdd') continue;
		const theirs = list(c.live);
		const mine = (c.written ? list(c.written.wrote) : list(c.after)).filter((e) => !theirs.includes(e));
		(out[c.target.domain_port_id] ??= []).push(...mine);
	}
	return out;
}

/** The audit says "re-armed: return N …" when the run was a return itself. */
function returnsOf(r: AttackResponseResult): number {
	for (const a of r.audit ?? []) {
		const m = /^re-armed: return (\d+)/.exec(a.what);
		if (m) return Number(m[1]);
	}
	return 0;
}

/** Whether a run that reverted at `revertedAt` is within the hold-down at `nowMs` (the runbook's own rule). */
export function withinHoldDown(revertedAt: string, nowMs: number, seconds: number): boolean {
	const ago = (nowMs - Date.parse(revertedAt)) / 1000;
	return seconds > 0 && ago <= seconds;
}
