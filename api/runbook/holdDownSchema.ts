import { z } from 'zod/v4';
import { STOP_WHEN } from './holdDownRules';

/** plan.holdDown (api/runbook/holdDownRules.ts): absent fields take HOLD_DOWN_DEFAULTS where they are used. */
export const holdDownSchema = z
	.strictObject({
		seconds: z
			.number({ error: 'must be an integer number of seconds' })
			.int({ error: 'must be an integer number of seconds' })
			.min(0, { error: 'must be at least 0 (0: off)' })
			.max(7 * 86400, { error: 'must be at most 604800 (7 days)' })
			.optional(),
		approval: z.enum(['gate', 'skip'], { error: 'must be gate or skip' }).optional(),
		cooldownFactor: z
			.number()
			.min(1, { error: 'must be at least 1' })
			.max(10, { error: 'must be at most 10' })
			.optional(),
		maxCooldownFactor: z
			.number()
			.min(1, { error: 'must be at least 1' })
			.max(100, { error: 'must be at most 100' })
			.optional(),
	})
	.optional();

export const stopWhenSchema = z
	.enum(STOP_WHEN as [string, ...string[]], { error: 'must be attack-ended, after-start or manual' })
	.optional();
