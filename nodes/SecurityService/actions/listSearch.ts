import type {
	IDataObject,
	ILoadOptionsFunctions,
	INodeListSearchItems,
	INodeListSearchResult,
	INodePropertyOptions,
} from 'n8n-workflow';
import { optionLabel } from '../../../api/catalog/labels';
import { DETECTION_GROUPS } from '../../../api/catalog/detectionGroups';
import { listEntryText, type Ipv4ListEntry } from '../../../api/catalog/ipv4';
import { CLIENT_AUTH_STANDIN, getClient } from '../transport';

/**
 * Lists for the resource locators (fields.ts LOCATORS): read from the API with the node's credential, filtered by
 * the search text. Each one falls back to manual entry ("By ID") when the fields it needs (site, domain) are empty.
 */

const opts = { accessToken: CLIENT_AUTH_STANDIN };

function param(ctx: ILoadOptionsFunctions, name: string): string {
	const v = ctx.getCurrentNodeParameter(name) as unknown;
	if (v !== null && typeof v === 'object' && 'value' in (v as IDataObject))
		return String((v as IDataObject).value ?? '');
	return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
}

/** The site and domain-port a per-domain list needs, or undefined (then the user enters the value by hand). */
function domainPort(ctx: ILoadOptionsFunctions): { site_id: string; domain_port_id: string } | undefined {
	const site_id = param(ctx, 'site_id');
	const domain_port_id = param(ctx, 'domain_port_id');
	return site_id && domain_port_id ? { site_id, domain_port_id } : undefined;
}

function matches(filter: string | undefined, ...texts: string[]): boolean {
	if (!filter) return true;
	const f = filter.toLowerCase();
	return texts.some((t) => t.toLowerCase().includes(f));
}

async function searchCustomers(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const client = await getClient(this, { retries: 0 });
	const page = paginationToken ? Number(paginationToken) : 1;
	const r = await client.call('customer.list', page > 1 ? { page } : {}, opts);
	const results: INodeListSearchItems[] = r.customer
		.filter((c) => matches(filter, c.customer_name, c.customer_id))
		.map((c) => ({ name: `${c.customer_name} (${c.customer_id})`, value: c.customer_id }));
	return { results, paginationToken: r.page < r.pages ? String(r.page + 1) : undefined };
}

async function searchHttpFilterPolicies(this: ILoadOptionsFunctions, filter?: string): Promise<INodeListSearchResult> {
	const at = domainPort(this);
	if (!at) return { results: [] };
	const client = await getClient(this, { retries: 0 });
	const list = await client.call('applicationProtection.httpFilter.list', at, opts);
	return {
		results: list
			.filter((p) => p.p_flag_id !== undefined && matches(filter, p.p_name, String(p.p_flag_id), p.url ?? ''))
			.map((p) => ({ name: `${p.p_name} (${String(p.p_flag_id)})`, value: String(p.p_flag_id), description: p.url })),
	};
}

/** Every node of the switch tree with a name, depth first. */
function switchNames(
	tree: unknown,
	out: Array<{ name: string; enable: number }> = [],
): Array<{ name: string; enable: number }> {
	if (tree === null || typeof tree !== 'object') return out;
	if (Array.isArray(tree)) {
		for (const t of tree) switchNames(t, out);
		return out;
	}
	const node = tree as IDataObject;
	if (typeof node.name === 'string' && typeof node.enable === 'number')
		out.push({ name: node.name, enable: node.enable });
	for (const v of Object.values(node)) if (v !== null && typeof v === 'object') switchNames(v, out);
	return out;
}

async function searchSwitchNames(this: ILoadOptionsFunctions, filter?: string): Promise<INodeListSearchResult> {
	const at = domainPort(this);
	if (!at) return { results: [] };
	const client = await getClient(this, { retries: 0 });
	const tree = await client.call('applicationProtection.switch.list', at, opts);
	const seen = new Set<string>();
	const results: INodeListSearchItems[] = [];
	for (const s of switchNames(tree)) {
		if (seen.has(s.name)) continue;
		seen.add(s.name);
		const label = optionLabel('name', s.name) ?? s.name;
		if (!matches(filter, label, s.name)) continue;
		results.push({ name: `${label} (now ${s.enable === 1 ? 'on' : 'off'})`, value: s.name });
	}
	return { results };
}

