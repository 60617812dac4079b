import { GUARDED_FIELDS, callIssues, type BlastRadiusPolicy } from './blastRadius';
import { parseRequest } from './catalog/define';
import type { CatalogEntry } from './catalog/types';
import { BlastRadiusError, ValidationError, type FieldIssue } from './errors';
import { MAX_BODY_STRING, MAX_LIST, MAX_QUERY_STRING, sizeIssues } from './limits';

/**
 * Validation shared by every host (the client's first step): the override of the guard's widest prefix, size bounds,
 * the catalog's schema and the blast-radius guard's pure rules. The common case (no empty values, no override, no
 * oversized value) copies nothing.
 */

/**
 * The override of the guard's widest-prefix rule, given with the parameters of a blocking operation (so it travels
 * through activities, `secsvc call` and n8n alike, and is recorded where the call is: Temporal history, n8n
 * output): `allowWideBlock: { reason, by? }`. Never sent to the service.
 */
export const OVERRIDE_PARAM = 'allowWideBlock';
export interface WideBlockOverride {
	reason: string;
	by?: string;
}

/** The override given with `params` (checked: a reason is required), and the parameters without it. */
export function splitOverride(
	op: CatalogEntry,
	params: Record<string, unknown>,
): { params: Record<string, unknown>; override?: WideBlockOverride } {
	if (!(OVERRIDE_PARAM in params)) return { params };
	const given = params[OVERRIDE_PARAM] as Partial<WideBlockOverride> | string | boolean | null | undefined;
	const rest = { ...params };
	delete rest[OVERRIDE_PARAM];
	if (given === undefined || given === null || given === false || (typeof given === 'string' && !given.trim()))
		return { params: rest };
	const o = typeof given === 'string' ? { reason: given } : given;
	const issues: FieldIssue[] = [];
	if (!guardedOp(op.id))
		issues.push({
			field: OVERRIDE_PARAM,
			rule: 'is only for operations that add address entries (IP blacklist add, IP whitelist add, HTTP filters)',
		});
	else if (!o || typeof o !== 'object' || typeof o.reason !== 'string' || !o.reason.trim())
		issues.push({
			field: `${OVERRIDE_PARAM}.reason`,
			rule: 'is required: say why a block wider than the widest prefix is needed (it is recorded)',
		});
	else if (o.reason.length > 500)
		issues.push({ field: `${OVERRIDE_PARAM}.reason`, rule: 'must be at most 500 characters' });
	else if (o.by !== undefined && (typeof o.by !== 'string' || o.by.length > 200))
		issues.push({ field: `${OVERRIDE_PARAM}.by`, rule: 'must be text of at most 200 characters' });
	if (issues.length) throw new ValidationError(op.id, issues);
	const ok = o as WideBlockOverride;
	return { params: rest, override: { reason: ok.reason.trim(), ...(ok.by ? { by: ok.by } : {}) } };
}

export const guardedOp = (opId: string) => opId in GUARDED_FIELDS;

/** The guard on parsed parameters: ValidationError naming the field, the rule and the conflicting range. */
export function guard(
	op: CatalogEntry,
	parsed: Record<string, unknown>,
	policy: BlastRadiusPolicy,
	given?: Record<string, unknown>,
): void {
	const issues = callIssues(op.id, parsed, policy, given);
	if (issues.length)
		throw new BlastRadiusError(
			op.id,
			issues.map((i) => ({ field: i.field, rule: i.rule })),
		);
}

/**
 * Validation shared by every host. Throws ValidationError naming each field and rule. Blocking operations also pass
 * the blast-radius guard (api/blastRadius.ts) with `policy` (default: widest prefix /16, special ranges).
 */
export function validateParams(
	op: CatalogEntry,
	params: Record<string, unknown> = {},
	policy: BlastRadiusPolicy = {},
): Record<string, unknown> {
	if (typeof params !== 'object' || params === null || Array.isArray(params))
		throw new ValidationError(op.id, [{ field: '(request)', rule: 'must be an object of named parameters' }]);
	const stripped = stripEmpty(params);
	// no override given (the common case): nothing to split
	const split = OVERRIDE_PARAM in stripped ? splitOverride(op, stripped) : undefined;
	const given = split ? split.params : stripped;
	const oversize = sizeProblems(op, given);
	if (oversize) throw new ValidationError(op.id, oversize);
	const parsed = parseRequest(op, given);
	if (parsed.success) {
		guard(op, parsed.data, split?.override ? { ...policy, allowWideBlock: split.override } : policy, given);
		return parsed.data;
	}
	const issues: FieldIssue[] = parsed.error.issues.map((i) => ({
		field: i.path.length ? i.path.map(String).join('.') : '(request)',
		rule: i.message,
	}));
	throw new ValidationError(op.id, dedupe(issues));
}

/**
 * Size bounds checked before the schema runs (a 3 MB id or a 10⁶-entry list gets one short issue, not a slow parse
 * and a huge message): strings in the URL (path, query) ≤ MAX_QUERY_STRING, in a body ≤ MAX_BODY_STRING; lists ≤
 * MAX_LIST entries; field names ≤ 200 characters. Undefined when every value is within them (no list built).
 */
function sizeProblems(op: CatalogEntry, params: Record<string, unknown>): FieldIssue[] | undefined {
	let out: FieldIssue[] | undefined;
	const inUrl = op.encoding === 'query' || op.encoding === 'redirect';
	for (const k in params) {
		const v = params[k];
		if (k.length > 200) {
			(out ??= []).push({ field: '(request)', rule: `unknown field with a name of ${k.length} characters` });
			continue;
		}
		// numbers, booleans and short strings are within every bound (the common case: no walk)
		if (typeof v !== 'object' && (typeof v !== 'string' || v.length <= MAX_QUERY_STRING)) continue;
		const where = fieldNamed(op, k)?.in;
		const url = inUrl || where === 'path' || where === 'query';
		(out ??= []).push(
			...sizeIssues(v, {
				path: k,
				maxString: url ? MAX_QUERY_STRING : MAX_BODY_STRING,
				maxList: MAX_LIST,
				maxDepth: 8,
			}),
		);
	}
	return out?.length ? out : undefined;
}

/**
 * The field of that name (a function of its own: a closure over the loop's key in sizeProblems would give every
 * iteration, oversized or not, a context of its own to allocate).
 */
function fieldNamed(op: CatalogEntry, name: string) {
	for (const f of op.fields) if (f.name === name) return f;
	return undefined;
}

/** Undefined and null mean "not given"; n8n and JSON plans produce both. Copied only when there is one. */
export function stripEmpty(params: Record<string, unknown>): Record<string, unknown> {
	let empty = false;
	for (const k in params)
		if (params[k] === undefined || params[k] === null) {
			empty = true;
			break;
		}
	if (!empty && Object.getPrototypeOf(params) === Object.prototype) return params;
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== null) out[k] = v;
	return out;
}

function dedupe(issues: FieldIssue[]): FieldIssue[] {
	const seen = new Set<string>();
	return issues.filter((i) => {
		const k = `${i.field}\u0000${i.rule}`;
		if (seen.has(k)) return false;
		seen.add(k);
		return true;
	});
}
