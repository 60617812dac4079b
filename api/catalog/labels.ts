/**
 * The words a user reads, once: resource, operation and field labels, option labels, help texts, trigger events,
 * credential-test and error messages. The n8n nodes, the Runbook node, the CLI and error messages take their text
 * from here; the operation records (method, path, fields, rules) stay in the other catalog files.
 *
 * Style: n8n's ("Create a record", "Get many bases"); a SOC engineer's words, not wire names. Wire names appear
 * only in parentheses where a user must match them with the service's own portal.
 */

/** Resources in the order a SOC engineer looks for them (most used first), with their labels. */
export const RESOURCES: ReadonlyArray<{ value: string; label: string }> = [
	{ value: 'dashboard', label: 'Attack Dashboard' },
	{ value: 'applicationProtection.ipBlacklist', label: 'IP Blacklist' },
	{ value: 'applicationProtection.ipWhitelist', label: 'IP Whitelist' },
	{ value: 'applicationProtection.switch', label: 'Protection Switch' },
	{ value: 'applicationProtection.httpFilter', label: 'HTTP Filter Policy' },
	{ value: 'detection', label: 'DDoS Detection' },
	{ value: 'overview', label: 'DDoS Mitigation Overview' },
	{ value: 'customer', label: 'Customer' },
	{ value: 'applicationProtection.uaBlacklist', label: 'User-Agent Blacklist' },
	{ value: 'applicationProtection.urlBypass', label: 'URL Bypass' },
	{ value: 'applicationProtection.statusCodes', label: 'Status Code Overwrite' },
	{ value: 'applicationProtection.authHttp', label: 'HTTP Authentication' },
	{ value: 'applicationProtection.authIp', label: 'IP Authentication' },
	{ value: 'applicationProtection.authBase', label: 'Authentication Auto-Mitigation' },
	{ value: 'applicationProtection.authBypass', label: 'Authentication Bypass' },
	{ value: 'applicationProtection.headerCompliance', label: 'Request Header Compliance' },
	{ value: 'applicationProtection.xForwardedFor', label: 'X-Forwarded-For' },
	{ value: 'authorization', label: 'Authorization (Tokens)' },
];

export function resourceLabel(resource: string): string {
	return RESOURCES.find((r) => r.value === resource)?.label ?? resource;
}

export interface OperationWords {
	/** Operation option name in n8n ("Add", "Get Many"). */
	name: string;
	/** n8n's `action` (what the nodes panel lists and the default node name): "Block an IP address or range". */
	action: string;
	/** One sentence shown under the operation. */
	description: string;
}

