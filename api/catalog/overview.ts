import { z } from 'zod/v4';
import { noResult, field, rec, req } from './define';
import { opOp } from './detection';
import { flag01, nonEmpty, oneOf } from './rules';

/** §4.6 Overview operations. */

export const SWITCH_TYPES = ['custom', 'mitigation', 'detection'] as const;

/** Level is chosen by ids: network_id '0' → site; host_id '0' → network; otherwise host. */
export function levelOf(networkId: unknown, hostId: unknown): 'site' | 'network' | 'host' {
	if (String(networkId) === '0') return 'site';
	if (String(hostId) === '0') return 'network';
	return 'host';
}

export const overview = [
	opOp('4.6', 'overview', {
		id: 'overview.setProfile',
		action: 'setProfile',
		summary: 'Choose the auto-mitigation profile (needed when detection is auto)',
		method: 'POST',
		suffix: '/policy/profile',
		safety: 'idempotent',
		fields: [field('profile_id', 'body', 'string', nonEmpty(), 'Auto-mitigation template id', req)],
		result: noResult,
	}),
	opOp('4.6', 'overview', {
		id: 'overview.setSwitch',
		action: 'setSwitch',
		summary: 'Switch detection (site level) or custom / mitigation (network and host level) on or off',
		method: 'POST',
		suffix: '/policy/switch',
		safety: 'idempotent',
		fields: [
			field('is_enable', 'body', 'boolean01', flag01(), '1 on, 0 off', req),
			field(
				'switch_type',
				'body',
				'options',
				oneOf(SWITCH_TYPES),
				'detection (site level); custom or mitigation (network/host level)',
				{
					required: true,
					options: SWITCH_TYPES,
				},
			),
		],
		refine: (v, ctx) => {
			const level = levelOf(v.network_id, v.host_id);
			if (level === 'site' && v.switch_type !== undefined && v.switch_type !== 'detection')
				ctx.issue('switch_type', "must be 'detection' at site level (network_id '0') (§4.6)");
			if (level !== 'site' && v.switch_type === 'detection')
				ctx.issue('switch_type', `must be 'custom' or 'mitigation' at ${level} level (§4.6)`);
		},
		result: noResult,
	}),
	opOp('4.6', 'overview', {
		id: 'overview.getSwitch',
		action: 'getSwitch',
		summary: 'Get the overview switches and auto-mitigation profile',
		method: 'GET',
		suffix: '/policy/switch',
		safety: 'read',
		fields: [],
		result: rec({
			auto_profile: z.string(),
			detection_mode: z.number().int(),
			is_customize: z.number().int(),
			mitigation_mode: z.number().int(),
		}),
	}),
];
