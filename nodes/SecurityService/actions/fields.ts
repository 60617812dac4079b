import type { INodeProperties } from 'n8n-workflow';
import { NODE_WORDS, OBJECT_PARTS, fieldWords } from '../../../api/catalog/labels';
import type { CatalogEntry, Field } from '../../../api/catalog/types';
import {
	ENTRY_CHOICES,
	LOCATORS,
	SWITCHES,
	TIME_FIELDS,
	humanize,
	isHiddenField,
	isPaged,
	isSingleStringList,
	options,
	paramName,
	safeDefault,
	schemaDef,
	type Locator,
} from './fieldTables';

/**
 * The one generic module that turns catalog operations into n8n parameters (fieldValues.ts turns the values back into
 * catalog parameters). Nothing here knows a particular endpoint: everything comes from the catalog's fields (kind,
 * required, options, default, showWhen, schema shape) and fieldTables.ts.
 */

type Base = Pick<INodeProperties, 'displayName' | 'name' | 'description' | 'placeholder'>;

/** One n8n parameter for a catalog field (displayOptions added by the caller). */
export function fieldProperty(f: Field, inCollection = false, opId = ''): INodeProperties {
	const words = fieldWords(opId, f.name);
	const base: Base = {
		displayName: words.label,
		name: paramName(opId, f.name),
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
		const onOff = [
			{ name: 'On', value: 1 },
			{ name: 'Off', value: 0 },
		];
		return { ...base, type: 'options', options: onOff, default: 1, required };
	}
	return byKind(f, base, required, opId);
}

/** The parameter for a field's kind (no locator, date-time or on/off switch). */
function byKind(f: Field, base: Base, required: boolean, opId: string): INodeProperties {
	switch (f.kind) {
		case 'secret':
			return { ...base, type: 'string', typeOptions: { password: true }, default: '', required };
		case 'integer':
			// No number is preselected where the catalog has no default: an empty field is "not given" (refused before
			// sending when required), never a silent 0 (n8n's own nodes do the same with `default: null`).
			return { ...base, type: 'number', default: typeof f.default === 'number' ? f.default : null, required };
		case 'boolean01':
			return { ...base, type: 'boolean', default: f.default === 1 || f.default === '1' };
		case 'stringList':
			return listProperty(f, base, required, opId);
		case 'object':
			return objectProperty(f, base);
		case 'options':
		case 'string':
		default:
			if (f.options?.length) {
				const d = (f.default as string | number | undefined) ?? safeDefault(f) ?? f.options[0];
				return { ...base, type: 'options', options: options(f), default: d, required };
			}
			return { ...base, type: 'string', default: (f.default as string | undefined) ?? '', required };
	}
}

/** A list: choices (multiOptions), one string the schema splits, or rows typed or picked (fixedCollection). */
function listProperty(f: Field, base: Base, required: boolean, opId: string): INodeProperties {
	if (f.options?.length) return { ...base, type: 'multiOptions', options: options(f), default: [], required };
	if (isSingleStringList(f)) return { ...base, type: 'string', default: '', required };
	const words = fieldWords(opId, f.name);
	const row = entryValue(
		ENTRY_CHOICES[`${opId}:${f.name}`],
		words.placeholder,
		fieldWords(opId, `${f.name}#entry`),
		words.hint,
	);
	return {
		...base,
		type: 'fixedCollection',
		typeOptions: { multipleValues: true },
		placeholder: `Add ${words.label}`,
		default: {},
		required,
		options: [{ name: 'values', displayName: 'Entry', values: [row] }],
	};
}

/** An `action_*` object: its numeric parts as a collection. */
function objectProperty(f: Field, base: Base): INodeProperties {
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

function resourceLocator(base: Base, l: Locator, required: boolean): INodeProperties {
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