/** Every operation's words, by catalog id. */
export const OPERATIONS: Readonly<Record<string, OperationWords>> = {
	'authorization.connect': {
		name: 'Start User Authorization',
		action: 'Start the user authorization flow',
		description: 'Opens the authorization page; the service redirects to your address with a code',
	},
	'authorization.accessToken': {
		name: 'Exchange Code',
		action: 'Exchange an authorization code for a user token',
		description: 'Turns the code from the redirect into a user token and refresh token (outputs are masked)',
	},
	'authorization.refreshToken': {
		name: 'Renew User Token',
		action: 'Renew a user token',
		description: 'Uses a refresh token you give; the service replaces it (outputs are masked)',
	},
	'authorization.appToken': {
		name: 'Get App Token',
		action: 'Get an app token',
		description:
			'Checks that the app gets a token for itself and says until when it is valid and which kind it is (never the token: the credential fetches its own)',
	},
	'customer.get': {
		name: 'Get',
		action: 'Get a customer',
		description: 'Details and protected services of one customer',
	},
	'customer.list': {
		name: 'Get Many',
		action: 'Get many customers',
		description: 'Customers of the SPE portal; Return All reads every page',
	},
	'applicationProtection.authBase.set': {
		name: 'Update',
		action: 'Update authentication auto-mitigation',
		description: 'Duration and request-rate threshold of authentication auto-mitigation',
	},
	'applicationProtection.authBase.get': {
		name: 'Get',
		action: 'Get authentication auto-mitigation',
		description: 'Current duration and thresholds',
	},
	'applicationProtection.authBypass.add': {
		name: 'Add',
		action: 'Add an authentication bypass',
		description: 'Requests to this host and path skip authentication',
	},
	'applicationProtection.authBypass.list': {
		name: 'Get Many',
		action: 'Get many authentication bypasses',
		description: 'Every authentication bypass of the domain',
	},
	'applicationProtection.authBypass.delete': {
		name: 'Delete',
		action: 'Delete an authentication bypass',
		description: 'Removes one bypass record',
	},
	'applicationProtection.authHttp.set': {
		name: 'Update',
		action: 'Update HTTP authentication',
		description: 'Mode, strength and limits of HTTP authentication',
	},
	'applicationProtection.authHttp.get': {
		name: 'Get',
		action: 'Get HTTP authentication',
		description: 'Current HTTP authentication settings',
	},
	'applicationProtection.authIp.set': {
		name: 'Update',
		action: 'Update IP authentication',
		description: 'Mode and action of IP authentication',
	},
	'applicationProtection.authIp.get': {
		name: 'Get',
		action: 'Get IP authentication',
		description: 'Current IP authentication settings',
	},
	'applicationProtection.headerCompliance.set': {
		name: 'Update',
		action: 'Update a required request header',
		description: 'Require or stop requiring one header for one HTTP version',
	},
	'applicationProtection.headerCompliance.get': {
		name: 'Get',
		action: 'Get the required request headers',
		description: 'Which headers are required, per HTTP version',
	},
	'applicationProtection.httpFilter.create': {
		name: 'Create',
		action: 'Create an HTTP filter policy',
		description: 'A new rule for matching requests (one create or edit at a time per domain)',
	},
	'applicationProtection.httpFilter.list': {
		name: 'Get Many',
		action: 'Get many HTTP filter policies',
		description: 'Every HTTP filter policy of the domain',
	},
	'applicationProtection.httpFilter.get': {
		name: 'Get',
		action: 'Get an HTTP filter policy',
		description: 'One policy with its rules',
	},
	'applicationProtection.httpFilter.update': {
		name: 'Update',
		action: 'Update an HTTP filter policy',
		description: 'Replaces the policy with the values given (one create or edit at a time per domain)',
	},
	'applicationProtection.httpFilter.delete': {
		name: 'Delete',
		action: 'Delete an HTTP filter policy',
		description: 'Removes one policy',
	},
	'applicationProtection.ipBlacklist.add': {
		name: 'Block',
		action: 'Block IP addresses or ranges',
		description:
			'Puts addresses, ranges or CIDRs on the IP blacklist (merged into the fewest ranges; says what it blocked and refused)',
	},
	'applicationProtection.ipBlacklist.get': {
		name: 'Get Many',
		action: 'Get the blocked IPs',
		description: 'Every entry of the IP blacklist',
	},
	'applicationProtection.ipBlacklist.remove': {
		name: 'Unblock',
		action: 'Unblock IP addresses or ranges',
		description: 'Removes entries from the IP blacklist',
	},
	'applicationProtection.ipWhitelist.add': {
		name: 'Allow',
		action: 'Allow an IP address or range',
		description: 'Puts an address, range or CIDR on the IP whitelist: its traffic is always let through',
	},
	'applicationProtection.ipWhitelist.get': {
		name: 'Get Many',
		action: 'Get the allowed IPs',
		description: 'Every entry of the IP whitelist',
	},
	'applicationProtection.ipWhitelist.remove': {
		name: 'Remove',
		action: 'Remove IP addresses from the whitelist',
		description: 'Removes entries from the IP whitelist',
	},
	'applicationProtection.xForwardedFor.set': {
		name: 'Update',
		action: 'Update the X-Forwarded-For policy',
		description: 'How the X-Forwarded-For header is written',
	},
	'applicationProtection.xForwardedFor.get': {
		name: 'Get',
		action: 'Get the X-Forwarded-For policy',
		description: 'Current X-Forwarded-For mode',
	},
	'applicationProtection.statusCodes.create': {
		name: 'Create',
		action: 'Create a status code overwrite',
		description: 'Answer another status code or page instead of an error code',
	},
	'applicationProtection.statusCodes.list': {
		name: 'Get Many',
		action: 'Get many status code overwrites',
		description: 'Every status code overwrite of the domain',
	},
	'applicationProtection.statusCodes.update': {
		name: 'Update',
		action: 'Update a status code overwrite',
		description: 'Changes the overwrite of one status code',
	},
	'applicationProtection.statusCodes.delete': {
		name: 'Delete',
		action: 'Delete a status code overwrite',
		description: 'Removes the overwrite of one status code',
	},
	'applicationProtection.switch.set': {
		name: 'Turn On or Off',
		action: 'Turn a protection on or off',
		description: 'Switches one protection of the domain on or off',
	},
	'applicationProtection.switch.list': {
		name: 'Get Many',
		action: 'Get the protection switches',
		description: 'Every protection switch of the domain and its state',
	},
	'applicationProtection.uaBlacklist.add': {
		name: 'Block',
		action: 'Block user agents',
		description: 'Adds user-agent patterns to the blacklist',
	},
	'applicationProtection.urlBypass.delete': {
		name: 'Delete',
		action: 'Delete URL bypasses',
		description: 'Removes URLs from the bypass list (unknown URLs are skipped)',
	},
	'dashboard.eventDetail': {
		name: 'Get Event Detail',
		action: 'Get the detail of a DDoS event',
		description: 'Traffic, characterization, traffic patterns or threat map of one event',
	},
	'dashboard.activeMitigation': {
		name: 'Get Active Mitigations',
		action: 'Get the active mitigations',
		description: 'Mitigations running now on the site',
	},
	'dashboard.currentTraffic': {
		name: 'Get Current Traffic',
		action: 'Get the current traffic',
		description: 'Traffic of the site right now',
	},
	'dashboard.ddosEvents': {
		name: 'Get Many DDoS Events',
		action: 'Get many DDoS events',
		description:
			'DDoS events of the site in a time window: the last 24 hours unless From / To are given (long windows are read in parts)',
	},
	'dashboard.flowDownEvents': {
		name: 'Get Many Flow-Down Alerts',
		action: 'Get many flow-down alerts',
		description:
			'Flow-down alerts of the site in a time window: the last 24 hours unless From / To are given (long windows are read in parts)',
	},
	'dashboard.isUnderAttack': {
		name: 'Check Under Attack',
		action: 'Check whether a site is under attack',
		description: 'Whether the site is under attack now and how big the attack is',
	},
	'dashboard.networkSummary': {
		name: 'Get Network Summary',
		action: 'Get the network summary',
		description: 'Top applications, AS numbers, attack types, countries, IPs and protocols',
	},
	'detection.setMode': { name: 'Set Mode', action: 'Set the detection mode', description: 'Normal or rapid detection' },
	'detection.setPolicy': {
		name: 'Update Threshold',
		action: 'Update a detection threshold',
		description: 'Alert thresholds of one traffic type',
	},
	'detection.getPolicy': {
		name: 'Get',
		action: 'Get the detection settings',
		description: 'Detection mode and the thresholds of every traffic type',
	},
	'overview.setProfile': {
		name: 'Set Profile',
		action: 'Set the auto-mitigation profile',
		description: 'Needed when detection runs in auto mode',
	},
	'overview.setSwitch': {
		name: 'Turn On or Off',
		action: 'Turn detection or mitigation on or off',
		description: 'Detection (site level), custom or mitigation (network and host level)',
	},
	'overview.getSwitch': {
		name: 'Get',
		action: 'Get the detection and mitigation switches',
		description: 'Switches and auto-mitigation profile',
	},
};

