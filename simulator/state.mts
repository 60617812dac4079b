/**
 * The simulator's state and its deterministic seeding. Everything here is plain data (JSON-serialisable
 * apart from Maps, which `snapshot()` in index.mts converts) so GET /__sim/state can show it whole.
 */
import { Rng, intToIp, ipToInt } from './util.mts';
import { makeAttack } from './makeAttack.mts';

export interface ProtectServices {
	application_protection: number;
	origin_protection: number;
	dns_protection: number;
	cdn_federation: number;
}

export interface Customer {
	customer_id: string;
	customer_name: string;
	company: string;
	email: string;
	phone: string;
	address: string;
	website: string;
	protect_services: ProtectServices;
	site_ids: string[];
}

export interface Host {
	host_id: string;
	ip: string;
}
export interface Network {
	network_id: string;
	cidr: string;
	hosts: Host[];
}

export interface Site {
	site_id: string;
	customer_id: string;
	site_name: string;
	site_ip: string;
	/** Clean (non-attack) traffic of the site, bps. */
	baseline_bps: number;
	domain_port_ids: string[];
	networks: Network[];
}

export interface IpEntry {
	type: 'range' | 'network';
	ip?: string;
	start_ip?: string;
	end_ip?: string;
}

export interface HttpFilterPolicy {
	p_flag_id: string;
	p_name: string;
	p_desc: string;
	url: string;
	action: string[];
	action_annex: { http_code: number; page: string; url: string };
	methods: string[];
	other_iprange: { start_ip: string; end_ip: string }[];
	// Request fields kept so GET returns everything POST/PUT left (simulator extension, see README).
	host: string;
	uri: string;
	scheme: string;
	redirect_host: string;
	redirect_url: string;
	rp_code: number;
	page: string;
}

export interface SwitchNode {
	enable: number;
	name: string;
	[child: string]: SwitchNode | number | string;
}

export interface ApPolicy {
	authBase: { duration: number; recaptcha_per_ip_tps: number; threshold_tps: number };
	authBypass: { host: string; scheme: string; uri: string; url_id: number }[];
	authHttp: {
		enforce_protect: number;
		max_http_request: number;
		mode: number;
		p3p_enabled: number;
		p3p_string: string;
		trust_duration: number;
	};
	authIp: {
		action: string;
		enable: number;
		mode: number;
		/** The settings object of each action; GET shows the one of the current action. */
		objects: Record<string, Record<string, number>>;
	};
	headerCompliance: Record<'http09' | 'http10' | 'http11', Record<string, number>>;
	httpFilters: HttpFilterPolicy[];
	ipBlacklist: { enable: number; entries: IpEntry[] };
	ipWhitelist: { enable: number; entries: IpEntry[] };
	xForwardedFor: { mode: string; name: string };
	statusCodes: {
		enable: number;
		error_page: { error_code: number; error_code_rewrite: number; error_page_type: number; error_page_info: string }[];
	};
	switches: Record<string, SwitchNode>;
	uaBlacklist: {
		enable: number;
		ua_black_list: { action: string; action_annex_page: string; enable: number; ua_regex: string[] };
	};
	urlBypass: string[];
}

export interface DomainPort {
	domain_port_id: string;
	site_id: string;
	domain: string;
	port: number;
	policy: ApPolicy;
}

export interface DetectionLeaf {
	direction_pps: string;
	high_pps: string;
	low_pps: string;
	is_enabled: number;
	direction_bps?: string;
	high_bps?: string;
	low_bps?: string;
	blackhole_bps?: string;
	blackhole_pps?: string;
	blackhole_time?: number;
}

export interface LevelState {
	detection: { model: number; groups: Record<string, Record<string, DetectionLeaf>> };
	overview: { auto_profile: string; detection_mode: number; is_customize: number; mitigation_mode: number };
}

export interface AttackSource {
	ip: string;
	country: string;
	code: string;
	asn: number;
	org: string;
	latitude: number;
	longitude: number;
	weight: number;
	/** What the scenario named (ip, cidr, asn:…, country:…). */
	from: string;
}

export interface Curve {
	/** constant | ramp (linear up over rampSeconds, then flat) | points (linear between [offset s, bps, pps]). */
	shape: 'constant' | 'ramp' | 'points';
	peakBps: number;
	peakPps: number;
	rampSeconds?: number;
	points?: [number, number, number][];
}

export interface Attack {
	id: string;
	site_id: string;
	attack_type: string;
	/** Unix seconds. */
	start: number;
	/** Seconds; 0 = until stopped. */
	duration: number;
	stoppedAt?: number;
	curve: Curve;
	sources: AttackSource[];
	/** Later waves: from `at` seconds after the start, the attack comes from these sources (simulator/waves.mts). */
	waves?: { at: number; sources: AttackSource[] }[];
	autoMitigate: boolean;
	profile_name: string;
	profile_desc: string;
	protocol: string;
	dest_port: string;
}

export interface FlowDown {
	alert_id: string;
	site_id: string;
	start_time: number;
	/** 0 while ongoing. */
	end_time: number;
	router_name: string;
}

