import type { CatalogEntry, Field } from './catalog/types';
import { pathSegment } from './limits';
import type { HttpBody, HttpRequest } from './transport/types';

/** Turns validated parameters into the wire request the spec describes for the operation. */
export function encodeRequest(
	op: CatalogEntry,
	params: Record<string, unknown>,
	opts: { baseUrl: string; accessToken?: string; timeoutMs: number; maxResponseBytes?: number },
): HttpRequest {
	let path = op.path;
	// built only when a field goes there (a GET by path and token builds neither list)
	let query: Array<[string, string]> | undefined;
	let parts: Array<[string, string]> | undefined;
	const json: Record<string, unknown> | undefined = op.encoding === 'json' ? {} : undefined;
	const urlOnly = op.encoding === 'query' || op.encoding === 'redirect';

	for (const f of op.fields) {
		const v = params[f.name];
		if (v === undefined || v === null || f.local) continue;
		if (f.in === 'path') path = path.replace(`{${f.name}}`, pathSegment(String(v)));
		else if (f.in === 'query' || urlOnly) pushValue((query ??= []), f, v);
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
		url += `${sep}access_token=${encodeURIComponent(opts.accessToken)}`;
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