export function operationWords(opId: string): OperationWords {
	return OPERATIONS[opId] ?? { name: opId, action: opId, description: '' };
}

/** "IP Blacklist › Add": how errors name an operation. */
export function operationTitle(opId: string, resource = opId.slice(0, opId.lastIndexOf('.'))): string {
	return `${resourceLabel(resource)} › ${operationWords(opId).name}`;
}

export interface FieldWords {
	label: string;
	/** Help text under the field. */
	hint?: string;
	placeholder?: string;
	/** Shown before every other field of the operation (the one thing the user came to give). */
	first?: boolean;
}

/**
 * Where a site's and a domain-port's IDs come from: the API has no operation that lists sites or domain-ports
 * (§4 "not shown"), so the hint says where a user finds them.
 */
export const SITE_ID_HINT =
	"ID of the protected site: site_id of a Security Service Trigger item or DDoS event, or the site's ID in the provider's console (the API has no operation that lists sites)";
export const DOMAIN_PORT_ID_HINT =
	"ID of one domain and port of the site: domain_port_id of an Attack Started trigger item (given on the trigger), or the domain-port's ID in the provider's console (the API has no operation that lists them)";

/** Field words by wire name (the same name means the same thing in every operation). */
export const FIELDS: Readonly<Record<string, FieldWords>> = {
	app_id: { label: 'App ID', hint: 'App ID from the developer platform' },
	secret: { label: 'App Secret' },
	redirect_uri: {
		label: 'Redirect Address',
		hint: 'Where the service sends the user back with a code (same domain as registered)',
	},
	xspe: { label: 'Portal Value (xspe)', hint: 'Passed by the portal to the app entrance' },
	state: { label: 'State', hint: 'Random value checked when the user comes back' },
	code: { label: 'Authorization Code', hint: 'Code from the redirect' },
	refresh_token: { label: 'Refresh Token', hint: 'The service replaces it: store the new one from the output' },
	customer_id: { label: 'Customer', hint: 'Choose from the list, or give the customer ID' },
	page: { label: 'Page' },
	site_id: { label: 'Site ID', hint: SITE_ID_HINT, placeholder: 'e.g. 20001' },
	domain_port_id: { label: 'Domain-Port ID', hint: DOMAIN_PORT_ID_HINT, placeholder: 'e.g. 30001' },
	duration: { label: 'Duration (Seconds)', hint: 'How long auto-mitigation stays on' },
	threshold_tps: { label: 'Threshold (Requests per Second)' },
	host: { label: 'Host', hint: 'Host name of the requests this applies to', placeholder: 'www.example.com' },
	scheme: { label: 'Scheme' },
	uri: { label: 'Path', hint: 'Request path; regular expressions are allowed', placeholder: '/login' },
	url_id: { label: 'Bypass Record ID' },
	enforce_protect: { label: 'Strength' },
	max_http_request: { label: 'Max Requests per Minute per User' },
	mode: { label: 'Mode' },
	p3p_enabled: { label: 'Send P3P Header' },
	p3p_string: { label: 'P3P Header Text', hint: 'Text of the P3P header sent with the answers' },
	trust_duration: { label: 'Trust Duration (Seconds)' },
	action: { label: 'Action' },
	enable: { label: 'Enabled' },
	action_blacklist: { label: 'Blacklist Settings' },
	action_ratelimit: { label: 'Rate Limit Settings' },
	action_ratelimit_blacklist: { label: 'Rate Limit and Blacklist Settings' },
	http_type: { label: 'HTTP Version' },
	name: { label: 'Name' },
	value: { label: 'Required' },
	p_name: { label: 'Policy Name' },
	p_desc: { label: 'Policy Description' },
	methods: { label: 'Request Methods', hint: 'Match only these methods (none: all)' },
	other_iprange: {
		label: 'Source IP Ranges',
		hint: 'Match only these sources (at most 256 addresses in total)',
		placeholder: '203.0.113.1-203.0.113.20',
	},
	page_http: { label: 'Busy Page' },
	redirect_host: { label: 'Redirect Host', placeholder: 'www.example.com' },
	redirect_url: { label: 'Redirect Path', placeholder: '/maintenance.html' },
	rp_code: { label: 'Redirect Status Code' },
	p_flag_id: { label: 'Policy', hint: 'Choose from the list, or give the policy ID' },
	ip_black_list: {
		first: true,
		label: 'IP Address or Range',
		hint: "The attacker's IPv4 source to block: an address (203.0.113.7), a range (203.0.113.1-203.0.113.20) or a CIDR (203.0.113.0/24). Never the site's own address (site_ip of an event is the victim, not the attacker). Refused before sending: wider than /16, special ranges (0.0.0.0/8, 127/8, 169.254/16, 224/4, 240/4), protected ranges, the site's own addresses",
		placeholder: '203.0.113.7',
	},
	ip_white_list: {
		first: true,
		label: 'IP Address or Range',
		hint: 'A trusted IPv4 source whose traffic is always let through (never filtered): an address (203.0.113.7), a range (203.0.113.1-203.0.113.20) or a CIDR (203.0.113.0/24). Never an attacking source. Refused before sending: wider than /16, special ranges (0.0.0.0/8, 127/8, 169.254/16, 224/4, 240/4)',
		placeholder: '203.0.113.7',
	},
	portal_version: { label: 'Portal Version', hint: 'Portals from 2023.2.6 on no longer offer Secure' },
	error_code: { label: 'Status Code', hint: 'The error code to overwrite (400-417, 500-505)' },
	error_code_rewrite: { label: 'Answer With Status Code', hint: 'Status code sent instead (100-999)' },
	error_page_type: { label: 'Error Page', hint: 'Which page is shown with the new status code' },
	error_page_info: { label: 'Custom Page URL', placeholder: 'https://www.example.com/error.html' },
	ua_regex: {
		label: 'User-Agent Patterns',
		hint: 'Regular expressions matched against the User-Agent header. A pattern that matches every user agent (.*, .+) is refused before sending',
	},
	action_annex_page: { label: 'Page Shown' },
	url_bypass: { label: 'URLs' },
	event_id: { label: 'Event ID', hint: 'The alert ID of a DDoS event' },
	module: { label: 'Detail' },
	alert_id: { label: 'Alert ID' },
	site_ip: { label: 'Site IP' },
	site_name: { label: 'Site Name' },
	start: { label: 'Skip' },
	// The node pages by itself and hides `num`; the CLI and the generated types still name it.
	num: { label: 'Page Size' },
	start_time: { label: 'From (UTC)', hint: 'Start of the window; empty: 24 hours before To' },
	end_time: { label: 'To (UTC)', hint: 'End of the window; empty: now' },
	status: { label: 'Status' },
	range: { label: 'Period' },
	type: { label: 'Unit' },
	network_id: { label: 'Network ID', hint: '0 for the whole site' },
	host_id: { label: 'Host ID', hint: '0 for the whole network' },
	model: { label: 'Detection Mode' },
	is_enabled: { label: 'Enabled' },
	high_pps: {
		label: 'Severe Alert Threshold (Packets/s)',
		hint: 'A number, or a number with K, M or G',
		placeholder: '10K',
	},
	low_pps: { label: 'Alert Threshold (Packets/s)', hint: 'A number, or a number with K, M or G', placeholder: '5K' },
	high_bps: { label: 'Severe Alert Threshold (Bits/s)', placeholder: '1G' },
	low_bps: { label: 'Alert Threshold (Bits/s)', placeholder: '500M' },
	blackhole_bps: { label: 'Blackhole Threshold (Bits/s)' },
	blackhole_pps: { label: 'Blackhole Threshold (Packets/s)' },
	blackhole_time: { label: 'Blackhole Duration (Seconds)' },
	profile_id: { label: 'Auto-Mitigation Profile ID' },
	is_enable: { label: 'On' },
	switch_type: { label: 'Switch' },
};