export const HTTP_FILTER_ACTIONS = [
	'ACCEPT',
	'BLOCK_HTTP',
	'PASS',
	'BUSY_PAGE',
	'URL_REDIRECTION',
	'DOMAIN_REDIRECTION',
] as const;
export const HTTP_METHODS = [
	'GET',
	'POST',
	'PUT',
	'DELETE',
	'HEAD',
	'OPTIONS',
	'TRACE',
	'CONNECTION',
	'OTHER',
] as const;
export const HEADER_NAMES = [
	'host_required',
	'user_agent_required',
	'accept_required',
	'connection_required',
	'accept_encoding_required',
] as const;
export const HTTP_TYPES = ['http09', 'http10', 'http11'] as const;
export const IP_AUTH_ACTIONS = ['ratelimit', 'blacklist', 'ratelimit_blacklist'] as const;
export const IP_AUTH_OBJECT_FIELDS: Record<string, readonly string[]> = {
	action_blacklist: ['duration', 'threshold_rps'],
	action_ratelimit: ['duration', 'ratelimit_rps', 'threshold_rps'],
	action_ratelimit_blacklist: ['blacklist_threshold_rps', 'duration', 'ratelimit_rps', 'ratelimit_threshold_rps'],
};
export const ATTACK_TYPES = [
	'Mixed',
	'TCP SYN',
	'TCP ACK',
	'TCP RST',
	'TCP NULL',
	'TCP Fragmentation',
	'DNS Flood',
	'DNS Amplification',
	'NTP Amplification',
	'SNMP Amplification',
	'SSDP Amplification',
	'UDP Fragmentation',
	'UDP Total',
	'CLDAP Reflection',
	'ICMP Invalid',
	'ICMP Total',
	'IP Fragmentation',
	'IP Bogons',
	'IP Land',
	'SIP Flood',
	'HTTP Flood',
	'HTTPS Flood',
	'Total Traffic',
	'TCP FIN-RST',
	'TCP SYN-RST',
] as const;

export const DETECTION_GROUPS: Record<string, readonly string[]> = {
	tcp: ['tcp_ack', 'tcp_fragmentation', 'tcp_invalid', 'tcp_rst', 'tcp_syn'],
	udp: [
		'chargen_amplification',
		'cldap_reflection',
		'dns_amplification',
		'dns_flood',
		'l2tp_amplification',
		'mdns_amplification',
		'memcached_amplification',
		'ms_sql_rs_amplification',
		'ntp_amplification',
		'ripv1_amplification',
		'rpcbind_amplification',
		'snmp_amplification',
		'ssdp_amplification',
		'udp_fragmentation',
		'udp_total',
	],
	icmp: ['icmp_fragmentation', 'icmp_invalid', 'icmp_total'],
	ip: ['ip_bogons', 'ip_fragmentation', 'ip_land'],
	sip: ['sip_flood'],
	http: ['http_flood', 'https_flood'],
	total_traffic: ['total_traffic'],
};

/** Auto-mitigation templates (the list operation is not in the spec; ids shown in /__sim/state). */
export const PROFILES = [
	{ id: 'auto-web', name: 'Web default', desc: 'Auto mitigation for web sites' },
	{ id: 'auto-dns', name: 'DNS default', desc: 'Auto mitigation for DNS services' },
	{ id: 'auto-game', name: 'Gaming', desc: 'Auto mitigation for UDP game servers' },
];

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

// ---------------------------------------------------------------- seeding

const FIRST = [
	'Acme',
	'Globex',
	'Initech',
	'Umbrella',
	'Hooli',
	'Stark',
	'Wayne',
	'Tyrell',
	'Cyberdyne',
	'Soylent',
	'Wonka',
	'Vandelay',
];
const SECOND = ['Corp', 'Networks', 'Media', 'Games', 'Retail', 'Bank', 'Cloud', 'Labs', 'Logistics', 'Health'];
const CITIES = ['Berlin', 'Austin', 'Osaka', 'Lyon', 'Porto', 'Leeds', 'Perth', 'Turin'];
export const COUNTRIES: { code: string; country: string; lat: number; lon: number }[] = [
	{ code: 'CN', country: 'China', lat: 35.86, lon: 104.19 },
	{ code: 'US', country: 'United States', lat: 37.09, lon: -95.71 },
	{ code: 'RU', country: 'Russia', lat: 61.52, lon: 105.31 },
	{ code: 'BR', country: 'Brazil', lat: -14.23, lon: -51.92 },
	{ code: 'IN', country: 'India', lat: 20.59, lon: 78.96 },
	{ code: 'DE', country: 'Germany', lat: 51.16, lon: 10.45 },
	{ code: 'VN', country: 'Vietnam', lat: 14.05, lon: 108.27 },
	{ code: 'NL', country: 'Netherlands', lat: 52.13, lon: 5.29 },
];

export interface World {
	customers: Map<string, Customer>;
	sites: Map<string, Site>;
	domainPorts: Map<string, DomainPort>;
	levels: Map<string, LevelState>;
	attacks: Attack[];
	flowDowns: FlowDown[];
	counters: { pFlag: number; urlId: number; alert: number; flow: number };
}

