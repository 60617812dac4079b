/**
 * A guard in front of a local Temporal dev server's HTTP API (the demo, the sandbox). The server has no origin or
 * CORS setting, and a web page in the operator's browser can POST a "simple" text/plain request to any loopback
 * port — e.g. `…/update/decide`. The guard refuses what api/browserWrites.ts calls a web page's write (403 foreign
 * Origin or cross-site, 415 a body that is not JSON) and forwards the rest with `Host: GUARDED_HOST`. The dev server
 * is started with `frontend.httpAllowedHosts=[GUARDED_HOST]`, a name no browser can send (Host is a forbidden
 * header and the name resolves nowhere), so a page that finds the server's own port is refused there too.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { browserWriteProblem } from '../../../api/browserWrites.ts';

export const GUARDED_HOST = 'temporal-http.guarded.internal';
/** The dev server's dynamic config that makes it answer only requests the guard forwarded. */
export const GUARDED_DEV_SERVER_ARGS = [
	'--dynamic-config-value',
	`frontend.httpAllowedHosts=${JSON.stringify([GUARDED_HOST])}`,
];
const MAX_BODY = 8 * 1024 * 1024;
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'host']);

export interface HttpGuard {
	url: string;
	close(): Promise<void>;
}

/** Listens on 127.0.0.1:`port` (0 = any) and forwards to `target` (http://127.0.0.1:N, the dev server's HTTP API). */
export async function startHttpGuard(target: string, port = 0): Promise<HttpGuard> {
	const to = new URL(target);
	const server = createServer((req, res) => void guard(req, res));
	async function guard(req: IncomingMessage, res: ServerResponse) {
		const reply = (status: number, message: string) => {
			res.writeHead(status, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ code: 7, message }));
		};
		const chunks: Buffer[] = [];
		let size = 0;
		for await (const c of req as AsyncIterable<Buffer>) {
			size += c.length;
			if (size > MAX_BODY) return reply(413, `body larger than ${MAX_BODY} bytes`);
			chunks.push(c);
		}
		const body = Buffer.concat(chunks);
		const refused = browserWriteProblem(req.headers, body.length, 'this local Temporal HTTP API');
		if (refused) return reply(refused.status, refused.error);
		const headers: Record<string, string | string[]> = { host: GUARDED_HOST, 'content-length': String(body.length) };
		for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
		const up = request(
			{ host: to.hostname, port: to.port, method: req.method, path: req.url, headers },
			(r: IncomingMessage) => {
				res.writeHead(r.statusCode ?? 502, r.headers);
				r.pipe(res);
			},
		);
		up.on('error', (e) => (res.headersSent ? res.destroy() : reply(502, `Temporal HTTP API: ${e.message}`)));
		up.end(body);
	}
	await new Promise<void>((r, j) => server.once('error', j).listen(port, '127.0.0.1', r));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
	};
}
