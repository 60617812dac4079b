// Generates api/types.generated.ts — compile-time parameter and result types for every operation — from the
// endpoint catalog's zod schemas (never hand-written per endpoint).
//
//   npm run gen:types            (node --import tsx scripts/gen-types.mts)  writes the file when it differs;
//                                npm run build runs it first, so a catalog change needs no separate step
//   node --import tsx scripts/gen-types.mts --check                          exits 1 when the file is stale
//
// How: each operation's `op.request` is converted with zod v4's `z.toJSONSchema(…, { io: 'input' })` (what a caller
// may pass, before defaults and transforms) and `op.result` with `{ io: 'output' }` (what `client.call` resolves
// with after the catalog's parse); a small JSON Schema → TypeScript printer writes the two interfaces
// `OperationParams` and `OperationResults`, keyed by operation id, with JSDoc from the catalog's field descriptions.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod/v4';
import { catalog } from '../api/catalog/index.ts';
import type { CatalogEntry, Field } from '../api/catalog/types.ts';

export const GENERATED_PATH = resolve(import.meta.dirname, '../api/types.generated.ts');

type Io = 'input' | 'output';
type Json = {
	type?: string | string[];
	const?: unknown;
	enum?: unknown[];
	anyOf?: Json[];
	oneOf?: Json[];
	allOf?: Json[];
	items?: Json;
	prefixItems?: Json[];
	properties?: Record<string, Json>;
	required?: string[];
	additionalProperties?: Json | boolean;
	description?: string;
	default?: unknown;
	$ref?: string;
	[k: string]: unknown;
};

// ---------------------------------------------------------------- zod → JSON Schema

/**
 * zod's JSON Schema for one schema and side. A required catalog field is `z.custom(present).pipe(rule)` (define.ts,
 * so a missing field reads "is required"); on the input side zod would print the custom check (`{}`, i.e. unknown),
 * so such pipes are replaced by the input schema of the rule they lead into.
 */
export function jsonSchemaOf(schema: z.ZodType, io: Io): Json {
	const out = z.toJSONSchema(schema, {
		io,
		unrepresentable: 'any',
		cycles: 'throw',
		reused: 'inline',
		override: ({ zodSchema, jsonSchema }) => {
			const def = (zodSchema as unknown as { _zod: { def: { type: string; in?: z.ZodType; out?: z.ZodType } } })._zod
				.def;
			if (io !== 'input' || def.type !== 'pipe' || !def.in || !def.out) return;
			if ((def.in as unknown as { _zod: { def: { type: string } } })._zod.def.type !== 'custom') return;
			const inner = jsonSchemaOf(def.out, io);
			delete inner.$schema;
			for (const k of Object.keys(jsonSchema)) if (k !== 'description') delete (jsonSchema as Json)[k];
			Object.assign(
				jsonSchema,
				inner,
				(jsonSchema as Json).description ? { description: (jsonSchema as Json).description } : {},
			);
		},
	}) as Json;
	delete out.$schema;
	return out;
}

// ---------------------------------------------------------------- JSON Schema → TypeScript

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
const key = (k: string) => (IDENT.test(k) ? k : quote(k));

function literal(v: unknown): string {
	if (typeof v === 'string') return quote(v);
	if (typeof v === 'number' || typeof v === 'boolean') return String(v);
	if (v === null) return 'null';
	throw new Error(`gen-types: cannot print literal ${JSON.stringify(v)}`);
}

function union(parts: string[]): string {
	const seen = [...new Set(parts)];
	if (seen.includes('unknown')) return 'unknown';
	if (seen.length === 0) return 'never';
	return seen.join(' | ');
}

