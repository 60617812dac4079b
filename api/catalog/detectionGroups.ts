/** §4.5 detection items and groups, as plain data (no zod: the Temporal workflows import it). */

/** §4.5 lists tcp, udp, ip, sip, http, total_traffic; the GET also has an icmp group, so 'icmp' is accepted for its items. */
export const DETECTION_TYPES = ['tcp', 'udp', 'icmp', 'ip', 'sip', 'http', 'total_traffic'] as const;
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
export const TOTAL_TRAFFIC_EXTRA = ['high_bps', 'low_bps', 'blackhole_bps', 'blackhole_pps', 'blackhole_time'] as const;
