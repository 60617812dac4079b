// The shapes docs/cli-json/ documents for secsvc's JSON outputs, read from the pages themselves (their ```json blocks under
// "### `KEY`" and "### Type `Name`" headings), and a strict check of a value against one of them.
import { readdirSync, readFileSync } from 'node:fs';

type Shape = string | Shape[] | { [key: string]: Shape };

const PAGES = new URL('../../docs/cli-json/', import.meta.url);

/** Outputs by key (heading "### `KEY` (vN)") and named types by name ("### Type `Name`"), as the page documents them. */
function readPage() {
	const outputs = new Map<string, { shape: Shape; version: number }>();
	const types = new Map<string, Shape>();
	const re = /^### (Type )?`([^`]+)`( \(v(\d+)\))?[^\n]*\n[\s\S]*?^```json\n([\s\S]*?)^```/gm;
	const text = readdirSync(PAGES)
		.filter((f) => f.endsWith('.md'))
		.map((f) => readFileSync(new URL(f, PAGES), 'utf8'))
		.join('\n');
	for (const m of text.matchAll(re)) {
		if ((m[1] ? types : outputs).has(m[2])) throw new Error(`docs/cli-json/: ${m[2]} is documented twice`);
		if (!m[1] && !m[4]) throw new Error(`docs/cli-json/: ${m[2]} has no version (vN) in its heading`);
		const shape = JSON.parse(m[5]) as Shape;
		if (m[1]) types.set(m[2], shape);
		else outputs.set(m[2], { shape, version: Number(m[4]) });
	}
	return { outputs, types };
}

/** Every output the page documents, with its version. */
export function documentedOutputs(): { key: string; version: number }[] {
	return [...readPage().outputs].map(([key, o]) => ({ key, version: o.version }));
}

/**
 * The differences between `value` and the documented shape of output `key` (none: it matches). Strict both ways: a
 * documented field missing or of another type, and a field the page does not document, are both differences.
 */
export function checkCliJson(key: string, value: unknown): string[] {
	const { outputs, types } = readPage();
	const output = outputs.get(key);
	if (output === undefined) return [`${key}: not documented in docs/cli-json/`];
	const problems: string[] = [];
	check(value, output.shape, '$', types, problems);
	return problems.slice(0, 20);
}

const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function check(v: unknown, shape: Shape, at: string, types: Map<string, Shape>, out: string[]): void {
	if (typeof shape === 'string') {
		const alternatives = shape.split('|');
		if (alternatives.length > 1) {
			const fits = alternatives.map((s) => {
				const p: string[] = [];
				check(v, s, at, types, p);
				return p;
			});
			if (!fits.some((p) => p.length === 0)) out.push(`${at}: ${kindOf(v)} is not ${shape}`);
			return;
		}
		if (types.has(shape)) return check(v, types.get(shape) as Shape, at, types, out);
		if (shape === 'any') return;
		if (shape === 'object' ? kindOf(v) !== 'object' : kindOf(v) !== shape)
			out.push(`${at}: ${kindOf(v)} is not ${shape}`);
		return;
	}
	if (Array.isArray(shape)) {
		if (!Array.isArray(v)) return void out.push(`${at}: ${kindOf(v)} is not a list`);
		v.forEach((x, i) => check(x, shape[0], `${at}[${i}]`, types, out));
		return;
	}
	if (kindOf(v) !== 'object') return void out.push(`${at}: ${kindOf(v)} is not an object`);
	const o = v as Record<string, unknown>;
	const fields = new Map(
		Object.entries(shape).map(([k, s]) => [k.replace(/\?$/, ''), { s, optional: k.endsWith('?') }]),
	);
	for (const [k, f] of fields) {
		if (k === '*') continue;
		if (!(k in o)) {
			if (!f.optional) out.push(`${at}.${k}: missing`);
		} else check(o[k], f.s, `${at}.${k}`, types, out);
	}
	const rest = fields.get('*');
	for (const k of Object.keys(o)) {
		if (fields.has(k)) continue;
		if (rest) check(o[k], rest.s, `${at}.${k}`, types, out);
		else out.push(`${at}.${k}: not documented`);
	}
}