/** The parts of an object field (IP authentication's action settings): label and what to enter. */
export const OBJECT_PARTS: Readonly<Record<string, FieldWords>> = {
	duration: { label: 'Duration (Seconds)', hint: 'How long the action lasts for a source, in seconds' },
	threshold_rps: {
		label: 'Threshold (Requests per Second)',
		hint: 'Requests per second from one source that start the action',
	},
	ratelimit_rps: {
		label: 'Rate Limit (Requests per Second)',
		hint: 'Requests per second a limited source may still send',
	},
	blacklist_threshold_rps: {
		label: 'Blacklist Threshold (Requests per Second)',
		hint: 'Requests per second that put a source on the blacklist',
	},
	ratelimit_threshold_rps: {
		label: 'Rate Limit Threshold (Requests per Second)',
		hint: 'Requests per second that start rate limiting a source',
	},
};

/** Words of the node's own containers. */
export const NODE_WORDS = {
	additionalFields: 'Optional settings of this operation; leave out what you do not need',
	entry: 'One entry per row',
};

/** Words of one field in one operation (a few names mean something else in one operation). */
export function fieldWords(opId: string, name: string): FieldWords {
	const special = FIELD_IN_OPERATION[`${opId}:${name}`];
	return special ?? FIELDS[name] ?? { label: name };
}

