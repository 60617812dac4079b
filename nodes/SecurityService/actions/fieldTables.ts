import type { INodePropertyOptions } from 'n8n-workflow';
import { DETECTION_GROUPS } from '../../../api/catalog/detectionGroups';
import { optionLabel as catalogOptionLabel } from '../../../api/catalog/labels';
import type { CatalogEntry, Field } from '../../../api/catalog/types';

/**
 * What fields.ts and fieldValues.ts read about a catalog field beyond the catalog itself: names in words, fields the
 * node hides or derives, list pickers, safe defaults, date-time fields, and the n8n parameter name of a field.
 */

const ACRONYMS: Record<string, string> = {
	id: 'ID',
	ip: 'IP',
	ips: 'IPs',
	url: 'URL',
	uri: 'URI',
	http: 'HTTP',
	https: 'HTTPS',
	ddos: 'DDoS',
	tps: 'TPS',
	rps: 'RPS',
	pps: 'PPS',
	bps: 'BPS',
	ua: 'UA',
	p3p: 'P3P',
	xff: 'XFF',
	rp: 'RP',
	spe: 'SPE',
	ipv4: 'IPv4',
	http09: 'HTTP/0.9',
	http10: 'HTTP/1.0',
	http11: 'HTTP/1.1',
};

/** `site_id` → `Site ID`, `ddosEvents` → `DDoS Events`. */
export function humanize(name: string): string {
	return name
		.replace(/([a-z0-9])([A-Z])/g, '$1 $2')
		.split(/[_\s]+/)
		.filter(Boolean)
		.map((w) => ACRONYMS[w.toLowerCase()] ?? w.charAt(0).toUpperCase() + w.slice(1))
		.join(' ');
}

/** Fields the node fills itself or never shows. */
export function isHiddenField(op: CatalogEntry, f: Field): boolean {
	if (f.constant !== undefined) return true;
	// Token operations take app_id and secret from the credential, never from node parameters.
	if (op.auth === 'none' && (f.name === 'app_id' || f.name === 'secret')) return true;
	// Paged lists are driven by Return All / Limit.
	if (op.list?.paging === 'page' && f.name === 'page') return true;
	// The page size too: the node pages by itself (Limit is the one number a user gives).
	if (op.list?.paging === 'startNum' && (f.name === 'start' || f.name === 'num')) return true;
	// Derived from another field (detection item → its group).
	if (DERIVED[`${op.id}:${f.name}`]) return true;
	return false;
}

/** Fields the node derives from another one instead of asking twice. */
export const DERIVED: Readonly<Record<string, (params: Record<string, unknown>) => unknown>> = {
	'detection.setPolicy:type': (p) =>
		Object.entries(DETECTION_GROUPS).find(([, items]) => items.includes(String(p.name)))?.[0],
};

export function isPaged(op: CatalogEntry): boolean {
	return op.list?.paging !== undefined;
}

/** Labels for numeric options, read from the description ("0 off, 1 on, 2 auto"). */
function optionLabel(f: Field, v: string | number): string {
	const m = new RegExp(`(?:^|[\\s,;('"])${String(v)}'?\\s+([A-Za-z][\\w -]*?)(?=\\s*(?:[,;)]|'|$))`).exec(
		f.description,
	);
	const label = m?.[1]?.trim();
	if (label && typeof v === 'number') return `${label.charAt(0).toUpperCase()}${label.slice(1)} (${v})`;
	if (label && /^\d+$/.test(String(v))) return `${label.charAt(0).toUpperCase()}${label.slice(1)} (${v})`;
	return humanizeValue(v);
}

function humanizeValue(v: string | number): string {
	if (typeof v === 'number') return String(v);
	return /^[A-Z0-9_]+$/.test(v) ? v : humanize(v);
}

export function options(f: Field): INodePropertyOptions[] {
	const seen = new Set<string>();
	return (f.options ?? []).map((v) => {
		let name = catalogOptionLabel(f.name, v) ?? optionLabel(f, v);
		while (seen.has(name)) name = `${name} (${String(v)})`;
		seen.add(name);
		return { name, value: v };
	});
}

