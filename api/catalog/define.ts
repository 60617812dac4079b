import { z } from 'zod/v4';
import { plainCheck, withPlainRecord } from './plain';
import type { CatalogEntry, Field, FieldKind, FieldLocation, Operation } from './types';

/**
 * An entry with its request schema: the fields' schemas plus its cross-field rules, built on the first read of
 * `request` (most processes that import the catalog never parse most operations with it).
 */
export function defineOp<const Id extends string>(op: Operation & { id: Id }): CatalogEntry & { readonly id: Id } {
	let request: RequestSchema | undefined;
	const entry = Object.defineProperty({ ...op }, 'request', {
		enumerable: true,
		get: () => (request ??= objectSchema(op, true)),
	});
	return Object.freeze(entry) as CatalogEntry & { readonly id: Id };
}

/**
 * Parameters (none of them undefined or null) parsed as the entry's request schema parses them, cheaper in the common
 * case: when every value passes its field's plain check (api/catalog/plain.ts) the parameters are returned as zod
 * would return them, without its walk; when every required field has a value, zod parses without the per-field "is
 * required" wrapper (which only passes such a value on); otherwise the request schema itself answers. The same data
 * and the same issues either way (test/unit/plainChecks.test.mts).
 */
export function parseRequest(
	op: CatalogEntry,
	given: Record<string, unknown>,
): { success: true; data: Record<string, unknown> } | { success: false; error: z.ZodError } {
	const g = requestGiven(op);
	for (const name of g.required) {
		const v = given[name];
		if (v === undefined || v === null || v === '') return op.request.safeParse(given);
	}
	const data = g.plain && plainParams(g.plain, given);
	return data ? { success: true, data } : g.schema.safeParse(given);
}

type RequestSchema = z.ZodType<Record<string, unknown>>;
/** Each field with its plain check (undefined: zod decides every value of that field). */
type PlainFields = readonly (readonly [string, ((v: unknown) => boolean) | undefined])[];
interface Given {
	required: readonly string[];
	schema: RequestSchema;
	/** Only for entries without constant fields (zod adds their default) and without cross-field rules. */
	plain?: PlainFields;
}
const givenByOp = new WeakMap<CatalogEntry, Given>();

/** What parseRequest needs of an entry, built on its first call. */
export function requestGiven(op: CatalogEntry): Given {
	let g = givenByOp.get(op);
	if (!g) {
		const required = op.fields.filter((f) => f.required && f.constant === undefined).map((f) => f.name);
		const plainable = !op.refine && op.fields.every((f) => f.constant === undefined);
		g = {
			required,
			schema: required.length ? objectSchema(op, false) : op.request,
			plain: plainable ? op.fields.map((f) => [f.name, plainCheck(f.schema)] as const) : undefined,
		};
		givenByOp.set(op, g);
	}
	return g;
}

/** The parameters in the fields' order (as zod's object returns them), or undefined when zod must look. */
function plainParams(fields: PlainFields, given: Record<string, unknown>): Record<string, unknown> | undefined {
	const out: Record<string, unknown> = {};
	let n = 0;
	for (const [name, accepts] of fields) {
		const v = given[name];
		if (v === undefined) continue;
		if (!accepts?.(v)) return undefined;
		out[name] = v;
		n++;
	}
	// a key that is no field: zod names it (counted without building the list of keys)
	for (const k in given) if (Object.hasOwn(given, k) && --n < 0) return undefined;
	return out;
}

function objectSchema(op: Operation, wrapRequired: boolean): RequestSchema {
	const shape: Record<string, z.ZodType> = {};
	for (const f of op.fields) {
		if (f.constant !== undefined) {
			const rule = `must be '${f.constant}'`;
			shape[f.name] = z.literal(f.constant, { error: rule }).optional().default(f.constant);
			continue;
		}
		shape[f.name] = !f.required ? f.schema.optional() : wrapRequired ? requiredField(f) : f.schema;
	}
	const base = z.strictObject(shape, {
		error: (iss) =>
			iss.code === 'unrecognized_keys'
				? `unknown field(s) ${iss.keys.map((k) => `'${k}'`).join(', ')}: ${op.id} accepts ${op.fields.map((f) => f.name).join(', ') || 'no fields'}`
				: undefined,
	});
	const refine = op.refine;
	return (refine
		? base.superRefine((value, ctx) =>
				refine(value as Record<string, unknown>, {
					issue: (field, rule) => ctx.addIssue({ code: 'custom', path: [field], message: rule }),
				}),
			)
		: base) as unknown as RequestSchema;
}

function requiredField(f: Field): z.ZodType {
	// A missing required field gets a message naming the rule, not zod's "expected string, received undefined".
	return z.custom((v) => v !== undefined && v !== null && v !== '', { error: 'is required' }).pipe(f.schema);
}

type FieldOpts = Partial<Omit<Field, 'name' | 'in' | 'kind' | 'schema' | 'description'>>;

/** Small constructor so catalog rows stay one line each. */
export function field(
	name: string,
	location: FieldLocation,
	kind: FieldKind,
	schema: z.ZodType,
	description: string,
	opts: FieldOpts = {},
): Field {
	return { name, in: location, kind, schema, description, required: opts.required ?? false, ...opts };
}

export const req = { required: true } as const;

/** A result object that tolerates fields the spec does not list (the service may add some). */
export const rec = <S extends z.ZodRawShape>(shape: S) => withPlainRecord(z.looseObject(shape), shape);

/** Operations that return no result: the envelope may omit it or carry anything. */
export const noResult = z.unknown();