const FIELD_IN_OPERATION: Readonly<Record<string, FieldWords>> = {
	'applicationProtection.httpFilter.create:page': {
		label: 'Busy Page',
		hint: 'Busy page configured by the administrator',
	},
	'applicationProtection.httpFilter.update:page': {
		label: 'Busy Page',
		hint: 'Busy page configured by the administrator',
	},
	'applicationProtection.switch.set:name': {
		label: 'Protection',
		hint: 'Choose from the switch tree, or give a switch name',
	},
	'applicationProtection.switch.set:enable': {
		label: 'Turn',
		hint: 'Turning a protection off leaves the domain without it',
	},
	'applicationProtection.headerCompliance.set:name': { label: 'Header' },
	'applicationProtection.xForwardedFor.set:name': { label: 'Header Name', hint: 'Required when the mode is Secure' },
	'applicationProtection.uaBlacklist.add:action': { label: 'Action', hint: 'Action for matching user agents' },
	'applicationProtection.uaBlacklist.add:enable': { label: 'Enabled' },
	'applicationProtection.ipBlacklist.add:ip_black_list': {
		first: true,
		label: 'IP Address or Range',
		hint: 'One or many: addresses, start-end ranges or CIDRs separated by commas, or a list from an expression (e.g. {{ $json.attacking_ranges }} of the trigger). Merged into the fewest ranges; one request per range; entries already blocked or whitelisted are skipped and reported',
		placeholder: '203.0.113.7, 198.51.100.0/28',
	},
	'applicationProtection.ipBlacklist.remove:ip_black_list': {
		first: true,
		label: 'IP Addresses or Ranges',
		hint: 'Blacklist entries to unblock, comma-separated, written as IP Blacklist › Get shows them (start_ip-end_ip, or ip)',
	},
	'applicationProtection.ipWhitelist.remove:ip_white_list': {
		first: true,
		label: 'IP Addresses or Ranges',
		hint: 'Whitelist entries to remove, comma-separated, written as IP Whitelist › Get shows them (start_ip-end_ip, or ip)',
	},
	'applicationProtection.ipWhitelist.add:allowWideBlock': {
		label: 'Allow Wide Entry (Reason)',
		hint: 'Only to let more than 65,536 addresses through (wider than /16): why. Recorded in the output; never lifts the special ranges. Leave empty otherwise',
	},
	'applicationProtection.ipBlacklist.add:allowWideBlock': {
		label: 'Allow Wide Block (Reason)',
		hint: "Only to block more than 65,536 addresses (wider than /16): why. Recorded in the output; never lifts the special ranges, protected ranges or the site's own addresses. Leave empty otherwise",
	},
	'applicationProtection.ipBlacklist.add:site_id': {
		label: 'Site ID',
		hint: `The site whose blacklist gets the entries. ${SITE_ID_HINT}`,
		placeholder: 'e.g. 20001',
	},
	'applicationProtection.ipBlacklist.add:domain_port_id': {
		label: 'Domain-Port ID',
		hint: `The domain-port whose blacklist gets the entries. ${DOMAIN_PORT_ID_HINT}`,
		placeholder: 'e.g. 30001',
	},
	'applicationProtection.ipWhitelist.add:site_id': {
		label: 'Site ID',
		hint: `The site whose whitelist gets the entry. ${SITE_ID_HINT}`,
		placeholder: 'e.g. 20001',
	},
	'applicationProtection.ipWhitelist.add:domain_port_id': {
		label: 'Domain-Port ID',
		hint: `The domain-port whose whitelist gets the entry. ${DOMAIN_PORT_ID_HINT}`,
		placeholder: 'e.g. 30001',
	},
	'applicationProtection.ipBlacklist.remove:ip_black_list#entry': { label: 'Blocked Entry' },
	'applicationProtection.ipWhitelist.remove:ip_white_list#entry': { label: 'Allowed Entry' },
	'applicationProtection.statusCodes.update:error_code': {
		label: 'Status Code',
		hint: 'The overwritten status code (selects the entry)',
	},
	'applicationProtection.statusCodes.delete:error_code': {
		label: 'Status Code',
		hint: 'The overwritten status code (selects the entry)',
	},
	'detection.setPolicy:name': {
		label: 'Traffic Type',
		hint: 'Choose from the detection settings, or give an item name; the group follows from it',
	},
	'detection.setPolicy:type': { label: 'Traffic Group', hint: 'Follows from the traffic type' },
	'dashboard.ddosEvents:status': { label: 'Status' },
	'dashboard.flowDownEvents:start_time': { label: 'From (UTC)' },
	'dashboard.flowDownEvents:end_time': { label: 'To (UTC)' },
	'dashboard.networkSummary:type': { label: 'Unit' },
	'dashboard.networkSummary:range': { label: 'Period' },
};

