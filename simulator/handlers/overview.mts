/** §4.6 overview: auto-mitigation profile and detection switch per level. */
import { PROFILES } from '../state.mts';
import { notFound } from '../util.mts';
import { type HandlerDef } from './shared.mts';

export const overview: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.6 overview
	'overview.setProfile': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const profile_id = c.b.str('profile_id', true);
			c.done();
			if (!PROFILES.some((p) => p.id === profile_id))
				throw notFound(
					`profile_id: auto-mitigation template '${profile_id}' does not exist (known: ${PROFILES.map((p) => p.id).join(', ')})`,
				);
			const o = lv.state.overview;
			o.auto_profile = profile_id as string;
			if (o.detection_mode !== 0) o.detection_mode = 2;
			return undefined;
		},
	},
	'overview.setSwitch': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const is_enable = c.b.intOneOf('is_enable', [0, 1], true);
			const allowed = lv.level === 'site' ? (['detection'] as const) : (['custom', 'mitigation'] as const);
			const t = c.b.str('switch_type', true);
			if (t !== undefined && !(allowed as readonly string[]).includes(t))
				c.b.issue(
					'switch_type',
					lv.level === 'site'
						? 'must be detection at site level (network_id 0); custom and mitigation are for network and host level'
						: `must be custom or mitigation at ${lv.level} level; detection is the site-level switch (network_id 0)`,
				);
			c.done();
			const o = lv.state.overview;
			if (t === 'detection') o.detection_mode = is_enable ? (o.auto_profile ? 2 : 1) : 0;
			else if (t === 'custom') o.is_customize = is_enable as number;
			else o.mitigation_mode = is_enable as number;
			return undefined;
		},
	},
	'overview.getSwitch': {
		enc: 'query',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			c.done();
			return { ...lv.state.overview };
		},
	},
};
