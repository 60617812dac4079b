import { parseIpv4Entry } from './catalog/ipv4';
import { formatYmdhms } from './catalog/rules';

/**
 * The site's own addresses, as the service tells them: `site_ip` of the site's DDoS events of the last 30 days
 * (the newest 100) and the `cidr` of its active mitigations. The blast-radius guard (api/blastRadius.ts) refuses any
 * block that overlaps one of them.
 *
 * Cost: two GETs per site, cached per client for `ttlMs` (default 5 min; failures are not cached), shared by
 * concurrent calls (single flight). Only blocking writes ask. A failed lookup is reported to the caller, which
 * refuses the block (nothing is sent): not knowing the own addresses is no reason to risk blocking them.
 */

export type OwnAddress = { range: string; source: string };
type Call = (opId: string, params: Record<string, unknown>) => Promise<unknown>;

export const OWN_ADDRESS_TTL_MS = 5 * 60_000;
const WINDOW_SECONDS = 30 * 86_400;

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
	const out = new Map<string, OwnAddress>();
	for (const e of (events as { events?: { site_ip?: unknown; alert_id?: unknown }[] })?.events ?? []) {
		const ip = typeof e?.site_ip === 'string' ? e.site_ip.trim() : '';
		if (ip && parseIpv4Entry(ip) && !out.has(ip))
			out.set(ip, { range: ip, source: `site_ip of DDoS event ${String(e.alert_id ?? '?')}` });
	}
	for (const m of Array.isArray(mitigations) ? (mitigations as { cidr?: unknown; name?: unknown }[]) : []) {
		const cidr = typeof m?.cidr === 'string' ? m.cidr.trim() : '';
		if (cidr && parseIpv4Entry(cidr) && !out.has(cidr))
			out.set(cidr, { range: cidr, source: `cidr of active mitigation ${String(m.name ?? '?')}` });
	}
	return [...out.values()];
}
