// A loopback HTTP server that records every request and answers from a programmable handler.
// Used by the client's unit tests for wire-level assertions; behaviour tests use the real simulator.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
	method: string;
	url: URL;
	headers: IncomingMessage['headers'];
	body: Buffer;
	/** multipart / urlencoded fields in order, or the parsed JSON body */
	fields: Array<[string, string]>;
	json?: unknown;
}

export type Handler = (r: Recorded, res: ServerResponse) => void | Promise<void>;

export async function startLoopback(handler: Handler) {
	const requests: Recorded[] = [];
	let current = handler;
	const server = createServer(async (req, res) => {
		const chunks: Buffer[] = [];
		for await (const c of req) chunks.push(c as Buffer);
		const body = Buffer.concat(chunks);
		const rec: Recorded = {
			method: req.method ?? '',
			url: new URL(req.url ?? '/', 'http://x'),
			headers: req.headers,
			body,
			fields: [],
		};
		const ct = String(req.headers['content-type'] ?? '');
		if (ct.startsWith('application/json')) rec.json = JSON.parse(body.toString('utf8'));
		else if (ct.startsWith('application/x-www-form-urlencoded'))
			rec.fields = [...new URLSearchParams(body.toString('utf8'))];
		else if (ct.startsWith('multipart/form-data')) {
			const fd = await new Response(body, { headers: { 'content-type': ct } }).formData();
			for (const [k, v] of fd.entries()) rec.fields.push([k, String(v)]);
		}
		requests.push(rec);
		await current(rec, res);
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		requests,
		setHandler(h: Handler) {
			current = h;
		},
		close: () =>
			new Promise<void>((r) => {
				server.closeAllConnections();
				server.close(() => r());
			}),
	};
}

export function envelope(res: ServerResponse, code: number, msg = 'ok', result?: unknown, status = 200) {
	res.writeHead(status, { 'content-type': 'application/json' });
	res.end(JSON.stringify(result === undefined ? { code, msg } : { code, msg, result }));
}

/** Answers token calls with fresh tokens and API calls with `apiResult(rec)`. Counts token requests. */
export function tokenAwareHandler(
	apiResult: (r: Recorded) => { code: number; msg?: string; result?: unknown },
	opts: { expiresIn?: number } = {},
) {
	let n = 0;
	const state = { tokenRequests: 0, issued: [] as string[] };
	const handler: Handler = (r, res) => {
		if (r.url.pathname.startsWith('/oauth/')) {
			state.tokenRequests++;
			const tok = `tok-${++n}-${'x'.repeat(8)}`;
			state.issued.push(tok);
			const refresh =
				r.url.pathname === '/oauth/refresh_token' ? { refresh_token: `rt-${n}-rotated`, scope: 'install_login' } : {};
			return envelope(res, 0, 'ok', { access_token: tok, expires_in: opts.expiresIn ?? 7200, ...refresh });
		}
		const a = apiResult(r);
		return envelope(res, a.code, a.msg ?? 'ok', a.result);
	};
	return { handler, state };
}
