import type { IDataObject } from 'n8n-workflow';
import { idProblem } from '../../api/limits';
import type { Client } from '../../api/client';
import { aggregate, formatRange, parseAll, parseEntry, subtract, topThreatSources } from '../../api/ranges';
import { CLIENT_AUTH_STANDIN } from '../SecurityService/transport';

/**
 * What an "attack started" item adds for a responder: the event's strongest sources from its threat map (bps),
 * those sources merged into the fewest ranges as the runbooks do (api/ranges.ts) — never the site's own address —
 * and the domain-ports given on the trigger (the service has no operation that lists them, §4.3 "not shown").
 */
/**
 * The trigger's Domain-Port IDs that belong to one site: plain ids belong to every site, `site:dp` pairs only to
 * their site (an id never holds ':', api/limits.ts). Returned as the comma-separated text attackerFields reads.
 */
export function domainPortsFor(text: string, site: string): string {
	const out: string[] = [];
	for (const part of text
		.split(/[\s,;]+/)
		.map((s) => s.trim())
		.filter(Boolean)) {
		const i = part.indexOf(':');
		if (i < 0) out.push(part);
		else if (part.slice(0, i) === site) out.push(part.slice(i + 1));
	}
	return out.join(',');
}

export async function attackerFields(
	client: Client,
	e: IDataObject,
	o: { topN: number; domainPortIds: string },
): Promise<IDataObject> {
	const domainPortIds = o.domainPortIds
		.split(/[\s,;]+/)
		.map((s) => s.trim())
		.filter(Boolean);
	for (const dp of domainPortIds) {
		const p = idProblem(dp);
		if (p) throw new Error(`Domain-Port IDs: ${dp}: ${p}`);
	}
	const out: IDataObject = {
		domain_port_ids: domainPortIds,
		...(domainPortIds.length ? { domain_port_id: domainPortIds[0] } : {}),
	};
	const topN = Number.isInteger(o.topN) && o.topN > 0 ? Math.min(o.topN, 100) : 0;
	if (!topN || !e.alert_id) return { ...out, top_sources: [], attacking_sources: [], attacking_ranges: [] };
	const detail = await client.call(
		'dashboard.eventDetail',
		{ event_id: String(e.alert_id), module: 'threat_map' },
		{ accessToken: CLIENT_AUTH_STANDIN },
	);
	const top = topThreatSources(detail, 'bps', topN);
	const own = parseEntry(String(e.site_ip ?? ''));
	const ranges = subtract(aggregate(parseAll(top.map((t) => t.ip)).ranges), own ? [own] : []);
	return {
		...out,
		top_sources: top as unknown as IDataObject[],
		attacking_sources: top.map((t) => t.ip),
		attacking_ranges: ranges.map(formatRange),
	};
}
