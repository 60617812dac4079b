import { z } from 'zod/v4';
import { defineOp, field, noResult, rec, req } from './define';
import type { Field, Operation } from './types';
import { idString, int, oneOf, threshold } from './rules';

/** §4.5 Detection and §4.6 Overview operations share the OP prefix. */

export const OP = '/api/spe/customer/{customer_id}/op/site/{site_id}/network/{network_id}/host/{host_id}';

export const opFields: Field[] = [
	field('customer_id', 'path', 'string', idString('a customer id'), 'Customer id', req),
	field('site_id', 'path', 'string', idString('a site id'), 'Site id', req),
	field('network_id', 'path', 'string', idString('a network id'), "Network id ('0' = site level)", {
		required: true,
		default: '0',
	}),
	field('host_id', 'path', 'string', idString('a host id'), "Host id ('0' = network level)", {
		required: true,
		default: '0',
	}),
];

export function opOp<const Id extends string>(
	section: '4.5' | '4.6',
	resource: string,
	o: Omit<Operation, 'section' | 'resource' | 'auth' | 'path' | 'encoding'> & { suffix: string; id: Id },
) {
	const { suffix, ...rest } = o;
	return defineOp<Id>({
		...rest,
		section,
		resource,
		auth: 'access_token',
		path: OP + suffix,
		encoding: o.method === 'POST' ? 'multipart' : 'query',
		fields: [...opFields, ...o.fields],
	});
}

export { DETECTION_GROUPS, DETECTION_TYPES, TOTAL_TRAFFIC_EXTRA } from './detectionGroups';
import { DETECTION_GROUPS, DETECTION_TYPES, TOTAL_TRAFFIC_EXTRA } from './detectionGroups';

const leaf = rec({
	direction_pps: z.string().optional(),
	high_pps: z.string(),
	low_pps: z.string(),
	is_enabled: z.number().int(),
});
const totalLeaf = leaf.extend({
	blackhole_bps: z.string(),
	blackhole_pps: z.string(),
	blackhole_time: z.number().int(),
	direction_bps: z.string().optional(),
	high_bps: z.string(),
	low_bps: z.string(),
});

const thresholdField = (name: string, description: string, required: boolean, showWhen?: Field['showWhen']) =>
	field(name, 'body', 'string', threshold(), description, { required, showWhen });

export const detection = [
	opOp('4.5', 'detection', {
		id: 'detection.setMode',
		action: 'setMode',
		summary: "Set the detection mode ('0' normal, '1' rapid)",
		method: 'POST',
		suffix: '/detection/mode',
		safety: 'idempotent',
		fields: [
			field(
				'model',
				'body',
				'options',
				z.union([z.literal(0).transform(() => '0'), z.literal(1).transform(() => '1'), z.enum(['0', '1'])], {
					error: "must be '0' (normal mode) or '1' (rapid mode)",
				}),
				"'0' normal mode, '1' rapid mode",
				{ required: true, options: ['0', '1'] },
			),
		],
		result: noResult,
	}),
	opOp('4.5', 'detection', {
		id: 'detection.setPolicy',
		action: 'setPolicy',
		summary: 'Set the thresholds of one protocol item',
		method: 'POST',
		suffix: '/detection/policy',
		safety: 'idempotent',
		fields: [
			field(
				'name',
				'body',
				'string',
				z.string().min(1, { error: 'is required (protocol item name such as tcp_syn)' }),
				'Protocol item (e.g. tcp_syn)',
				{
					required: true,
					options: Object.values(DETECTION_GROUPS).flat(),
				},
			),
			field('type', 'body', 'options', oneOf(DETECTION_TYPES), 'tcp, udp, icmp, ip, sip, http or total_traffic', {
				required: true,
				options: DETECTION_TYPES,
			}),
			field(
				'is_enabled',
				'body',
				'boolean01',
				z.union([z.literal(0).transform(() => '0'), z.literal(1).transform(() => '1'), z.enum(['0', '1'])], {
					error: "must be '0' (disabled) or '1' (enabled)",
				}),
				'0 disabled, 1 enabled',
				req,
			),
			thresholdField('high_pps', 'Severe-alert threshold (pps): number or number with K, M, G', true),
			thresholdField('low_pps', 'Alert threshold (pps): number or number with K, M, G', true),
			thresholdField('high_bps', 'Severe-alert threshold (bps); required for total_traffic', false, {
				name: ['total_traffic'],
			}),
			thresholdField('low_bps', 'Alert threshold (bps); required for total_traffic', false, {
				name: ['total_traffic'],
			}),
			thresholdField('blackhole_bps', 'Blackhole bandwidth threshold; required for total_traffic', false, {
				name: ['total_traffic'],
			}),
			thresholdField('blackhole_pps', 'Blackhole packet threshold; required for total_traffic', false, {
				name: ['total_traffic'],
			}),
			field(
				'blackhole_time',
				'body',
				'integer',
				int('must be an integer (seconds the blackhole stays active)'),
				'Seconds the blackhole stays active; required for total_traffic',
				{
					showWhen: { name: ['total_traffic'] },
				},
			),
		],
		refine: (v, ctx) => {
			const group = Object.entries(DETECTION_GROUPS).find(([, items]) => items.includes(String(v.name)))?.[0];
			if (group && v.type !== undefined && v.type !== group)
				ctx.issue(
					'type',
					`must be '${group}' for item ${String(v.name)} (the group that lists it in the detection policy)`,
				);
			if (v.name === 'total_traffic') {
				for (const f of TOTAL_TRAFFIC_EXTRA)
					if (v[f] === undefined || v[f] === '') ctx.issue(f, 'is required when name is total_traffic (§4.5)');
			}
		},
		result: noResult,
	}),
	opOp('4.5', 'detection', {
		id: 'detection.getPolicy',
		action: 'getPolicy',
		summary: 'Get the detection mode and every protocol item',
		method: 'GET',
		suffix: '/detection/policy',
		safety: 'read',
		fields: [],
		result: rec({
			model: z.number().int(),
			...Object.fromEntries(
				Object.entries(DETECTION_GROUPS).map(([g, items]) => [
					g,
					rec(Object.fromEntries(items.map((i) => [i, i === 'total_traffic' ? totalLeaf : leaf]))),
				]),
			),
		}),
	}),
];
