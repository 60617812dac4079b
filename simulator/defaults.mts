// The settings a new domain-port and a new detection level start with (the spec's defaults where it gives them;
// simulator/README.md where it does not).
import { DETECTION_GROUPS, type ApPolicy, type DetectionLeaf, type LevelState, type SwitchNode } from './state.mts';
import type { Rng } from './util.mts';

export function defaultSwitches(): Record<string, SwitchNode> {
	const n = (name: string, enable = 1, children: string[] = []): SwitchNode => {
		const node: SwitchNode = { enable, name };
		for (const c of children) node[c] = { enable: c === 'advanced' ? 0 : 1, name: c };
		return node;
	};
	return {
		p_auth: n('p_auth', 0),
		p_error_rewrite: n('p_error_rewrite', 0),
		p_filt: n('p_filt', 1),
		p_malf: n('p_malf', 1, ['accept_invalid_http_request', 'advanced']),
		p_wbl: n('p_wbl', 1, ['api', 'file_extension', 'mobile', 'spider', 'ua_black_list']),
	};
}

export function defaultPolicy(domain: string): ApPolicy {
	const hdr = (host: number) => ({
		host_required: host,
		user_agent_required: 0,
		accept_required: 0,
		connection_required: 0,
		accept_encoding_required: 0,
	});
	return {
		authBase: { duration: 600, recaptcha_per_ip_tps: 0, threshold_tps: 1000 },
		authBypass: [],
		authHttp: {
			enforce_protect: 1,
			max_http_request: 600,
			mode: 0,
			p3p_enabled: 0,
			p3p_string: '',
			trust_duration: 3600,
		},
		authIp: {
			action: 'ratelimit',
			enable: 0,
			mode: 0,
			objects: {
				action_blacklist: { duration: 300, threshold_rps: 500 },
				action_ratelimit: { duration: 60, ratelimit_rps: 100, threshold_rps: 200 },
				action_ratelimit_blacklist: {
					blacklist_threshold_rps: 500,
					duration: 300,
					ratelimit_rps: 100,
					ratelimit_threshold_rps: 200,
				},
			},
		},
		headerCompliance: { http09: hdr(0), http10: hdr(0), http11: hdr(1) },
		httpFilters: [],
		ipBlacklist: { enable: 0, entries: [] },
		ipWhitelist: { enable: 0, entries: [] },
		xForwardedFor: { mode: 'insert', name: '' },
		statusCodes: { enable: 1, error_page: [] },
		switches: defaultSwitches(),
		uaBlacklist: { enable: 1, ua_black_list: { action: 'block', action_annex_page: '', enable: 1, ua_regex: [] } },
		urlBypass: [`https://${domain}/health`, `https://${domain}/status`, `http://${domain}/.well-known/acme-challenge/`],
	};
}

export function defaultLeaf(group: string, rng?: Rng): DetectionLeaf {
	const low = rng ? rng.int(1, 9) * 10 : 50;
	const leaf: DetectionLeaf = { direction_pps: 'in', high_pps: `${low * 4}K`, low_pps: `${low}K`, is_enabled: 1 };
	if (group === 'total_traffic') {
		Object.assign(leaf, {
			direction_bps: 'in',
			low_bps: '1G',
			high_bps: '5G',
			blackhole_bps: '40G',
			blackhole_pps: '20M',
			blackhole_time: 1800,
		});
		leaf.low_pps = '500K';
		leaf.high_pps = '2M';
	}
	return leaf;
}

export function defaultLevel(level: 'site' | 'network' | 'host'): LevelState {
	const groups: LevelState['detection']['groups'] = {};
	for (const [g, items] of Object.entries(DETECTION_GROUPS)) {
		groups[g] = {};
		for (const it of items) groups[g][it] = defaultLeaf(g);
	}
	return {
		detection: { model: 0, groups },
		overview: {
			auto_profile: '',
			detection_mode: level === 'site' ? 1 : 0,
			is_customize: 0,
			mitigation_mode: level === 'site' ? 1 : 0,
		},
	};
}
