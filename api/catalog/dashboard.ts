import { z } from 'zod/v4';
import { defineOp, field, rec, req } from './define';
import type { Field, Operation } from './types';
import { idString, oneOf, parseYmdhms, unixSeconds, ymdhms } from './rules';

/** §4.4 Dashboard operations. */

const DASH = '/api/specp/op/dashboard';
export const DDOS_EVENTS_MAX_SPAN = 31 * 86400;
export const FLOW_DOWN_MAX_SPAN = 90 * 86400;
export const DETAIL_MODULES = ['traffic', 'characterization', 'traffic_patterns', 'threat_map'] as const;
export const EVENT_STATUS = ['all', 'stopped', 'ongoing'] as const;
export const SUMMARY_RANGES = ['hour', 'day', 'week', 'month'] as const;
export const SUMMARY_TYPES = ['bps', 'pps'] as const;

const siteField = field('site_id', 'path', 'string', idString('a site id'), 'Site id', req);

function dash<const Id extends string>(
	o: Omit<Operation, 'section' | 'resource' | 'auth' | 'encoding' | 'safety' | 'method'> & { id: Id },
) {
	return defineOp<Id>({
		...o,
		section: '4.4',
		resource: 'dashboard',
		auth: 'access_token',
		encoding: 'query',
		safety: 'read',
		method: 'GET',
	});
}

const siteOp = <const A extends string>(
	action: A,
	suffix: string,
	summary: string,
	result: z.ZodType,
	extra: Field[] = [],
	more: Partial<Omit<Operation, 'id'>> = {},
) =>
	dash({
		id: `dashboard.${action}` as `dashboard.${A}`,
		action,
		summary,
		path: `${DASH}/site/{site_id}/${suffix}`,
		fields: [siteField, ...extra],
		result,
		...more,
	});

const digits = (rule: string) =>
	z
		.union([z.number().int().nonnegative().transform(String), z.string()], { error: rule })
		.pipe(z.string().regex(/^\d+$/, { error: rule }));

export const ddosEvent = rec({
	alert_id: z.string(),
	attack_type: z.string(),
	duration: z.number().int(),
	start_time: z.number().int(),
	end_time: z.number().int(),
	max_bps: z.number().int(),
	max_pps: z.number().int(),
	profile_desc: z.string(),
	profile_name: z.string(),
	severity: z.number().int(),
	site_ip: z.string(),
	site_name: z.string(),
	status: z.number().int(),
});

export const flowDownAlert = rec({
	alert_id: z.string(),
	duration: z.number().int(),
	start_time: z.number().int(),
	end_time: z.number().int(),
	router_name: z.string(),
	site: z.string(),
});

const bpsPps = rec({ bps: z.number(), pps: z.number() });
const threatItem = rec({
	code: z.string(),
	country: z.string(),
	ip: z.string(),
	org: z.string(),
	size: z.string(),
	latitude: z.number(),
	longitude: z.number(),
	percent: z.number(),
});

const DETAIL_KEYS = new Set<string>(DETAIL_MODULES);
function wrapDetail(r: unknown): unknown {
	if (r && typeof r === 'object' && !Array.isArray(r) && Object.keys(r).some((k) => DETAIL_KEYS.has(k))) return r;
	if (Array.isArray(r)) {
		const first = r[0] as Record<string, unknown> | undefined;
		return first && typeof first === 'object' && 'element' in first ? { characterization: r } : { traffic_patterns: r };
	}
	if (r && typeof r === 'object') {
		const o = r as Record<string, unknown>;
		const firstBps = Array.isArray(o.bps) ? o.bps : undefined;
		return firstBps ? { threat_map: o } : { traffic: o };
	}
	return r;
}

