import { z } from 'zod/v4';
import type { CatalogEntry, Field, FieldKind, FieldLocation, Operation } from './types';

/** Builds an entry's request schema from its fields (one schema per field) plus its cross-field rules. */
export function defineOp<const Id extends string>(op: Operation & { id: Id }): CatalogEntry & { readonly id: Id } {
	return Object.freeze({ ...op, request: objectSchema(op, true) }) as CatalogEntry & { readonly id: Id };
}

/**
 * The request schema for parameters that carry every required field with a value (not '', undefined or null):
 * `request` without the per-field "is required" wrapper, which for such a value only passes it on to the field's own
 * schema — the same result and the same issues, for about two thirds of the parse (built on first use).
 */
export function requestGiven(op: CatalogEntry): { required: readonly string[]; schema: RequestSchema } {
	let g = given.get(op);
	if (!g) {
		const required = op.fields.filter((f) => f.required && f.constant === undefined).map((f) => f.name);
		g = { required, schema: required.length ? objectSchema(op, false) : op.request };
		given.set(op, g);
	}
	return g;
}

type RequestSchema = z.ZodType<Record<string, unknown>>;
const given = new WeakMap<CatalogEntry, { required: readonly string[]; schema: RequestSchema }>();

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
	return (
		refine
			? base.superRefine((value, ctx) =>
					refine(value as Record<string, unknown>, {
						issue: (field, rule) => ctx.addIssue({ code: 'custom', path: [field], message: rule }),
					}),
				)
			: base
	) as unknown as RequestSchema;
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
export const rec = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape);

/** Operations that return no result: the envelope may omit it or carry anything. */
export const noResult = z.unknown();
