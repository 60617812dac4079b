import type { CatalogEntry, Field } from './catalog/types';
import { pathSegment } from './limits';
import type { HttpBody, HttpRequest } from './transport/types';

/** Turns validated parameters into the wire request the spec describes for the operation. */
export function encodeRequest(
	op: CatalogEntry,
	params: Record<string, unknown>,
	opts: { baseUrl: string; accessToken?: string; timeoutMs: number; maxResponseBytes?: number },
): HttpRequest {
	let path = '';
	const pieces = pathPieces(op);
	for (let i = 0; i < pieces.length; i += 2) {
		path += pieces[i];
		const name = pieces[i + 1];
		if (name === undefined) break;
		const v = params[name];
		path += v === undefined || v === null ? `{${name}}` : pathSegment(String(v));
	}
	// built only when a field goes there (a GET by path and token builds neither list)
	let query: Array<[string, string]> | undefined;
	let parts: Array<[string, string]> | undefined;
	const json: Record<string, unknown> | undefined = op.encoding === 'json' ? {} : undefined;
	const urlOnly = op.encoding === 'query' || op.encoding === 'redirect';

	for (const f of op.fields) {
		const v = params[f.name];
		if (v === undefined || v === null || f.local || f.in === 'path') continue;
		if (f.in === 'query' || urlOnly) pushValue((query ??= []), f, v);
		else if (json) json[f.name] = v;
		else pushValue((parts ??= []), f, v);
	}
	let url = opts.baseUrl.endsWith('/') ? opts.baseUrl.replace(/\/+$/, '') + path : opts.baseUrl + path;
	let sep = '?';
	if (query)
		for (const [k, v] of query) {
			url += `${sep}${encodeURIComponent(k)}=${encodeURIComponent(v)}`;
			sep = '&';
		}
	if (op.auth === 'access_token') {
		if (!opts.accessToken) throw new Error(`${op.id}: no access token`);
		url += `${sep}access_token=${encodedToken(opts.accessToken)}`;
	}

	let body: HttpBody | undefined;
	if (json) body = { kind: 'json', value: json };
	else if (op.encoding === 'multipart') body = { kind: 'multipart', parts: parts ?? [] };
	else if (op.encoding === 'form') body = { kind: 'form', parts: parts ?? [] };

	return {
		method: op.method,
		url,
		headers: { accept: 'application/json' },
		body,
		timeoutMs: opts.timeoutMs,
		maxResponseBytes: opts.maxResponseBytes,
		safety: op.safety,
	};
}

/**
 * An entry's path cut once at the placeholders its path fields fill: text, field name, text, …, text (a placeholder
 * no path field fills stays in the text, as it was).
 */
const piecesByOp = new WeakMap<CatalogEntry, readonly string[]>();
function pathPieces(op: CatalogEntry): readonly string[] {
	let pieces = piecesByOp.get(op);
	if (!pieces) {
		const filled = new Set(op.fields.filter((f) => f.in === 'path' && !f.local).map((f) => f.name));
		const cut = op.path.split(/\{(\w+)\}/);
		const built = [cut[0]];
		for (let i = 1; i < cut.length; i += 2)
			if (filled.has(cut[i])) built.push(cut[i], cut[i + 1]);
			else built[built.length - 1] += `{${cut[i]}}${cut[i + 1]}`;
		piecesByOp.set(op, (pieces = built));
	}
	return pieces;
}

/** The access token as it goes in the URL, encoded once while it is the same token (the common case). */
let lastToken = '';
let lastEncoded = '';
function encodedToken(token: string): string {
	if (token !== lastToken) {
		lastEncoded = encodeURIComponent(token);
		lastToken = token;
	}
	return lastEncoded;
}

function pushValue(target: Array<[string, string]>, f: Field, v: unknown) {
	if (Array.isArray(v)) {
		if (f.arrayWire === 'csv') target.push([f.name, v.map(String).join(',')]);
		else for (const item of v) target.push([f.name, String(item)]);
	} else if (typeof v === 'object') {
		target.push([f.name, JSON.stringify(v)]);
	} else {
		target.push([f.name, String(v)]);
	}
}
