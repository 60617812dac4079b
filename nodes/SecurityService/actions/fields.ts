import type { IDataObject, INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import { DETECTION_GROUPS } from '../../../api/catalog/detectionGroups';
import { NODE_WORDS, OBJECT_PARTS, fieldWords, optionLabel as catalogOptionLabel } from '../../../api/catalog/labels';
import { formatYmdhms } from '../../../api/catalog/rules';
import type { CatalogEntry, Field } from '../../../api/catalog/types';

/**
 * The one generic module that turns catalog operations into n8n parameters, and n8n parameter values back into
 * catalog parameters. Nothing here knows a particular endpoint: everything comes from the catalog's fields
 * (kind, required, options, default, showWhen, schema shape).
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
const DERIVED: Readonly<Record<string, (params: Record<string, unknown>) => unknown>> = {
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

function options(f: Field): INodePropertyOptions[] {
	const seen = new Set<string>();
	return (f.options ?? []).map((v) => {
		let name = catalogOptionLabel(f.name, v) ?? optionLabel(f, v);
		while (seen.has(name)) name = `${name} (${String(v)})`;
		seen.add(name);
		return { name, value: v };
	});
}

/** zod v4 introspection: the definition type of a schema (used to tell single strings from lists, read object shapes). */
function schemaDef(f: Field): { type?: string; shape?: Record<string, unknown> } {
	const z = (f.schema as unknown as { _zod?: { def?: { type?: string; shape?: Record<string, unknown> } } })._zod;
	return z?.def ?? {};
}

/** A stringList field whose schema takes one string (not an array): asked of the schema itself. */
function isSingleStringList(f: Field): boolean {
	if (f.kind !== 'stringList') return false;
	const r = f.schema.safeParse([]);
	return !r.success && r.error.issues[0]?.code === 'invalid_type';
}

/** One n8n parameter for a catalog field (displayOptions added by the caller). */
export function fieldProperty(f: Field, inCollection = false, opId = ''): INodeProperties {
	const words = fieldWords(opId, f.name);
	const base = {
		displayName: words.label,
		name: f.name,
		// Every field says what it takes (an AI agent filling the node as a tool reads this): the hint, else the
		// catalog's own description of the field.
		description: words.hint ?? f.description,
		...(words.placeholder ? { placeholder: words.placeholder } : {}),
	};
	const required = !inCollection && f.required;
	const locator = LOCATORS[`${opId}:${f.name}`] ?? LOCATORS[`*:${f.name}`];
	if (locator && !inCollection) return resourceLocator(base, locator, required);
	const time = TIME_FIELDS[`${opId}:${f.name}`];
	if (time)
		return {
			...base,
			type: 'dateTime',
			default: '',
			description: `${base.description ?? ''} Date and time in UTC.`.trim(),
		};
	if (f.kind === 'boolean01' && !inCollection && SWITCHES.has(f.name)) {
		// A write that turns something on or off: the choice is spelled out, and Off is never preselected.
		return {
			...base,
			type: 'options',
			options: [
				{ name: 'On', value: 1 },
				{ name: 'Off', value: 0 },
			],
			default: 1,
			required,
		};
	}
	switch (f.kind) {
		case 'secret':
			return { ...base, type: 'string', typeOptions: { password: true }, default: '', required };
		case 'integer':
			// No number is preselected where the catalog has no default: an empty field is "not given" (refused before
			// sending when required), never a silent 0 (n8n's own nodes do the same with `default: null`).
			return { ...base, type: 'number', default: typeof f.default === 'number' ? f.default : null, required };
		case 'boolean01':
			return { ...base, type: 'boolean', default: f.default === 1 || f.default === '1' };
		case 'options':
			return {
				...base,
				type: 'options',
				options: options(f),
				default: (f.default as string | number | undefined) ?? safeDefault(f) ?? f.options?.[0] ?? '',
				required,
			};
		case 'stringList': {
			if (f.options?.length) {
				return { ...base, type: 'multiOptions', options: options(f), default: [], required };
			}
			if (isSingleStringList(f)) return { ...base, type: 'string', default: '', required };
			return {
				...base,
				type: 'fixedCollection',
				typeOptions: { multipleValues: true },
				placeholder: `Add ${words.label}`,
				default: {},
				required,
				options: [
					{
						name: 'values',
						displayName: 'Entry',
						values: [
							entryValue(
								ENTRY_CHOICES[`${opId}:${f.name}`],
								words.placeholder,
								fieldWords(opId, `${f.name}#entry`),
								words.hint,
							),
						],
					},
				],
			};
		}
		case 'object': {
			const shape = schemaDef(f).shape ?? {};
			return {
				...base,
				type: 'collection',
				placeholder: 'Add Field',
				default: {},
				options: Object.keys(shape).map((k) => ({
					displayName: OBJECT_PARTS[k]?.label ?? humanize(k),
					name: k,
					type: 'number',
					default: null,
					description: OBJECT_PARTS[k]?.hint ?? `${humanize(k)} (a number)`,
				})),
			};
		}
		case 'string':
		default:
			if (f.options?.length) {
				return {
					...base,
					type: 'options',
					options: options(f),
					default: (f.default as string | undefined) ?? (safeDefault(f) as string | undefined) ?? f.options[0],
					required,
				};
			}
			return { ...base, type: 'string', default: (f.default as string | undefined) ?? '', required };
	}
}

/** Parameters of one operation, shown only for its resource/operation pair. */
export function operationProperties(op: CatalogEntry, resource: string): INodeProperties[] {
	const show = { resource: [resource], operation: [op.action] };
	const out: INodeProperties[] = [];
	const optional: INodeProperties[] = [];
	for (const f of op.fields) {
		if (isHiddenField(op, f)) continue;
		if (f.showWhen) {
			// Conditional field: shown only when the field it depends on has one of the listed values.
			const p = fieldProperty(f, false, op.id);
			out.push({
				...p,
				required: f.kind !== 'object' && f.kind !== 'boolean01',
				displayOptions: { show: { ...show, ...(f.showWhen as Record<string, Array<string | number>>) } },
			});
		} else if (f.required) {
			out.push({ ...fieldProperty(f, false, op.id), displayOptions: { show } });
		} else {
			optional.push(fieldProperty(f, true, op.id));
		}
	}
	// The field the user came to give (the address to block) comes first.
	const first = (p: INodeProperties) => (fieldWords(op.id, p.name).first ? 0 : 1);
	out.sort((a, b) => first(a) - first(b));
	if (isPaged(op)) {
		out.push(
			{
				displayName: 'Return All',
				name: 'returnAll',
				type: 'boolean',
				default: false,
				description: 'Whether to return all results or only up to a given limit',
				displayOptions: { show },
			},
			{
				displayName: 'Limit',
				name: 'limit',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 50,
				description: 'Max number of results to return',
				displayOptions: { show: { ...show, returnAll: [false] } },
			},
		);
	}
	if (optional.length) {
		out.push({
			displayName: 'Additional Fields',
			name: 'additionalFields',
			type: 'collection',
			description: NODE_WORDS.additionalFields,
			placeholder: 'Add Field',
			default: {},
			displayOptions: { show },
			options: optional.sort((a, b) => a.displayName.localeCompare(b.displayName)),
		});
	}
	return out;
}

/** n8n value → catalog value; undefined means "not given". */
export function toCatalogValue(f: Field, v: unknown, opId = ''): unknown {
	if (v === undefined || v === null) return undefined;
	// Resource locators hold {__rl, mode, value}: the value is what travels.
	if (typeof v === 'object' && !Array.isArray(v) && (v as { __rl?: unknown }).__rl === true) {
		v = (v as { value?: unknown }).value;
		if (v === undefined || v === null || v === '') return undefined;
	}
	const time = TIME_FIELDS[`${opId}:${f.name}`];
	if (time && typeof v === 'string' && v !== '') return fromDateTime(v, time);
	switch (f.kind) {
		case 'boolean01':
			if (typeof v === 'boolean') return v ? 1 : 0;
			return v === '' ? undefined : v;
		case 'stringList': {
			if (typeof v === 'object' && !Array.isArray(v)) {
				const values = (v as { values?: Array<{ value?: unknown }> }).values;
				if (!Array.isArray(values)) return undefined;
				const list = values.map((e) => (e?.value === undefined ? '' : String(e.value).trim())).filter((s) => s !== '');
				return list.length ? list : undefined;
			}
			if (Array.isArray(v)) return v.length ? v : undefined;
			return v === '' ? undefined : v;
		}
		case 'object':
			if (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0) return undefined;
			if (typeof v === 'string') {
				if (v.trim() === '') return undefined;
				try {
					return JSON.parse(v);
				} catch {
					return v;
				}
			}
			return v;
		default:
			return v === '' ? undefined : v;
	}
}

export type ParamReader = (name: string) => unknown;

/** Collects the catalog parameters of an operation from n8n parameters (raw values, validated later by the client). */
export function collectParams(op: CatalogEntry, read: ParamReader): Record<string, unknown> {
	const params: Record<string, unknown> = {};
	const additional = (read('additionalFields') ?? {}) as IDataObject;
	const conditional: Field[] = [];
	for (const f of op.fields) {
		if (isHiddenField(op, f)) continue;
		if (f.showWhen) {
			conditional.push(f);
			continue;
		}
		const raw = f.required ? read(f.name) : additional[f.name];
		const v = toCatalogValue(f, raw, op.id);
		if (v !== undefined) params[f.name] = v;
	}
	for (const [key, derive] of Object.entries(DERIVED)) {
		const [opId, name] = key.split(':');
		if (opId === op.id && params[name] === undefined) {
			const v = derive(params);
			if (v !== undefined) params[name] = v;
		}
	}
	for (const f of conditional) {
		const shown = Object.entries(f.showWhen ?? {}).every(([dep, values]) =>
			(values as ReadonlyArray<string | number>).some((x) => String(x) === String(params[dep])),
		);
		if (!shown) continue;
		const v = toCatalogValue(f, read(f.name), op.id);
		if (v !== undefined) params[f.name] = v;
	}
	return params;
}

/** Fields picked from a list the API gives (n8n resource locators); manual IDs and expressions keep working. */
interface Locator {
	method: string;
	placeholder: string;
}
const LOCATORS: Readonly<Record<string, Locator>> = {
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
const ENTRY_CHOICES: Readonly<Record<string, string>> = {
	'applicationProtection.ipBlacklist.remove:ip_black_list': 'blacklistEntries',
	'applicationProtection.ipWhitelist.remove:ip_white_list': 'whitelistEntries',
};

/** One entry of a list field: typed, or picked from the service's list when `method` names one. */
function entryValue(
	method: string | undefined,
	placeholder: string | undefined,
	entry: { label: string },
	hint?: string,
): INodeProperties {
	// One row's label ("Blocked Entry"), from labels.ts; a field without one keeps "Value".
	const label = entry.label.endsWith('#entry') ? undefined : entry.label;
	if (method) {
		return {
			displayName: label ?? 'Value',
			name: 'value',
			type: 'options',
			typeOptions: { loadOptionsMethod: method, loadOptionsDependsOn: ['site_id', 'domain_port_id'] },
			default: '',
			description:
				'Choose from the list, or specify one using an <a href="https://docs.n8n.io/code/expressions/">expression</a>',
		};
	}
	return {
		displayName: label ?? 'Value',
		name: 'value',
		type: 'string',
		default: '',
		description: hint ?? NODE_WORDS.entry,
		...(placeholder ? { placeholder } : {}),
	};
}

function resourceLocator(
	base: { displayName: string; name: string; description?: string },
	l: Locator,
	required: boolean,
): INodeProperties {
	return {
		...base,
		type: 'resourceLocator',
		default: { mode: 'list', value: '' },
		required,
		modes: [
			{
				displayName: 'From List',
				name: 'list',
				type: 'list',
				typeOptions: { searchListMethod: l.method, searchable: true },
			},
			{ displayName: 'By ID', name: 'id', type: 'string', placeholder: l.placeholder },
		],
	};
}

/** On/off writes shown as an explicit On / Off choice. */
const SWITCHES = new Set(['enable', 'is_enable', 'is_enabled', 'p3p_enabled', 'value']);

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

function safeDefault(f: Field): string | number | undefined {
	const d = SAFE_DEFAULTS[f.name];
	return d !== undefined && (f.options ?? []).some((o) => String(o) === String(d))
		? (f.options ?? []).find((o) => String(o) === String(d))
		: undefined;
}

/** Time fields shown as n8n date-time pickers, converted to the wire form (all in UTC). */
const TIME_FIELDS: Readonly<Record<string, 'ymdhms' | 'unix'>> = {
	'dashboard.ddosEvents:start_time': 'ymdhms',
	'dashboard.ddosEvents:end_time': 'ymdhms',
	'dashboard.flowDownEvents:start_time': 'unix',
	'dashboard.flowDownEvents:end_time': 'unix',
};

/**
 * n8n's date-time value (ISO 8601; without a zone it is read as UTC) → the wire form. Values already in the wire
 * form ('YYYY-MM-DD HH:MM:SS', 10-digit seconds) pass unchanged, so expressions written for the API keep working.
 */
export function fromDateTime(v: string, form: 'ymdhms' | 'unix'): string {
	const s = v.trim();
	if (form === 'ymdhms' && /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(s)) return s;
	if (form === 'unix' && /^\d{10}$/.test(s)) return s;
	const iso = /[zZ]|[+-]\d{2}:?\d{2}$/.test(s) ? s : `${s.replace(' ', 'T')}Z`;
	const ms = Date.parse(iso);
	if (Number.isNaN(ms)) return s; // left to the catalog's rule, which names the expected form
	const sec = Math.floor(ms / 1000);
	return form === 'unix' ? String(sec) : formatYmdhms(sec);
}