/** zod v4 introspection: the definition type of a schema (used to tell single strings from lists, read object shapes). */
export function schemaDef(f: Field): { type?: string; shape?: Record<string, unknown> } {
	const z = (f.schema as unknown as { _zod?: { def?: { type?: string; shape?: Record<string, unknown> } } })._zod;
	return z?.def ?? {};
}

/** A stringList field whose schema takes one string (not an array): asked of the schema itself. */
export function isSingleStringList(f: Field): boolean {
	if (f.kind !== 'stringList') return false;
	const r = f.schema.safeParse([]);
	return !r.success && r.error.issues[0]?.code === 'invalid_type';
}

/** Fields picked from a list the API gives (n8n resource locators); manual IDs and expressions keep working. */
export interface Locator {
	method: string;
	placeholder: string;
}
export const LOCATORS: Readonly<Record<string, Locator>> = {
	'*:customer_id': { method: 'searchCustomers', placeholder: 'Customer ID' },
	'*:p_flag_id': { method: 'searchHttpFilterPolicies', placeholder: 'Policy ID, e.g. 12' },
	'applicationProtection.switch.set:name': { method: 'searchSwitchNames', placeholder: 'Switch name, e.g. p_wbl' },
	'detection.setPolicy:name': { method: 'searchDetectionItems', placeholder: 'Item name, e.g. tcp_syn' },
	'applicationProtection.statusCodes.update:error_code': {
		method: 'searchStatusCodes',
		placeholder: 'Status code, e.g. 404',
	},
	'applicationProtection.statusCodes.delete:error_code': {
		method: 'searchStatusCodes',
		placeholder: 'Status code, e.g. 404',
	},
	'applicationProtection.authBypass.delete:url_id': {
		method: 'searchBypassRecords',
		placeholder: 'Bypass record ID, e.g. 3',
	},
};

/** List entries picked from what the service holds (loadOptions); an expression still works. */
export const ENTRY_CHOICES: Readonly<Record<string, string>> = {
	'applicationProtection.ipBlacklist.remove:ip_black_list': 'blacklistEntries',
	'applicationProtection.ipWhitelist.remove:ip_white_list': 'whitelistEntries',
};

/** On/off writes shown as an explicit On / Off choice. */
export const SWITCHES = new Set(['enable', 'is_enable', 'is_enabled', 'p3p_enabled', 'value']);

/** Defaults that read or change the least when a user does not choose (never the first option by accident). */
const SAFE_DEFAULTS: Readonly<Record<string, string | number>> = {
	http_type: 'http11',
	mode: 1,
	enable: 1,
	status: 'all',
	rp_code: 302,
	scheme: 'https',
	action: 'ACCEPT',
};

export function safeDefault(f: Field): string | number | undefined {
	const d = SAFE_DEFAULTS[f.name];
	return d !== undefined && (f.options ?? []).some((o) => String(o) === String(d))
		? (f.options ?? []).find((o) => String(o) === String(d))
		: undefined;
}

/** Time fields shown as n8n date-time pickers, converted to the wire form (all in UTC). */
export const TIME_FIELDS: Readonly<Record<string, 'ymdhms' | 'unix'>> = {
	'dashboard.ddosEvents:start_time': 'ymdhms',
	'dashboard.ddosEvents:end_time': 'ymdhms',
	'dashboard.flowDownEvents:start_time': 'unix',
	'dashboard.flowDownEvents:end_time': 'unix',
};

/**
 * n8n keeps a parameter's value when the operation changes and the new operation has a parameter of the same name:
 * a list picked on Unblock (a fixedCollection) would show as `[object Object]` in Block's text field. A field whose
 * form differs between operations of one resource gets its own name here (test/unit/node-description checks that no
 * two operations of a resource share a name with different forms).
 */
const PARAM_NAMES: Readonly<Record<string, string>> = {
	'applicationProtection.ipBlacklist.remove:ip_black_list': 'ip_black_list_entries',
	'applicationProtection.ipWhitelist.remove:ip_white_list': 'ip_white_list_entries',
	// Create types a new status code; Update and Delete pick an existing one from the service's list.
	'applicationProtection.statusCodes.update:error_code': 'existing_error_code',
	'applicationProtection.statusCodes.delete:error_code': 'existing_error_code',
};

/** The n8n parameter name of a catalog field in an operation. */
export function paramName(opId: string, field: string): string {
	return PARAM_NAMES[`${opId}:${field}`] ?? field;
}
