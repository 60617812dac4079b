/**
 * A fleet of customers × sites on top of the seeded world (a service provider's SPE portal at scale).
 * Ids come from their own ranges, independent of the seed and of the seeded world: customers from 110001, sites
 * from 210001, domain-ports from 310001, networks from 410001, hosts from 510001, numbered customer by customer
 * (site of customer c, index s = 210001 + c × sitesPerCustomer + s). Fleet sites have no past attacks, so
 * `is_under_attack` says 0 until an attack is started on them. The seeded PRNG is not used: adding a fleet leaves
 * the rest of the world exactly as without it.
 */
import { defaultPolicy, type Customer, type DomainPort, type Site, type World } from './state.mts';
import { intToIp, ipToInt } from './util.mts';

export interface FleetSpec {
	customers: number;
	sitesPerCustomer: number;
	/** Domain-ports per site (default 1). */
	domainPortsPerSite?: number;
}

export const FLEET_FIRST = { customer: 110001, site: 210001, domainPort: 310001, network: 410001, host: 510001 };
const MAX = 90_000;

/** Checks a fleet spec; throws naming the field and the rule. */
export function checkFleet(f: FleetSpec): Required<FleetSpec> {
	const int = (v: unknown, name: string, min: number, max: number) => {
		const n = Number(v);
		if (!Number.isInteger(n) || n < min || n > max)
			throw new Error(`fleet.${name}: must be an integer from ${min} to ${max}`);
		return n;
	};
	const customers = int(f.customers, 'customers', 1, MAX);
	const sitesPerCustomer = int(f.sitesPerCustomer, 'sitesPerCustomer', 1, 1000);
	const domainPortsPerSite = int(f.domainPortsPerSite ?? 1, 'domainPortsPerSite', 1, 8);
	if (customers * sitesPerCustomer > MAX) throw new Error(`fleet: customers × sitesPerCustomer must be at most ${MAX}`);
	if (customers * sitesPerCustomer * domainPortsPerSite > MAX)
		throw new Error(`fleet: sites × domainPortsPerSite must be at most ${MAX}`);
	return { customers, sitesPerCustomer, domainPortsPerSite };
}

/** Adds the fleet's customers, sites, domain-ports, networks and hosts to the world. */
export function addFleet(w: World, spec: FleetSpec): void {
	const f = checkFleet(spec);
	let siteN = FLEET_FIRST.site;
	let dpN = FLEET_FIRST.domainPort;
	let netN = FLEET_FIRST.network;
	let hostN = FLEET_FIRST.host;
	const netBase = ipToInt('10.0.0.0') as number;
	for (let c = 0; c < f.customers; c++) {
		const id = String(FLEET_FIRST.customer + c);
		const slug = `fleet${c + 1}`;
		const cust: Customer = {
			customer_id: id,
			customer_name: `Fleet Customer ${c + 1}`,
			company: `Fleet Customer ${c + 1} Ltd.`,
			email: `ops@${slug}.example`,
			phone: '',
			address: '',
			website: `https://www.${slug}.example`,
			protect_services: { application_protection: 1, origin_protection: 0, dns_protection: 0, cdn_federation: 0 },
			site_ids: [],
		};
		w.customers.set(id, cust);
		for (let s = 0; s < f.sitesPerCustomer; s++) {
			const n = siteN - FLEET_FIRST.site;
			const site: Site = {
				site_id: String(siteN++),
				customer_id: id,
				site_name: `${slug}-site-${s + 1}`,
				site_ip: intToIp(netBase + n * 16 + 1),
				baseline_bps: (50 + (n % 8) * 50) * 1_000_000,
				domain_port_ids: [],
				networks: [],
			};
			cust.site_ids.push(site.site_id);
			w.sites.set(site.site_id, site);
			for (let d = 0; d < f.domainPortsPerSite; d++) {
				const domain = `www${d || ''}.s${s + 1}.${slug}.example`;
				const dp: DomainPort = {
					domain_port_id: String(dpN++),
					site_id: site.site_id,
					domain,
					port: d % 2 ? 80 : 443,
					policy: defaultPolicy(domain),
				};
				site.domain_port_ids.push(dp.domain_port_id);
				w.domainPorts.set(dp.domain_port_id, dp);
			}
			site.networks.push({
				network_id: String(netN++),
				cidr: `${intToIp(netBase + n * 16)}/28`,
				hosts: [{ host_id: String(hostN++), ip: intToIp(netBase + n * 16 + 2) }],
			});
		}
	}
}

/** The fleet's sites as a compact list (GET /__sim/fleet): what a fleet file needs. */
export function fleetView(w: World) {
	const sites: { customer_id: string; site_id: string; domain_port_ids: string[] }[] = [];
	for (const s of w.sites.values())
		if (Number(s.site_id) >= FLEET_FIRST.site)
			sites.push({ customer_id: s.customer_id, site_id: s.site_id, domain_port_ids: s.domain_port_ids });
	return { sites };
}