export const CUSTOMER_COUNT = 23;

/**
 * Builds the seeded world. Ids are sequential and independent of the seed (first customer 10001, its
 * first site 20001, first domain-port 30001, first network 40001, first host 50001) so tests and demos
 * can name them; names, IPs, counts of sites per customer (after the first) and history depend on the seed.
 */
export function seedWorld(rng: Rng, nowSec: number, historyDays = 60): World {
	const w: World = {
		customers: new Map(),
		sites: new Map(),
		domainPorts: new Map(),
		levels: new Map(),
		attacks: [],
		flowDowns: [],
		counters: { pFlag: 1000, urlId: 100, alert: 700000, flow: 900000 },
	};
	let siteN = 20001;
	let dpN = 30001;
	let netN = 40001;
	let hostN = 50001;
	for (let c = 0; c < CUSTOMER_COUNT; c++) {
		const id = String(10001 + c);
		const name = `${rng.pick(FIRST)} ${rng.pick(SECOND)}`;
		const slug = name.toLowerCase().replace(/[^a-z]+/g, '');
		const cust: Customer = {
			customer_id: id,
			customer_name: name,
			company: `${name} ${rng.pick(['GmbH', 'Inc.', 'Ltd.', 'S.A.'])}`,
			email: c % 5 === 4 ? '' : `ops@${slug}.example`,
			phone: c % 7 === 6 ? '' : `+1-555-${String(rng.int(1000, 9999))}`,
			address: `${rng.int(1, 200)} Main Street, ${rng.pick(CITIES)}`,
			website: `https://www.${slug}.example`,
			protect_services: {
				application_protection: c === 0 ? 1 : rng.int(0, 1),
				origin_protection: rng.int(0, 1),
				dns_protection: rng.int(0, 1),
				cdn_federation: rng.int(0, 1),
			},
			site_ids: [],
		};
		w.customers.set(id, cust);
		const nSites = c === 0 ? 2 : rng.int(1, 3);
		for (let s = 0; s < nSites; s++) {
			const site: Site = {
				site_id: String(siteN++),
				customer_id: id,
				site_name: `${slug}-site-${s + 1}`,
				site_ip: intToIp((ipToInt('203.0.113.0') as number) + ((siteN * 7) % 250) + 1),
				baseline_bps: rng.int(50, 400) * 1_000_000,
				domain_port_ids: [],
				networks: [],
			};
			cust.site_ids.push(site.site_id);
			w.sites.set(site.site_id, site);
			for (const [i, port] of [443, 80].entries()) {
				const domain = `${i === 0 ? 'www' : 'api'}.${slug}${s + 1}.example`;
				const dp: DomainPort = {
					domain_port_id: String(dpN++),
					site_id: site.site_id,
					domain,
					port,
					policy: defaultPolicy(domain),
				};
				site.domain_port_ids.push(dp.domain_port_id);
				w.domainPorts.set(dp.domain_port_id, dp);
			}
			for (let n = 0; n < 2; n++) {
				const base = (ipToInt('198.51.100.0') as number) + (netN % 16) * 16;
				const net: Network = { network_id: String(netN++), cidr: `${intToIp(base)}/28`, hosts: [] };
				for (let h = 0; h < 2; h++) net.hosts.push({ host_id: String(hostN++), ip: intToIp(base + 1 + h) });
				site.networks.push(net);
			}
			// History: a few stopped attacks and flow-down alerts over the last `historyDays` days.
			const nHist = rng.int(2, 5);
			for (let k = 0; k < nHist; k++) {
				const start = nowSec - rng.int(2, historyDays * 24) * 3600;
				const type = rng.pick([
					'UDP Total',
					'TCP SYN',
					'DNS Amplification',
					'NTP Amplification',
					'HTTP Flood',
				] as const);
				w.attacks.push(
					makeAttack(w, rng, {
						site_id: site.site_id,
						attack_type: type,
						start,
						duration: rng.int(5, 90) * 60,
						curve: { shape: 'constant', peakBps: rng.int(1, 80) * 250_000_000, peakPps: rng.int(1, 40) * 100_000 },
						sources: [{ country: rng.pick(COUNTRIES).code }, { asn: rng.int(64512, 65000) }],
						autoMitigate: true,
					}),
				);
			}
			for (let k = 0; k < 2; k++) {
				const start = nowSec - rng.int(3, historyDays * 24) * 3600;
				w.flowDowns.push({
					alert_id: `F${++w.counters.flow}`,
					site_id: site.site_id,
					start_time: start,
					end_time: start + rng.int(1, 30) * 60,
					router_name: `edge-${rng.pick(['fra', 'ams', 'iad', 'sin'])}-${rng.int(1, 4)}`,
				});
			}
		}
	}
	w.attacks.sort((a, b) => a.start - b.start);
	return w;
}

// Attacks from specs (control API, scenarios): simulator/makeAttack.mts.
export { makeAttack, type AttackSpec, type SourceSpec, type WaveSpec } from './makeAttack.mts';