/** Option labels by field name (values stay the wire values). */
export const OPTIONS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
	scheme: { http: 'HTTP', https: 'HTTPS' },
	enforce_protect: { 1: 'Low', 2: 'Medium', 3: 'High' },
	mode: {
		0: 'Off',
		1: 'On',
		2: 'Auto',
		secure: 'Secure (Replace With a Trusted Header)',
		append: 'Append Client IP',
		reset: 'Reset to Client IP',
		insert: 'Insert Client IP',
	},
	enable: { 0: 'Off', 1: 'On', 2: 'Auto' },
	action: {
		ratelimit: 'Rate Limit',
		blacklist: 'Blacklist',
		ratelimit_blacklist: 'Rate Limit, Then Blacklist',
		ACCEPT: 'Accept',
		BLOCK_HTTP: 'Block',
		PASS: 'Pass (Skip Other Rules)',
		BUSY_PAGE: 'Show Busy Page',
		URL_REDIRECTION: 'Redirect to URL',
		DOMAIN_REDIRECTION: 'Redirect to Domain',
	},
	http_type: { http09: 'HTTP/0.9', http10: 'HTTP/1.0', http11: 'HTTP/1.1' },
	name: {
		host_required: 'Host',
		user_agent_required: 'User-Agent',
		accept_required: 'Accept',
		connection_required: 'Connection',
		accept_encoding_required: 'Accept-Encoding',
		p_auth: 'Authentication',
		p_error_rewrite: 'Status Code Overwrite',
		p_filt: 'HTTP Filter',
		p_malf: 'Malformed Request Protection',
		accept_invalid_http_request: 'Accept Invalid HTTP Requests',
		advanced: 'Advanced Protection',
		p_wbl: 'IP Blacklist and Whitelist',
		api: 'API Protection',
		file_extension: 'File Extension Protection',
		mobile: 'Mobile Protection',
		spider: 'Crawler Protection',
		ua_black_list: 'User-Agent Blacklist',
		tcp_ack: 'TCP ACK',
		tcp_fragmentation: 'TCP Fragmentation',
		tcp_invalid: 'TCP Invalid',
		tcp_rst: 'TCP RST',
		tcp_syn: 'TCP SYN',
		chargen_amplification: 'CHARGEN Amplification',
		cldap_reflection: 'CLDAP Reflection',
		dns_amplification: 'DNS Amplification',
		dns_flood: 'DNS Flood',
		l2tp_amplification: 'L2TP Amplification',
		mdns_amplification: 'mDNS Amplification',
		memcached_amplification: 'Memcached Amplification',
		ms_sql_rs_amplification: 'MS SQL Resolution Service Amplification',
		ntp_amplification: 'NTP Amplification',
		ripv1_amplification: 'RIPv1 Amplification',
		rpcbind_amplification: 'RPCbind Amplification',
		snmp_amplification: 'SNMP Amplification',
		ssdp_amplification: 'SSDP Amplification',
		udp_fragmentation: 'UDP Fragmentation',
		udp_total: 'UDP Total',
		icmp_fragmentation: 'ICMP Fragmentation',
		icmp_invalid: 'ICMP Invalid',
		icmp_total: 'ICMP Total',
		ip_bogons: 'IP Bogons',
		ip_fragmentation: 'IP Fragmentation',
		ip_land: 'IP Land',
		sip_flood: 'SIP Flood',
		http_flood: 'HTTP Flood',
		https_flood: 'HTTPS Flood',
		total_traffic: 'Total Traffic',
	},
	methods: { CONNECTION: 'CONNECT', OTHER: 'Other Methods' },
	rp_code: { 301: 'Moved Permanently (301)', 302: 'Found (302)' },
	portal_version: { legacy: 'Before 2023.2.6', '2023.2.6': '2023.2.6 or Later' },
	error_page_type: { 0: 'Default Page', 1: 'Provider Page', 2: 'Custom Page (URL)' },
	module: {
		traffic: 'Traffic',
		characterization: 'Characterization',
		traffic_patterns: 'Traffic Patterns',
		threat_map: 'Threat Map',
	},
	status: { all: 'All', stopped: 'Stopped', ongoing: 'Ongoing', 0: 'Ongoing', 1: 'Stopped', 2: 'All' },
	range: { hour: 'Last Hour', day: 'Last Day', week: 'Last Week', month: 'Last Month' },
	type: {
		bps: 'Bits per Second',
		pps: 'Packets per Second',
		tcp: 'TCP',
		udp: 'UDP',
		icmp: 'ICMP',
		ip: 'IP',
		sip: 'SIP',
		http: 'HTTP',
		total_traffic: 'Total Traffic',
	},
	model: { 0: 'Normal', 1: 'Rapid' },
	switch_type: {
		detection: 'Detection (Site Level)',
		custom: 'Custom Protection (Network or Host Level)',
		mitigation: 'Mitigation (Network or Host Level)',
	},
};

export function optionLabel(fieldName: string, value: string | number): string | undefined {
	return OPTIONS[fieldName]?.[String(value)];
}

/** Trigger events: the option name, n8n's `action` label and the description. */
export const TRIGGER_EVENTS: ReadonlyArray<{ value: string; name: string; action: string; description: string }> = [
	{
		value: 'newDdosEvent',
		name: 'New DDoS Event',
		action: 'On new DDoS event',
		description: 'A DDoS event of the site not seen before (any status)',
	},
	{
		value: 'attackStarted',
		name: 'Attack Started',
		action: 'On attack started',
		description: 'A DDoS event of the site that is ongoing and was not seen as ongoing before',
	},
	{
		value: 'attackStopped',
		name: 'Attack Stopped',
		action: 'On attack stopped',
		description: 'A DDoS event of the site that has stopped and was not seen as stopped before',
	},
	{
		value: 'newFlowDownAlert',
		name: 'New Flow-Down Alert',
		action: 'On new flow-down alert',
		description: 'A flow-down alert of the site not seen before',
	},
];

/** Readable forms added next to wire values in outputs. */
export const SEVERITY: Readonly<Record<number, string>> = { 0: 'low', 1: 'medium', 2: 'high' };

/** What the credential's Test button reports. */
export const credentialTestText = {
	badBaseUrl: 'Base URL must start with https:// or http:// (the address of the service, without /api or /oauth)',
	appTokenRefused: (appId: string, msg: string, code: number) =>
		`The service refused a new app token for App ID "${appId}": ${msg || 'no reason given'} (code ${code}). Check the App ID and Secret.`,
	appTokenOk: (appId: string, customers: number) =>
		`Got a new app token for App ID "${appId}" with this Secret, and read the customer list with it (${customers} on the first page).`,
	newTokenRefused: (msg: string, code: number) =>
		`The service gave a new app token but refused it for the customer list: ${msg || 'no reason given'} (code ${code}).`,
	userTokenOk:
		'The stored user access token works (the customer list was read). The refresh token was not used: renewing it would replace it.',
	userTokenRejected: (msg: string, code: number) =>
		`The service is reachable, but it refused the stored user access token (${msg || 'no reason given'}, code ${code}). The refresh token was not tried here (renewing it would replace it); the next run renews the token.`,
	userTokenUnchecked:
		'The service answers at this address. The refresh token was not tried (renewing it would replace it); the first run checks it.',
	clusterTokenUnchecked:
		"The service answers at this address. The token comes from the customer's tenant workflow through the node's Temporal API credential; the first run checks it.",
	notTheService: (baseUrl: string, status: number) =>
		`${baseUrl} answered HTTP ${status} without the service's {code, msg} envelope: is the Base URL right?`,
	unreachable: (baseUrl: string, why: string) => `Could not reach the service at ${baseUrl}: ${why}`,
	invalid: (issues: string) => `The credential is incomplete: ${issues}`,
};