async function searchDetectionItems(this: ILoadOptionsFunctions, filter?: string): Promise<INodeListSearchResult> {
	const customer_id = param(this, 'customer_id');
	const site_id = param(this, 'site_id');
	const network_id = param(this, 'network_id') || '0';
	const host_id = param(this, 'host_id') || '0';
	let present: Set<string> | undefined;
	if (customer_id && site_id) {
		const client = await getClient(this, { retries: 0 });
		const policy = (await client.call(
			'detection.getPolicy',
			{ customer_id, site_id, network_id, host_id },
			opts,
		)) as IDataObject;
		present = new Set(
			Object.entries(policy)
				.filter(([, v]) => v !== null && typeof v === 'object')
				.flatMap(([, v]) => Object.keys(v as IDataObject)),
		);
	}
	const results: INodeListSearchItems[] = [];
	for (const [group, items] of Object.entries(DETECTION_GROUPS)) {
		for (const item of items) {
			if (present && !present.has(item)) continue;
			const label = optionLabel('name', item) ?? item;
			if (!matches(filter, label, item, group)) continue;
			results.push({ name: `${label} (${optionLabel('type', group) ?? group})`, value: item });
		}
	}
	return { results };
}

async function searchStatusCodes(this: ILoadOptionsFunctions, filter?: string): Promise<INodeListSearchResult> {
	const at = domainPort(this);
	if (!at) return { results: [] };
	const client = await getClient(this, { retries: 0 });
	const r = await client.call('applicationProtection.statusCodes.list', at, opts);
	return {
		results: r.error_page
			.filter((e) => matches(filter, String(e.error_code), String(e.error_code_rewrite)))
			.map((e) => ({ name: `${e.error_code} answered as ${e.error_code_rewrite}`, value: String(e.error_code) })),
	};
}

async function searchBypassRecords(this: ILoadOptionsFunctions, filter?: string): Promise<INodeListSearchResult> {
	const at = domainPort(this);
	if (!at) return { results: [] };
	const client = await getClient(this, { retries: 0 });
	const list = await client.call('applicationProtection.authBypass.list', at, opts);
	return {
		results: list
			.filter((b) => matches(filter, b.host, b.uri, String(b.url_id)))
			.map((b) => ({ name: `${b.scheme}://${b.host}${b.uri} (${b.url_id})`, value: String(b.url_id) })),
	};
}

async function ipListEntries(ctx: ILoadOptionsFunctions, which: 'black' | 'white'): Promise<INodePropertyOptions[]> {
	const at = domainPort(ctx);
	if (!at) return [];
	const client = await getClient(ctx, { retries: 0 });
	// The result schema is validated by the client; its transform leaves the generated type `unknown`.
	type Lists = { p_info: { ipv4: Record<string, Ipv4ListEntry[]> } };
	const r = (await client.call(
		which === 'black' ? 'applicationProtection.ipBlacklist.get' : 'applicationProtection.ipWhitelist.get',
		at,
		opts,
	)) as Lists;
	const entries = r.p_info.ipv4[`${which}_soc`] ?? [];
	return entries
		.map(listEntryText)
		.filter((t) => t !== '')
		.map((t) => ({ name: t, value: t }));
}

export const listSearch = {
	searchCustomers,
	searchHttpFilterPolicies,
	searchSwitchNames,
	searchDetectionItems,
	searchStatusCodes,
	searchBypassRecords,
};

/** Option lists (loadOptions) for fields that name several entries at once. */
export const loadOptions = {
	async blacklistEntries(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
		return await ipListEntries(this, 'black');
	},
	async whitelistEntries(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
		return await ipListEntries(this, 'white');
	},
};