/** Wraps unions/intersections so `T[]` binds to the whole type. */
const paren = (t: string) => (/[|&]/.test(t) && !/^[{(]/.test(t) ? `(${t})` : t);

function jsdoc(lines: string[], tabs: string): string {
	const text = lines
		.flatMap((l) => l.split('\n'))
		.map((l) => l.replace(/\*\//g, '*\\/').trimEnd())
		.filter((l) => l.length > 0);
	if (text.length === 0) return '';
	if (text.length === 1) return `${tabs}/** ${text[0]} */\n`;
	return `${tabs}/**\n${text.map((l) => `${tabs} * ${l}`).join('\n')}\n${tabs} */\n`;
}

export interface PrintContext {
	io: Io;
	/** Extra JSDoc lines per top-level property (the catalog's field descriptions). */
	docs?: Record<string, string[]>;
}

/**
 * Prints a JSON Schema as a TypeScript type. Objects print as type literals (assignable to index-signature types
 * such as n8n's IDataObject). Input side: a strict object is closed (unknown keys fail to compile), a loose one gets
 * `[key: string]: unknown`. Output side: only the listed properties are typed — the catalog tolerates fields the
 * spec does not list, but reading one must be a deliberate cast, so a typo fails to compile.
 */
export function printType(s: Json, ctx: PrintContext, depth = 0, top = false): string {
	if (s.$ref) throw new Error(`gen-types: unexpected $ref ${s.$ref}`);
	if ('const' in s) return literal(s.const);
	if (s.enum) return union(s.enum.map(literal));
	const alts = s.anyOf ?? s.oneOf;
	if (alts) return union(alts.map((a) => printType(a, ctx, depth)));
	if (s.allOf) return s.allOf.map((a) => paren(printType(a, ctx, depth))).join(' & ');
	const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
	if (types.length === 0) return 'unknown';
	return union(types.map((t) => printOne(t, s, ctx, depth, top)));
}

function printOne(type: string, s: Json, ctx: PrintContext, depth: number, top: boolean): string {
	switch (type) {
		case 'string':
			return 'string';
		case 'integer':
		case 'number':
			return 'number';
		case 'boolean':
			return 'boolean';
		case 'null':
			return 'null';
		case 'array':
			if (s.prefixItems) {
				const rest = s.items ? [`...${paren(printType(s.items, ctx, depth))}[]`] : [];
				return `[${[...s.prefixItems.map((p) => printType(p, ctx, depth)), ...rest].join(', ')}]`;
			}
			return `${paren(s.items ? printType(s.items, ctx, depth) : 'unknown')}[]`;
		case 'object':
			return printObject(s, ctx, depth, top);
		default:
			throw new Error(`gen-types: unknown JSON Schema type ${type}`);
	}
}

function printObject(s: Json, ctx: PrintContext, depth: number, top: boolean): string {
	const props = Object.entries(s.properties ?? {});
	const extra = s.additionalProperties;
	const extraType =
		extra === undefined || extra === true ? 'unknown' : extra === false ? undefined : printType(extra, ctx, depth);
	if (props.length === 0) {
		if (extraType === undefined) return 'Record<string, never>';
		return `Record<string, ${extraType}>`;
	}
	const required = new Set(s.required ?? []);
	const tabs = '\t'.repeat(depth + 1);
	const lines: string[] = [];
	for (const [name, p] of props) {
		const doc = [
			...((top && ctx.docs?.[name]) || []),
			...(p.description && !(top && ctx.docs?.[name]) ? [p.description] : []),
		];
		lines.push(
			`${jsdoc(doc, tabs)}${tabs}${key(name)}${required.has(name) ? '' : '?'}: ${printType(p, ctx, depth + 1)};`,
		);
	}
	if (ctx.io === 'input' && extraType !== undefined) lines.push(`${tabs}[key: string]: unknown;`);
	return `{\n${lines.join('\n')}\n${'\t'.repeat(depth)}}`;
}

// ---------------------------------------------------------------- the file

function fieldDoc(f: Field): string[] {
	const notes: string[] = [];
	if (f.constant !== undefined) notes.push(`Constant; sent as ${quote(f.constant)} when omitted.`);
	if (f.local) notes.push('Client-side option: selects rules, never sent.');
	if (f.options?.length) notes.push(`One of: ${f.options.map((o) => String(o)).join(', ')}.`);
	if (f.default !== undefined && f.constant === undefined) notes.push(`UI default: ${JSON.stringify(f.default)}.`);
	const where = f.in === 'body' ? 'body' : f.in;
	return [
		`${f.description}${/[.!?]$/.test(f.description) ? '' : '.'} (${where}${f.kind === 'secret' ? ', secret' : ''})`,
		...notes,
	];
}

function entry(op: CatalogEntry, io: Io): string {
	const schema = jsonSchemaOf(io === 'input' ? op.request : op.result, io);
	const docs = io === 'input' ? Object.fromEntries(op.fields.map((f) => [f.name, fieldDoc(f)])) : undefined;
	const head =
		io === 'input' ? `${op.method} ${op.path} — ${op.summary} (§${op.section})` : `Result of ${op.id}: ${op.summary}`;
	return `${jsdoc([head], '\t')}\t${quote(op.id)}: ${printType(schema, { io, docs }, 1, true)};`;
}

export function generateTypes(): string {
	const parts = [
		'// Generated by scripts/gen-types.mts from the endpoint catalog (api/catalog/). Do not edit: run `npm run gen:types`.',
		'',
		'/**',
		' * What a caller may pass to each operation (zod input side of `op.request`: before defaults and transforms).',
		' * Cross-field rules (conditional requirements, exclusive fields) are checked at run time by `client.validate`.',
		' */',
		'export interface OperationParams {',
		...catalog.map((op) => entry(op, 'input')),
		'}',
		'',
		'/**',
		" * What `client.call` resolves with for each operation (zod output side of `op.result`, after the catalog's parse).",
		' * Objects list the fields the spec documents; the service may add others (kept at run time, not typed).',
		' */',
		'export interface OperationResults {',
		...catalog.map((op) => entry(op, 'output')),
		'}',
		'',
	];
	return parts.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
	const text = generateTypes();
	if (process.argv.includes('--check')) {
		let current = '';
		try {
			current = readFileSync(GENERATED_PATH, 'utf8');
		} catch {
			/* missing counts as stale */
		}
		if (current !== text) {
			console.error(`${GENERATED_PATH} is stale: run npm run gen:types`);
			process.exit(1);
		}
		console.log(`${GENERATED_PATH} is up to date (${catalog.length} operations)`);
	} else {
		let current = '';
		try {
			current = readFileSync(GENERATED_PATH, 'utf8');
		} catch {
			/* missing: written below */
		}
		if (current !== text) {
			writeFileSync(GENERATED_PATH, text);
			console.log(`wrote ${GENERATED_PATH} (${catalog.length} operations, ${text.length} bytes)`);
		}
	}
}
