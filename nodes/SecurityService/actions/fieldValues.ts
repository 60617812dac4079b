import type { IDataObject } from 'n8n-workflow';
import { formatYmdhms } from '../../../api/catalog/rules';
import type { CatalogEntry, Field } from '../../../api/catalog/types';
import { DERIVED, TIME_FIELDS, isHiddenField, paramName } from './fieldTables';

/** n8n parameter values → catalog parameters (raw values, validated later by the client). */

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
		const name = paramName(op.id, f.name);
		const raw = f.required ? read(name) : additional[name];
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
		const v = toCatalogValue(f, read(paramName(op.id, f.name)), op.id);
		if (v !== undefined) params[f.name] = v;
	}
	return params;
}

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
