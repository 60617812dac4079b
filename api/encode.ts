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
	const query: Array<[string, string]> = [];
	const parts: Array<[string, string]> = [];
	const json: Record<string, unknown> | undefined = op.encoding === 'json' ? {} : undefined;

	for (const f of op.fields) {
		const v = params[f.name];
		if (v === undefined || v === null || f.local) continue;
		if (f.in === 'path') {
			path = path.replace(`{${f.name}}`, pathSegment(String(v)));
			continue;
		}
		const target = f.in === 'query' || op.encoding === 'query' || op.encoding === 'redirect' ? query : parts;
		if (json && f.in === 'body') json[f.name] = v;
		else pushValue(target, f, v);
	}
	if (op.auth === 'access_token') {
		if (!opts.accessToken) throw new Error(`${op.id}: no access token`);
		query.push(['access_token', opts.accessToken]);
	}
	let url = opts.baseUrl.endsWith('/') ? opts.baseUrl.replace(/\/+$/, '') + path : opts.baseUrl + path;
	for (let i = 0; i < query.length; i++)
		url += `${i ? '&' : '?'}${encodeURIComponent(query[i][0])}=${encodeURIComponent(query[i][1])}`;

	let body: HttpBody | undefined;
	if (json) body = { kind: 'json', value: json };
	else if (op.encoding === 'multipart') body = { kind: 'multipart', parts };
	else if (op.encoding === 'form') body = { kind: 'form', parts };

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
