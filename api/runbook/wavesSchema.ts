import { z } from 'zod/v4';
import { WAVE_BOUNDS } from './waveRules';

const count = (b: { min: number; max: number }) =>
	z
		.number({ error: 'must be an integer' })
		.int({ error: 'must be an integer' })
		.min(b.min, { error: `must be at least ${b.min}` })
		.max(b.max, { error: `must be at most ${b.max}` });

/** plan.blacklist.waves (api/runbook/waveRules.ts): absent fields take WAVE_DEFAULTS where they are used. */
export const wavesSchema = z
	.strictObject({
		follow: z.boolean({ error: 'must be true or false' }).optional(),
		maxWaves: count(WAVE_BOUNDS.maxWaves).optional(),
		maxEntries: count(WAVE_BOUNDS.maxEntries).optional(),
		maxEvents: count(WAVE_BOUNDS.maxEvents).optional(),
	})
	.optional();
