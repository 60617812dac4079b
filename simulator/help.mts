/**
 * `npm run simulator -- --help`: the options (one table, also what main.mts parses) and the control API a rehearsal
 * needs, and the site's own network in words: what the simulator prints at start and `GET /__sim/sites/{id}/network`
 * answers. Kept apart from main.mts so the text is tested without starting a server.
 */
import type { Site } from './state.mts';

export interface OptionHelp {
	type: 'string' | 'boolean';
	default?: string;
	short?: string;
	help: string;
}

/** Every option the CLI takes, with its default and what it does. */
export const OPTIONS: Record<string, OptionHelp> = {
	port: { type: 'string', default: '8443', help: 'port to listen on (0: a free one; the URL is printed)' },
	host: { type: 'string', default: '127.0.0.1', help: 'address to listen on (plain HTTP)' },
	'app-id': { type: 'string', default: 'demo-app', help: "the app's App ID (the credential's App ID)" },
	secret: { type: 'string', help: "the app's secret (default demo-secret; or SECSVC_SIM_SECRET, --secret-file)" },
	'secret-file': { type: 'string', help: 'read the secret from the first line of FILE (keeps it out of ps)' },
	'registered-host': {
		type: 'string',
		default: 'https://app.example.com',
		help: 'the redirect host registered for the OAuth install',
	},
	scenario: { type: 'string', help: 'load a scenario JSON file (attacks, flow-downs; simulator/scenarios/)' },
	seed: { type: 'string', default: '1', help: 'seed of the deterministic world' },
	clock: {
		type: 'string',
		default: 'real',
		help: 'real | manual (manual: time moves only by POST /__sim/clock/advance)',
	},
	fleet: { type: 'string', help: 'CUSTOMERSxSITES, e.g. 100x10: a fleet on top of the seeded world' },
	'log-limit': { type: 'string', help: 'most requests kept in the request log (default 10000)' },
	tenancy: { type: 'string', default: 'lenient', help: 'lenient | strict: who may reach what with which token' },
	'token-ttl': { type: 'string', help: 'access-token lifetime in seconds (default 7200, as the spec)' },
	'rate-limit': { type: 'string', help: 'a request rate limit as JSON, e.g. {"rps":60,"burst":10}' },
	help: { type: 'boolean', short: 'h', help: 'show this help and exit' },
};

/** The control API routes a rehearsal uses (every route: simulator/README.md "Control API"). */
const CONTROL = [
	['GET  /__sim/ids', 'first customer, site, domain-port, network and host ids'],
	['GET  /__sim/sites/{site_id}/network', "the site's own addresses: site_ip, networks and hosts (never block these)"],
	[
		'POST /__sim/attacks',
		'start an attack: {"site_id":"20001","duration":600,"curve":{"peakBps":5e9},"sources":[{"ip":"198.18.0.1"}]}',
	],
	['GET  /__sim/attacks', 'attacks with their status; DELETE /__sim/attacks/{id} stops one'],
	['POST /__sim/scenario', 'load a scenario (the --scenario file format)'],
	['POST /__sim/clock/advance', '{"seconds":60} with --clock manual'],
	['GET  /__sim/requests', 'the request log (?op=<operation id>&since=<seq>)'],
	['POST /__sim/reset', 'rebuild the world'],
	['GET  /__sim/state', 'the whole state'],
];

export function helpText(): string {
	const opts = Object.entries(OPTIONS).map(([name, o]) => {
		const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ' VALUE' : ''}`;
		return `  ${flag.padEnd(30)} ${o.help}${o.default !== undefined ? ` (default ${o.default})` : ''}`;
	});
	const control = CONTROL.map(([route, what]) => `  ${route.padEnd(38)} ${what}`);
	return [
		'A stateful stand-in for the Security Service Open API, to rehearse runbooks and n8n workflows.',
		'',
		'Usage: npm run simulator -- [options]',
		'',
		'Options:',
		...opts,
		'',
		"It prints its URL on stdout, then on stderr the first ids and the first site's own network. Point the",
		"Security Service credential's Base URL at the URL (App ID and Secret as above).",
		'',
		'Control API (JSON, no token, loopback clients only; every route: simulator/README.md "Control API"):',
		...control,
		'',
	].join('\n');
}

/** A site's own addresses as the control API answers them: what a block must never cover. */
export function siteNetwork(site: Site) {
	return {
		site_id: site.site_id,
		customer_id: site.customer_id,
		site_ip: site.site_ip,
		networks: site.networks.map((n) => ({ network_id: n.network_id, cidr: n.cidr, hosts: n.hosts.map((h) => h.ip) })),
	};
}

/** One line per site network: printed at start so the user can declare them as Protected Ranges. */
export function siteNetworkText(site: Site): string {
	const nets = site.networks.map(
		(n) => `${n.cidr} (network ${n.network_id}; hosts ${n.hosts.map((h) => h.ip).join(', ')})`,
	);
	return `site ${site.site_id}'s own addresses: site_ip ${site.site_ip}; networks ${nets.join('; ')}`;
}
