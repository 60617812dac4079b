/** §4.5 detection: mode, policy per item, policy read. */
import type { Simulator } from '../index.mts';
import { DETECTION_GROUPS } from '../state.mts';
import { Input, THRESHOLD, thresholdValue } from '../util.mts';
import { type HandlerDef, deep } from './shared.mts';

// ---------------------------------------------------------------- detection (§4.5)

function readDetectionPolicy(sim: Simulator, b: Input) {
	const name = b.str('name', true);
	const types = sim.opts.acceptIcmpType
		? ['tcp', 'udp', 'icmp', 'ip', 'sip', 'http', 'total_traffic']
		: ['tcp', 'udp', 'ip', 'sip', 'http', 'total_traffic'];
	const type = b.oneOf('type', types, true);
	if (name !== undefined) {
		const group = Object.keys(DETECTION_GROUPS).find((g) => DETECTION_GROUPS[g].includes(name));
		if (!group)
			b.issue(
				'name',
				'must be a protocol item name listed by GET detection/policy (e.g. tcp_syn, udp_total, total_traffic)',
			);
		else if (type !== undefined && group !== type) b.issue('type', `must be '${group}' for item ${name}`);
	}
	const is_enabled = b.intOneOf('is_enabled', [0, 1], true);
	const thr = (f: string, required: boolean) => {
		const v = b.str(f, required);
		if (v !== undefined && !THRESHOLD.test(v.trim()))
			b.issue(f, 'must be a number, or a number with suffix K, M or G (e.g. 500, 1.5K, 20M, 1G)');
		return v?.trim();
	};
	const total = name === 'total_traffic';
	const high_pps = thr('high_pps', true);
	const low_pps = thr('low_pps', true);
	const high_bps = thr('high_bps', total);
	const low_bps = thr('low_bps', total);
	const blackhole_bps = thr('blackhole_bps', total);
	const blackhole_pps = thr('blackhole_pps', total);
	const blackhole_time = b.int('blackhole_time', total, 0);
	if (!total && name !== undefined)
		for (const f of ['high_bps', 'low_bps', 'blackhole_bps', 'blackhole_pps', 'blackhole_time'])
			if (b.has(f)) b.issue(f, 'may only be given when name is total_traffic');
	const cmp = (lowF: string, low?: string, high?: string) => {
		if (
			low &&
			high &&
			THRESHOLD.test(low) &&
			THRESHOLD.test(high) &&
			(thresholdValue(low) as number) > (thresholdValue(high) as number)
		)
			b.issue(lowF, `must not exceed the high threshold (${high})`);
	};
	cmp('low_pps', low_pps, high_pps);
	cmp('low_bps', low_bps, high_bps);
	return {
		name: name as string,
		type: type as string,
		is_enabled: is_enabled as number,
		high_pps,
		low_pps,
		high_bps,
		low_bps,
		blackhole_bps,
		blackhole_pps,
		blackhole_time,
	};
}

export const detection: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.5 detection
	'detection.setMode': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const model = c.b.oneOf('model', ['0', '1'] as const, true);
			c.done();
			lv.state.detection.model = Number(model);
			return undefined;
		},
	},
	'detection.setPolicy': {
		enc: 'multipart',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			const r = readDetectionPolicy(sim, c.b);
			c.done();
			const group = Object.keys(DETECTION_GROUPS).find((g) => DETECTION_GROUPS[g].includes(r.name)) as string;
			const leaf = lv.state.detection.groups[group][r.name];
			leaf.is_enabled = r.is_enabled;
			leaf.high_pps = r.high_pps as string;
			leaf.low_pps = r.low_pps as string;
			if (r.name === 'total_traffic') {
				leaf.high_bps = r.high_bps;
				leaf.low_bps = r.low_bps;
				leaf.blackhole_bps = r.blackhole_bps;
				leaf.blackhole_pps = r.blackhole_pps;
				leaf.blackhole_time = r.blackhole_time;
			}
			return undefined;
		},
	},
	'detection.getPolicy': {
		enc: 'query',
		fn: (sim, c) => {
			const lv = sim.level(c.params);
			c.done();
			return { model: lv.state.detection.model, ...deep(lv.state.detection.groups) };
		},
	},
};