/** How node errors read. */
export const errorText = {
	invalidInput: (title: string, issues: string) => `${title}: ${issues}. Nothing was sent.`,
	issue: (label: string, rule: string) => `${label} ${rule}`,
	refused: (title: string, msg: string, code: number) =>
		`${title}: the service refused the request: ${msg || 'no reason given'} (code ${code})`,
	credentialRefused: (msg: string, code: number) =>
		`The service refused the credential: ${msg || 'no reason given'} (code ${code}). Check the App ID and Secret (or refresh token) of the Security Service credential.`,
	credentialRefusedHint: (title: string) => `Nothing was sent for ${title}: no access token could be obtained.`,
	testEvent: (title: string) =>
		`${title}: this item is the trigger's test event (Fetch Test Event: a past event or a sample, test_event: true), not a live attack. Nothing was sent. To write on it anyway, turn on Write on Test Events.`,
	testEventOption:
		"Whether this write may act on the trigger's test event (Fetch Test Event marks a past event or a sample with test_event: true). Off: such an item stops the step and nothing is sent",
};

/** The Runbook node's words. */
export const RUNBOOK = {
	// Start first (what a user comes for), then alphabetical.
	operations: [
		{
			name: 'Start',
			value: 'start',
			action: 'Start an attack-response runbook',
			description: 'Start an attack-response runbook from a plan',
		},
		{
			name: 'Add Expiring Block',
			value: 'blockAdd',
			action: 'Add an expiring block',
			description:
				'Blacklist an address, range or CIDR on a domain-port; Temporal removes exactly that entry when the time is up',
		},
		{
			name: 'Cancel',
			value: 'cancel',
			action: 'Cancel a runbook',
			description: 'Request cancellation: the runbook reverts its changes, then stops',
		},
		{
			name: 'Decide',
			value: 'decide',
			action: 'Approve or reject a runbook',
			description:
				'Approve or reject the planned changes of a runbook waiting for approval; returns the decision, or the refusal',
		},
		{
			name: 'Describe',
			value: 'describe',
			action: 'Describe a runbook',
			description: 'Status, run ID, start and close time',
		},
		{
			name: 'Extend or Shorten Block',
			value: 'blockExtend',
			action: 'Change when an expiring block ends',
			description: 'Set a new remaining time for an expiring block (longer or shorter)',
		},
		{
			name: 'List Blocks',
			value: 'blockList',
			action: 'List expiring blocks',
			description: 'Expiring blocks of one domain-port, or of every domain-port of a site',
		},
		{
			name: 'Query',
			value: 'query',
			action: 'Query a runbook',
			description: 'Read state, changes, audit trail, plan or result, or create the attack report (HTML file)',
		},
		{
			name: 'Remove Block Now',
			value: 'blockRemove',
			action: 'Remove an expiring block now',
			description: 'Remove the entry now instead of at its expiry',
		},
		{
			name: 'Signal',
			value: 'signal',
			action: 'Signal a runbook',
			description:
				'Abort or extend the cooldown (Approve / Reject here are the same as Decide: the same rules, the decision comes back)',
		},
	],
	signals: [
		{ name: 'Abort', value: 'abort', description: 'Stop mitigating and revert now' },
		{
			name: 'Approve (Same as Decide)',
			value: 'approve',
			description:
				'Sent as the Decide operation (the runbook checks the approver; a refusal is an error). Kept for saved workflows: use Decide',
		},
		{ name: 'Extend Cooldown', value: 'extend', description: 'Wait longer before reverting' },
		{
			name: 'Reject (Same as Decide)',
			value: 'reject',
			description:
				'Sent as the Decide operation (a reason is required; a refusal is an error). Kept for saved workflows: use Decide',
		},
	],
	decisions: [
		{ name: 'Approve', value: 'approve', description: 'Apply the planned changes' },
		{
			name: 'Reject',
			value: 'reject',
			description: 'Reject the planned changes: nothing is applied (a reason is required)',
		},
	],
	subtitle:
		'={{ {"blockAdd":"Add an expiring block","blockExtend":"Change when an expiring block ends","blockList":"List expiring blocks","blockRemove":"Remove an expiring block now","cancel":"Cancel a runbook","decide":"Approve or reject a runbook","describe":"Describe a runbook","query":"Query a runbook","signal":"Signal a runbook","start":"Start an attack-response runbook"}[$parameter["operation"]] || "" }}',
	planHelp:
		'Attack-response plan: site, customer, domain-ports and what to tighten while the attack lasts (detection, blacklist, IP authentication, switches, cooldown). Every field is described under "Runbook plans" in the package README; the worker validates the plan again.',
	/** Field labels of the Decide and block operations; a refusal from the workflow names its field by these. */
	fields: {
		decision: 'Decision',
		by: 'By',
		reason: 'Reason',
		site: 'Site ID',
		domainPort: 'Domain-Port ID',
		entry: 'IP Address, Range or CIDR',
		seconds: 'Duration',
		taskQueue: 'Task Queue',
	},
	help: {
		decideBy:
			"Identity of the person deciding (checked against the plan's approval.approvers and recorded in the audit trail, marked unverified); with an ID Token the token names the person",
		decideIdToken:
			"The deciding person's OpenID Connect ID token, e.g. {{ $json.id_token }} from the step that logged them in with the runbook's gate nonce (Query › State: gate.nonce). Required when the worker verifies approvers; sent sealed with the Temporal API credential's Payload Key. On Start: the starter's token (they cannot approve this runbook)",
		blockBy: 'Who asks for it (recorded with the block)',
		decideReason: 'Why (required to reject; recorded in the audit trail)',
		blockReason: 'Why the block is needed (recorded with the block)',
		site: 'The site whose blacklist is changed',
		domainPortAdd: 'The domain-port whose IP blacklist gets the entry',
		domainPortList: 'Leave empty for every domain-port of the site',
		entry: 'An IPv4 address, a start-end range or a CIDR (at most a /16 unless the blocks workflow allows wider)',
		secondsAdd:
			'How long the block lasts — seconds or with a unit: 30m, 2h, 1d (1 s to 90 days); then exactly this entry is removed',
		secondsExtend:
			'The new remaining time from now — seconds or with a unit: 30m, 2h, 1d (1 s to 90 days); longer extends, shorter shortens',
		blockOptions: 'Settings most users leave as they are',
		query: 'What to read from the runbook',
		binaryPropertyName: 'Name of the binary field the HTML report is put in (for a mail or chat step to attach)',
		blockTaskQueue:
			'Task queue of the worker that runs the blocks workflow (started on the first block of a domain-port)',
	},
	/** The workflow's field names → the labels above (refusals from Temporal name the field as the user sees it). */
	refusalFields: {
		approved: 'Decision',
		by: 'By',
		reason: 'Reason',
		entry: 'IP Address, Range or CIDR',
		seconds: 'Duration',
		approval: 'Runbook',
		via: 'Via',
		proof: 'ID Token',
		approver: 'Approver',
	} as Record<string, string>,
	refused: {
		decide: 'Decision refused',
		block: 'Block refused',
		nothingChanged: 'Nothing changed in the runbook.',
		nothingWritten: 'Nothing was written to the blacklist.',
	},
};

