import type { z } from 'zod/v4';

/**
 * Plain checks beside the commonest field rules (api/catalog/rules.ts): a value its check accepts is one the field's
 * zod schema returns as it is, so validation can pass it on without zod's walk (the client's largest per-call cost
 * against the service: issue 42). A value it does not accept goes to zod, which decides and names the rule — a check
 * may refuse more than its schema, never accept what the schema would change or refuse (test/unit/requestGiven).
 */
const checks = new WeakMap<z.ZodType, (v: unknown) => boolean>();

/** `schema`, with the plain check of the values it returns unchanged. */
export function withPlain<T extends z.ZodType>(schema: T, accepts: (v: unknown) => boolean): T {
	checks.set(schema, accepts);
	return schema;
}

export const plainCheck = (schema: z.ZodType) => checks.get(schema);

export const isSafeInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
