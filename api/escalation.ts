import { MAX_BLOCK_SECONDS } from './blockRules';

/**
 * Repeat offenders are blocked longer (issue 39 item 3). Each customer's history of blocked sources (durable: the
 * `offenders` entity workflow, workflows/blocks/offenders.mts; bounded and decaying) gives an expiring block's
 * duration a multiplier by the operator's rule: ×factor per earlier block, capped, the count halving after each quiet
 * period. Default 1× → 2× → 4× (CrowdSec's `duration_expr` example doubles; its users ask for decay), never past the
 * expiring blocks' 90-day bound. Pure: the worker, the CLI and the tests share it.
 */
export interface RepeatRule {
	/** Multiplier per earlier block of the same range (1 = off). */
	factor: number;
	/** The multiplier never exceeds this. */
	maxMultiplier: number;
	/** Days without a block after which the count halves (again after each further quiet period). */
	quietDays: number;
}

export const REPEAT_DEFAULTS: Readonly<RepeatRule> = Object.freeze({ factor: 2, maxMultiplier: 4, quietDays: 7 });
/** Sources one history keeps (the least recently blocked go first). */
export const MAX_OFFENDERS = 10_000;

/** The count left of `n` earlier blocks, the last at `lastMs`: halved per quiet period elapsed since. */
export function decayed(n: number, lastMs: number, nowMs: number, rule: RepeatRule): number {
	const periods = Math.floor(Math.max(0, nowMs - lastMs) / (rule.quietDays * 86_400_000));
	return periods >= 31 ? 0 : Math.floor(n / 2 ** periods);
}

export interface Escalation {
	/** Earlier blocks counted (after decay). */
	prior: number;
	multiplier: number;
	baseSeconds: number;
	seconds: number;
	/** Why the block got its length, for the block's reason, `block list`, List Blocks and the report. */
	why: string;
}

export function escalate(baseSeconds: number, prior: number, rule: RepeatRule, lastAt?: string): Escalation {
	const multiplier = Math.min(rule.factor ** prior, rule.maxMultiplier);
	const seconds = Math.min(Math.round(baseSeconds * multiplier), MAX_BLOCK_SECONDS);
	const why =
		prior === 0 || multiplier === 1
			? `first block of this source in the history: ${baseSeconds}s`
			: `repeat offender: blocked ${prior} time(s) before${lastAt ? `, last ${lastAt}` : ''}: ${baseSeconds}s × ${multiplier}${
					multiplier === rule.maxMultiplier ? ' (cap)' : ''
				}${seconds < baseSeconds * multiplier ? ' (90-day bound)' : ''} = ${seconds}s (rule ×${rule.factor} per block, cap ×${rule.maxMultiplier}, halves after ${rule.quietDays} quiet days)`;
	return { prior, multiplier, baseSeconds, seconds, why };
}
