// The simulator's seeded world: customers, their sites, domain-ports, networks and hosts, and a history of stopped
// attacks and flow-down alerts (simulator/README.md "The seeded world").
import { makeAttack } from './makeAttack.mts';
import {
	COUNTRIES,
	CUSTOMER_COUNT,
	defaultPolicy,
	type Customer,
	type DomainPort,
	type Network,
	type Site,
	type World,
} from './state.mts';
import { intToIp, ipToInt, type Rng } from './util.mts';

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
/**
 * Builds the seeded world. Ids are sequential and independent of the seed (first customer 10001, its
 * first site 20001, first domain-port 30001, first network 40001, first host 50001) so tests and demos
 * can name them; names, IPs, counts of sites per customer (after the first) and history depend on the seed.
 * The order of the seeded draws is the world: a change to it changes every seeded name and history.
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
	const ids = { site: 20001, dp: 30001, net: 40001, host: 50001 };
	for (let c = 0; c < CUSTOMER_COUNT; c++) {
		const { cust, slug } = seedCustomer(rng, c);
		w.customers.set(cust.customer_id, cust);
		const nSites = c === 0 ? 2 : rng.int(1, 3);
		for (let s = 0; s < nSites; s++) {
			const site = seedSite(w, rng, cust, slug, s, ids);
			seedHistory(w, rng, site, nowSec, historyDays);
		}
	}
	w.attacks.sort((a, b) => a.start - b.start);
	return w;
}

function seedCustomer(rng: Rng, c: number): { cust: Customer; slug: string } {
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
	return { cust, slug };
}

/** A site with its two domain-ports (443 www, 80 api) and two /28 networks of two hosts each. */
function seedSite(
	w: World,
	rng: Rng,
	cust: Customer,
	slug: string,
	s: number,
	ids: { site: number; dp: number; net: number; host: number },
): Site {
	const site: Site = {
		site_id: String(ids.site++),
		customer_id: cust.customer_id,
		site_name: `${slug}-site-${s + 1}`,
		site_ip: intToIp((ipToInt('203.0.113.0') as number) + ((ids.site * 7) % 250) + 1),
		baseline_bps: rng.int(50, 400) * 1_000_000,
		domain_port_ids: [],
		networks: [],
	};
	cust.site_ids.push(site.site_id);
	w.sites.set(site.site_id, site);
	for (const [i, port] of [443, 80].entries()) {
		const domain = `${i === 0 ? 'www' : 'api'}.${slug}${s + 1}.example`;
		const dp: DomainPort = {
			domain_port_id: String(ids.dp++),
			site_id: site.site_id,
			domain,
			port,
			policy: defaultPolicy(domain),
		};
		site.domain_port_ids.push(dp.domain_port_id);
		w.domainPorts.set(dp.domain_port_id, dp);
	}
	for (let n = 0; n < 2; n++) {
		const base = (ipToInt('198.51.100.0') as number) + (ids.net % 16) * 16;
		const net: Network = { network_id: String(ids.net++), cidr: `${intToIp(base)}/28`, hosts: [] };
		for (let h = 0; h < 2; h++) net.hosts.push({ host_id: String(ids.host++), ip: intToIp(base + 1 + h) });
		site.networks.push(net);
	}
	return site;
}

/** History: a few stopped attacks and flow-down alerts over the last `historyDays` days. */
function seedHistory(w: World, rng: Rng, site: Site, nowSec: number, historyDays: number): void {
	const nHist = rng.int(2, 5);
	for (let k = 0; k < nHist; k++) {
		const start = nowSec - rng.int(2, historyDays * 24) * 3600;
		const type = rng.pick(['UDP Total', 'TCP SYN', 'DNS Amplification', 'NTP Amplification', 'HTTP Flood'] as const);
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
