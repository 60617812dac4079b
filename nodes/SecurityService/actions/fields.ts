import type { IDataObject, INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import type { CatalogEntry, Field } from '../../../api/catalog/types';

/**
 * The one generic module that turns catalog operations into n8n parameters, and n8n parameter values back into
 * catalog parameters. Nothing here knows a particular endpoint: everything comes from the catalog's fields
 * (kind, required, options, default, showWhen, schema shape).
 */

const ACRONYMS: Record<string, string> = {
	id: 'ID', ip: 'IP', ips: 'IPs', url: 'URL', uri: 'URI', http: 'HTTP', https: 'HTTPS', ddos: 'DDoS', tps: 'TPS',
	rps: 'RPS', pps: 'PPS', bps: 'BPS', ua: 'UA', p3p: 'P3P', xff: 'XFF', rp: 'RP', spe: 'SPE', ipv4: 'IPv4',
	http09: 'HTTP/0.9', http10: 'HTTP/1.0', http11: 'HTTP/1.1',
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
	if (op.list?.paging === 'startNum' && f.name === 'start') return true;
	return false;
}

export function isPaged(op: CatalogEntry): boolean {
	return op.list?.paging !== undefined;
}

/** Labels for numeric options, read from the description ("0 off, 1 on, 2 auto"). */
function optionLabel(f: Field, v: string | number): string {
	const m = new RegExp(`(?:^|[\\s,;('"])${String(v)}'?\\s+([A-Za-z][\\w -]*?)(?=\\s*(?:[,;)]|'|$))`).exec(f.description);
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
		let name = optionLabel(f, v);
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
export function fieldProperty(f: Field, inCollection = false): INodeProperties {
	const base = {
		displayName: humanize(f.name),
		name: f.name,
		description: f.description,
	};
	const required = !inCollection && f.required;
	switch (f.kind) {
		case 'secret':
			return { ...base, type: 'string', typeOptions: { password: true }, default: '', required };
		case 'integer':
			return { ...base, type: 'number', default: typeof f.default === 'number' ? f.default : 0, required };
		case 'boolean01':
			return { ...base, type: 'boolean', default: f.default === 1 || f.default === '1' };
		case 'options':
			return {
				...base,
				type: 'options',
				options: options(f),
				default: (f.default as string | number | undefined) ?? f.options?.[0] ?? '',
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
				placeholder: `Add ${humanize(f.name)}`,
				default: {},
				required,
				options: [
					{
						name: 'values',
						displayName: 'Entry',
						values: [{ displayName: 'Value', name: 'value', type: 'string', default: '' }],
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
					displayName: humanize(k),
					name: k,
					type: 'number',
					default: 0,
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
					default: (f.default as string | undefined) ?? f.options[0],
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
			const p = fieldProperty(f);
			out.push({
				...p,
				required: f.kind !== 'object' && f.kind !== 'boolean01',
				displayOptions: { show: { ...show, ...(f.showWhen as Record<string, Array<string | number>>) } },
			});
		} else if (f.required) {
			out.push({ ...fieldProperty(f), displayOptions: { show } });
		} else {
			optional.push(fieldProperty(f, true));
		}
	}
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
			placeholder: 'Add Field',
			default: {},
			displayOptions: { show },
			options: optional.sort((a, b) => a.displayName.localeCompare(b.displayName)),
		});
	}
	return out;
}

/** n8n value → catalog value; undefined means "not given". */
export function toCatalogValue(f: Field, v: unknown): unknown {
	if (v === undefined || v === null) return undefined;
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
		const v = toCatalogValue(f, raw);
		if (v !== undefined) params[f.name] = v;
	}
	for (const f of conditional) {
		const shown = Object.entries(f.showWhen ?? {}).every(([dep, values]) =>
			(values as ReadonlyArray<string | number>).some((x) => String(x) === String(params[dep])),
		);
		if (!shown) continue;
		const v = toCatalogValue(f, read(f.name));
		if (v !== undefined) params[f.name] = v;
	}
	return params;
}
