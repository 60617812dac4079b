import type { z } from 'zod/v4';
import type { $ZodType } from 'zod/v4/core';

/**
 * Plain checks beside the commonest field rules (api/catalog/rules.ts): a value its check accepts is one the field's
 * zod schema returns as it is, so validation can pass it on without zod's walk (the client's largest per-call cost
 * against the service: issue 42). A value it does not accept goes to zod, which decides and names the rule — a check
 * may refuse more than its schema, never accept what the schema would change or refuse (test/unit/plainChecks).
 */
const checks = new WeakMap<z.ZodType, (v: unknown) => boolean>();

/** `schema`, with the plain check of the values it returns unchanged. */
export function withPlain<T extends z.ZodType>(schema: T, accepts: (v: unknown) => boolean): T {
	checks.set(schema, accepts);
	return schema;
}

export const plainCheck = (schema: z.ZodType) => checks.get(schema);

export const isSafeInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** Result schemas' plain parses: the value zod would return, or undefined when zod must look. */
const results = new WeakMap<z.ZodType, (v: unknown) => unknown>();

export const plainResult = (schema: z.ZodType) => results.get(schema);

/**
 * A result object (`z.looseObject`) whose every field is a bare number, integer, text or boolean gets a plain parse:
 * those fields checked as zod checks them, the object copied in zod's order (the shape's keys, then the others).
 */
export function withPlainRecord<T extends z.ZodType>(schema: T, shape: Readonly<Record<string, $ZodType>>): T {
	const fields = Object.entries(shape).map(([k, s]) => [k, bareCheck(s)] as const);
	const keys = new Set(Object.keys(shape));
	if (fields.every(([, c]) => c))
		results.set(schema, (v) => plainRecord(fields as readonly (readonly [string, (v: unknown) => boolean])[], keys, v));
	return schema;
}

/** The check of a schema that is one bare type (zod's number: finite; int(): a safe integer), else undefined. */
function bareCheck(s: $ZodType): ((v: unknown) => boolean) | undefined {
	const def = s._zod.def as { type: string; checks?: { _zod: { def: { check?: string; format?: string } } }[] };
	const checks = def.checks ?? [];
	if (def.type === 'string' && !checks.length) return (v) => typeof v === 'string';
	if (def.type === 'boolean' && !checks.length) return (v) => typeof v === 'boolean';
	if (def.type !== 'number' || checks.length > 1) return undefined;
	if (!checks.length) return (v) => typeof v === 'number' && Number.isFinite(v);
	const c = checks[0]._zod.def;
	return c.check === 'number_format' && c.format === 'safeint' ? isSafeInt : undefined;
}

function plainRecord(
	fields: readonly (readonly [string, (v: unknown) => boolean])[],
	keys: ReadonlySet<string>,
	v: unknown,
): unknown {
	if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
	const given = v as Record<string, unknown>;
	for (const [k, accepts] of fields) if (!accepts(given[k])) return undefined;
	// its keys already in zod's order (the shape's, then the others: the common answer): the parsed object itself
	let i = 0;
	let ordered = Object.getPrototypeOf(given) === Object.prototype;
	for (const k in given) {
		if (k === '__proto__') return undefined;
		if (i < fields.length && k !== fields[i++][0]) ordered = false;
	}
	if (ordered && i === fields.length) return given;
	const out: Record<string, unknown> = {};
	for (const [k] of fields) out[k] = given[k];
	for (const k in given) if (!keys.has(k)) out[k] = given[k];
	return out;
}