export const dashboard = [
	dash({
		id: 'dashboard.eventDetail',
		action: 'eventDetail',
		summary: 'Get one module of a DDoS event detail (traffic, characterization, traffic_patterns, threat_map)',
		path: `${DASH}/ddos_event/{event_id}/detail`,
		fields: [
			field('event_id', 'path', 'string', idString('an event id'), 'DDoS event id (alert_id)', req),
			field('module', 'query', 'options', oneOf(DETAIL_MODULES), 'Detail module', {
				required: true,
				options: DETAIL_MODULES,
			}),
		],
		// The spec lists each module's content under the module's name; a bare module content is also accepted
		// and wrapped under its name, so callers always read result[module].
		result: z
			.unknown()
			.transform(wrapDetail)
			.pipe(
				rec({
					characterization: z
						.array(
							rec({
								country: z.string(),
								element: z.string(),
								item: z.string(),
								value: z.string(),
								percent: z.number(),
							}),
						)
						.optional(),
					threat_map: rec({ bps: z.array(threatItem), pps: z.array(threatItem) }).optional(),
					traffic: rec({
						bps: z.record(z.string(), z.array(z.array(z.number()))),
						pps: z.record(z.string(), z.array(z.array(z.number()))),
					}).optional(),
					traffic_patterns: z
						.array(
							rec({
								asn: z.number().int(),
								cidr: z.string(),
								dest_port: z.string(),
								protocol: z.string(),
								router: z.string(),
								src_port: z.string(),
								average: bpsPps,
								max: bpsPps,
								total: rec({ byte: z.number(), packet: z.number() }),
							}),
						)
						.optional(),
				}),
			),
	}),
	siteOp(
		'activeMitigation',
		'active_mitigation',
		'List active mitigations of a site',
		z.array(
			rec({
				bps: rec({ bot: z.number(), clean: z.number() }),
				pps: rec({ bot: z.number(), clean: z.number() }),
				cidr: z.string(),
				name: z.string(),
			}),
		),
		[],
		{ list: { itemsAt: '' } },
	),
	siteOp('currentTraffic', 'current_traffic', 'Get the current traffic of a site', rec({ bps_size: z.number() })),
	siteOp(
		'ddosEvents',
		'ddos_events',
		'List DDoS events of a site (window ≤ 31 days)',
		rec({ events: z.array(ddosEvent), total: z.number().int() }),
		[
			field('alert_id', 'query', 'string', z.string(), 'Filter by alert id'),
			field('site_ip', 'query', 'string', z.string(), 'Filter by site IP'),
			field('site_name', 'query', 'string', z.string(), 'Filter by site name'),
			field(
				'start',
				'query',
				'integer',
				digits('must be a non-negative integer (starting position)'),
				'Starting position (default 0)',
			),
			field('num', 'query', 'integer', digits('must be a non-negative integer (page size)'), 'Page size (default 10)'),
			field(
				'start_time',
				'query',
				'string',
				ymdhms(),
				"Window start 'YYYY-MM-DD HH:MM:SS' (default: first day of the month)",
			),
			field('end_time', 'query', 'string', ymdhms(), "Window end 'YYYY-MM-DD HH:MM:SS' (default: 31 days after start)"),
			field('status', 'query', 'options', oneOf(EVENT_STATUS), 'all, stopped or ongoing', { options: EVENT_STATUS }),
		],
		{
			list: { itemsAt: 'events', paging: 'startNum', totalAt: 'total' },
			window: { startField: 'start_time', endField: 'end_time', maxSeconds: DDOS_EVENTS_MAX_SPAN, format: 'ymdhms' },
			refine: (v, ctx) => {
				if (typeof v.start_time === 'string' && typeof v.end_time === 'string') {
					const a = parseYmdhms(v.start_time);
					const b = parseYmdhms(v.end_time);
					if (a !== undefined && b !== undefined) {
						if (b < a) ctx.issue('end_time', 'must not be before start_time');
						else if (b - a > DDOS_EVENTS_MAX_SPAN)
							ctx.issue('end_time', 'must be at most 31 days after start_time (§4.4, §8)');
					}
				}
			},
		},
	),
	siteOp(
		'flowDownEvents',
		'flow_down_events',
		'List flow-down alerts of a site (window ≤ 90 days)',
		z.array(flowDownAlert),
		[
			field(
				'start_time',
				'query',
				'string',
				unixSeconds(),
				'Window start, 10-digit timestamp (default: 90 days before now)',
			),
			field('end_time', 'query', 'string', unixSeconds(), 'Window end, 10-digit timestamp (default: now)'),
			field(
				'status',
				'query',
				'options',
				z.union([z.literal(0), z.literal(1), z.literal(2), z.enum(['0', '1', '2']).transform(Number)], {
					error: 'must be 0 (ongoing), 1 (stopped) or 2 (all)',
				}),
				'0 ongoing, 1 stopped, 2 all (default 2)',
				{ options: [0, 1, 2] },
			),
		],
		{
			list: { itemsAt: '' },
			window: { startField: 'start_time', endField: 'end_time', maxSeconds: FLOW_DOWN_MAX_SPAN, format: 'unix' },
			refine: (v, ctx) => {
				if (v.start_time !== undefined && v.end_time !== undefined) {
					const a = Number(v.start_time);
					const b = Number(v.end_time);
					if (b < a) ctx.issue('end_time', 'must not be before start_time');
					else if (b - a > FLOW_DOWN_MAX_SPAN)
						ctx.issue('end_time', 'must be at most 90 days after start_time (§4.4, §8)');
				}
			},
		},
	),
	siteOp(
		'isUnderAttack',
		'is_under_attack',
		'Is the site under attack now (status 1) and how big is the attack',
		rec({ status: z.number().int(), bps_size: z.number() }),
	),
	siteOp(
		'networkSummary',
		'network_summary',
		'Network summary of a site (apps, AS numbers, attack types, countries, IPs, protocols)',
		rec({
			app: z.array(rec({ app: z.string(), count: z.number(), size: z.number() })),
			as_num: z.array(rec({ as: z.union([z.string(), z.number()]), count: z.number(), size: z.number() })),
			attack_type: z.array(rec({ attack_type: z.string(), size: z.number() })),
			country: z.array(rec({ country: z.string(), size: z.number() })),
			ip: z.array(rec({ ip: z.string(), size: z.number() })),
			proto: z.array(rec({ proto: z.string(), count: z.number(), size: z.number() })),
		}),
		[
			field('range', 'query', 'options', oneOf(SUMMARY_RANGES), 'hour, day, week or month (default hour)', {
				options: SUMMARY_RANGES,
			}),
			field('type', 'query', 'options', oneOf(SUMMARY_TYPES), 'bps or pps (default bps)', { options: SUMMARY_TYPES }),
		],
	),
];
