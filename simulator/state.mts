/**
 * The simulator's state and its deterministic seeding. Everything here is plain data (JSON-serialisable
 * apart from Maps, which `snapshot()` in index.mts converts) so GET /__sim/state can show it whole.
 */

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

// The default settings of a new domain-port and detection level: simulator/defaults.mts.
export { defaultLeaf, defaultLevel, defaultPolicy, defaultSwitches } from './defaults.mts';

// ---------------------------------------------------------------- the world

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

// The seeded world: simulator/seed.mts.
export { seedWorld } from './seed.mts';

// Attacks from specs (control API, scenarios): simulator/makeAttack.mts.
export { makeAttack, type AttackSpec, type SourceSpec, type WaveSpec } from './makeAttack.mts';
