import { parseIpv4Entry } from './catalog/ipv4';
import { formatYmdhms } from './catalog/rules';

/**
 * The site's own addresses, as the service tells them (§4.4; docs/spec-decisions.md "Own addresses"):
 *  - `site_ip` of the site's DDoS events of the last 30 days (the newest 100);
 *  - the `cidr` of its active mitigations, and their `name` when it is an address ("profile or host name");
 *  - the destination-address rows of the characterization of its ongoing events (the newest MAX_DETAILS): a row
 *    whose `element` or `item` names a destination IP (the spec does not list the element names).
 * The blast-radius guard (api/blastRadius.ts) refuses any block that overlaps one of them. The spec shows no address
 * of a site's networks and hosts (§4.5 names them by id only) and no list of sites: those are the operator's to
 * declare (Protected Ranges). The network summary's `ip` list, threat maps and traffic patterns are attack sources.
 *
 * Cost: two GETs per site, plus one per ongoing event (at most MAX_DETAILS), cached per client for `ttlMs` (default
 * 5 min; failures are not cached), shared by concurrent calls (single flight). Only blocking writes ask. A failed
 * lookup is reported to the caller, which refuses the block (nothing is sent): not knowing the own addresses is no
 * reason to risk blocking them.
 */

export type OwnAddress = { range: string; source: string };
type Call = (opId: string, params: Record<string, unknown>) => Promise<unknown>;

export const OWN_ADDRESS_TTL_MS = 5 * 60_000;
const WINDOW_SECONDS = 30 * 86_400;
export const MAX_DETAILS = 3;
const DESTINATION = /\b(dst|dest|destination)[ _-]?(ip|address|addr)\b/i;

/** `call` reads through the caller's client with the caller's call options (n8n hands the token in per call). */
export function createOwnAddressLookup(
	now: () => number,
	ttlMs = OWN_ADDRESS_TTL_MS,
): (site: string, call: Call) => Promise<OwnAddress[]> {
	const cache = new Map<string, { at: number; value: Promise<OwnAddress[]> }>();
	return (site: string, call: Call) => {
		const hit = cache.get(site);
		if (hit && now() - hit.at < ttlMs) return hit.value;
		const value = read(call, site, now());
		cache.set(site, { at: now(), value });
		value.catch(() => cache.delete(site));
		return value;
	};
}

type Event = { site_ip?: unknown; alert_id?: unknown; status?: unknown };
type Mitigation = { cidr?: unknown; name?: unknown };
type Row = { element?: unknown; item?: unknown; value?: unknown };
const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');

async function read(call: Call, site: string, nowMs: number): Promise<OwnAddress[]> {
	const end = Math.floor(nowMs / 1000);
	const [events, mitigations] = await Promise.all([
		call('dashboard.ddosEvents', {
			site_id: site,
			status: 'all',
			num: '100',
			start_time: formatYmdhms(end - WINDOW_SECONDS),
			end_time: formatYmdhms(end),
		}),
		call('dashboard.activeMitigation', { site_id: site }),
	]);
	const list = (events as { events?: Event[] })?.events ?? [];
	const ongoing = list.filter((e) => e?.status === 1 && text(e.alert_id)).slice(0, MAX_DETAILS);
	const details = await Promise.all(
		ongoing.map((e) => call('dashboard.eventDetail', { event_id: text(e.alert_id), module: 'characterization' })),
	);
	const out = new Map<string, OwnAddress>();
	const add = (range: string, source: string) => {
		if (range && parseIpv4Entry(range) && !out.has(range)) out.set(range, { range, source });
	};
	for (const e of list) add(text(e?.site_ip), `site_ip of DDoS event ${String(e?.alert_id ?? '?')}`);
	for (const m of Array.isArray(mitigations) ? (mitigations as Mitigation[]) : []) {
		add(text(m?.cidr), `cidr of active mitigation ${String(m?.name ?? '?')}`);
		add(text(m?.name), 'name of an active mitigation');
	}
	details.forEach((d, i) => {
		const rows = (d as { characterization?: unknown })?.characterization;
		for (const r of Array.isArray(rows) ? (rows as Row[]) : [])
			if (DESTINATION.test(text(r?.element)) || DESTINATION.test(text(r?.item)))
				add(text(r?.value), `destination of DDoS event ${text(ongoing[i].alert_id)} (characterization)`);
	});
	return [...out.values()];
}
