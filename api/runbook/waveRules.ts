/**
 * Second waves (issue 39 item 1), without zod (workflow code imports this; the schema is in wavesSchema.ts).
 * While a runbook waits, each poll that sees the attack reads the site's ongoing events and their threat maps; top
 * sources not yet covered are blacklisted as a new wave, owned and reverted like the first ones.
 */

export type { RearmState } from './holdDownRules';

/** plan.blacklist.waves: what a runbook does with a new wave during its wait. Absent fields take WAVE_DEFAULTS. */
export interface WavesConfig {
	/** Answer new waves (new alert_id or new top sources) during the wait. */
	follow: boolean;
	/** Waves answered after the first, at most (a cap reached is said once in the audit). */
	maxWaves: number;
	/** Blacklist entries added by waves, at most, over the whole runbook. */
	maxEntries: number;
	/** Ongoing events of the site whose threat map is read per check (newest first). */
	maxEvents: number;
}

export const WAVE_DEFAULTS: Readonly<WavesConfig> = Object.freeze({
	follow: true,
	maxWaves: 10,
	maxEntries: 200,
	maxEvents: 3,
});

export const WAVE_BOUNDS = {
	maxWaves: { min: 1, max: 100 },
	maxEntries: { min: 1, max: 1000 },
	maxEvents: { min: 1, max: 10 },
} as const;

/** The plan's waves block with the defaults filled in (plans parsed before it have none). */
export function wavesOf(plan: { blacklist?: { waves?: Partial<WavesConfig> } }): WavesConfig {
	return { ...WAVE_DEFAULTS, ...(plan.blacklist?.waves ?? {}) };
}

/** What the runbook keeps of its waves (RunbookState.waves; carried across continue-as-new). */
export interface WaveState {
	/** This run's code answers waves (`patched('runbook-waves')`); false: a runbook recorded before it. */
	on: boolean;
	/** Waves so far, the first (the plan's own blacklist change) included. */
	n: number;
	/** Entries added by waves after the first. */
	entries: number;
	/** Alert ids the runbook has seen on its site (the first event's included), at most MAX_SEEN_EVENTS. */
	events: string[];
	/** The cap (maxWaves / maxEntries) was reached and said in the audit. */
	capped?: boolean;
	/** When each wave after the first was blocked, and how many entries it added (the report's list). */
	log: { n: number; at: string; events: string[]; entries: number; firstSeenAt: string }[];
}

export const MAX_SEEN_EVENTS = 50;

/** Change id of wave n's blacklist change on a domain-port (wave 1 keeps the plan's `blacklist.<dp>`). */
export const waveChangeId = (dp: string, n: number) => (n <= 1 ? `blacklist.${dp}` : `blacklist.${dp}.wave${n}`);