/** What a write with an empty answer says it did: "IP Whitelist › Allow: IP Address or Range 198.51.100.7 (Site ID 20001, Domain-Port ID 30001)". */
export function doneText(title: string, written: string[], where: string[]): string {
	const w = written.length ? written.join(', ') : 'done';
	return `${title}: ${w}${where.length ? ` (${where.join(', ')})` : ''}`;
}

/** What a token operation's output says instead of the token. */
export const tokenText = {
	note: 'Tokens never enter execution data: the Security Service credential gets and renews its own token for every call.',
};

export function hasOperationWords(opId: string): boolean {
	return OPERATIONS[opId] !== undefined;
}

/** The trigger's words. */
export const triggerText = {
	event: 'What starts the workflow; each poll reads the last Look Back hours and emits only what was not seen before',
	siteIds: (siteHint: string, max: number) =>
		`The sites to watch: one site ID, or several separated by commas (at most ${max}); each item carries its site_id. ${siteHint.replace(/^ID of the protected site: /, 'From ')}`,
	domainPortIds:
		"The domain-ports to protect, separated by commas; each item carries them (domain_port_ids, and the first as domain_port_id). With several sites, write site:domain-port pairs (20001:30001) for the ports of one site. From the provider's console: the API has no operation that lists them",
	siteRequired: 'Site IDs: is required (one site ID, or several separated by commas)',
	tooManySites: (n: number, max: number) => `Site IDs: at most ${max} sites per trigger (got ${n})`,
	badSite: (site: string, rule: string) => `Site IDs: ${site}: ${rule}`,
	readFailed: (title: string, why: string) => `Could not read the site's events (${title}): ${why}`,
	pastEvent: (event: string) =>
		`Test item: no ${event === 'attackStarted' ? 'ongoing attack' : event === 'attackStopped' ? 'stopped attack' : 'DDoS event'} in the look-back window, so this is the site's most recent DDoS event of the last 31 days. An active trigger emits only new ones.`,
	sample: (event: string) =>
		`Sample item: the site had no ${event === 'newFlowDownAlert' ? 'flow-down alert' : 'DDoS event'} to show (documentation addresses only). Map the next nodes with it; an active trigger emits real events only.`,
};

/** IP Blacklist › Block's sentence: "IP Blacklist › Block: blocked 198.51.100.0-198.51.100.255; refused 10.0.0.1 (Site ID 20001, Domain-Port ID 30001)". */
export function blockSummary(
	title: string,
	blocked: string[],
	refused: string[],
	at: { site_id: string; domain_port_id: string },
): string {
	const parts = [
		blocked.length ? `blocked ${blocked.join(', ')}` : 'blocked nothing',
		...(refused.length ? [`refused ${refused.join(', ')}`] : []),
	];
	return `${title}: ${parts.join('; ')} (Site ID ${at.site_id}, Domain-Port ID ${at.domain_port_id})`;
}

/** The Temporal API credential's address problems, in one line naming the field and what to enter. */
export const temporalAddressText = {
	invalidUrl:
		'HTTP API Address: enter the full address with http:// or https:// and the HTTP port, e.g. http://127.0.0.1:7243 (a dev server started with --http-port 7243)',
	notHttp:
		"HTTP API Address: this port does not answer HTTP — it is probably Temporal's gRPC port (7233). Enter the HTTP API port instead (dev server: --http-port, e.g. http://127.0.0.1:7243)",
};
