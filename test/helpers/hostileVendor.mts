// A hostile or broken vendor stand-in: a real HTTP server on 127.0.0.1:0 whose token endpoint
// and API answers misbehave on purpose. Used by the client's, the worker's and the n8n tests.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createClient, type ClientEvent, type ClientOptions } from '../../api/client.ts';
import type { Transport } from '../../api/transport/types.ts';
import { announceStarted } from '../../demo/stack.mts';

export type ApiMode =
	| 'ok' // {code 0, result {status 0, bps_size 0}}
	| 'endless' // 200, then 64 KB chunks for ever
	| 'drip' // 200 and a content-length, then one byte a second
	| 'hang' // accepts the request, never answers
	| 'reset' // closes the connection without an answer
	| 'huge' // a 200 MB body sent as fast as the socket takes it
	| 'tokenRefusal'; // after drop(): `refusal` for every token issued before it
export type TokenMode = 'ok' | 'hang' | '502';

export interface HostileOptions {
	api?: ApiMode;
	token?: TokenMode;
	/** What a dropped token gets (default 40001 "invalid access_token"). */
	refusal?: { code: number; msg: string };
	/** Answer for a valid token per path (default: is_under_attack's {status 0, bps_size 0}). */
	result?: (path: string) => { code: number; msg?: string; result?: unknown };
}

export async function startHostileVendor(o: HostileOptions = {}) {
	const state = {
		tokenRequests: 0,
		apiRequests: 0,
		/** API requests per path: a request sent again shows as a count above 1. */
		paths: {} as Record<string, number>,
		bytesSent: 0,
		dropped: new Set<string>(),
		issued: [] as string[],
	};
	const sockets = new Set<import('node:net').Socket>();
	const json = (res: ServerResponse, v: unknown) => {
		res.writeHead(200, { 'content-type': 'application/json' });
		res.end(JSON.stringify(v));
	};
	const server = createServer((req, res) => {
		req.resume();
		const url = new URL(req.url ?? '/', 'http://x');
		if (url.pathname.startsWith('/oauth/')) {
			state.tokenRequests++;
			if (o.token === 'hang') return; // never answers
			if (o.token === '502') {
				res.writeHead(502, { 'content-type': 'text/html' });
				return res.end('<html>bad gateway</html>');
			}
			const tok = `vendor-tok-${state.tokenRequests}-${'z'.repeat(12)}`;
			state.issued.push(tok);
			return json(res, { code: 0, msg: 'ok', result: { access_token: tok, expires_in: 7200 } });
		}
		state.apiRequests++;
		state.paths[url.pathname] = (state.paths[url.pathname] ?? 0) + 1;
		const mode = o.api ?? 'ok';
		if (mode === 'hang') return; // never answers
		if (mode === 'reset') return void req.socket.destroy();
		if (mode === 'endless' || mode === 'huge') {
			const total = mode === 'huge' ? 200 * 1024 * 1024 : Infinity;
			res.writeHead(
				200,
				mode === 'huge'
					? { 'content-type': 'application/json', 'content-length': String(total) }
					: { 'content-type': 'application/json' },
			);
			const chunk = Buffer.alloc(64 * 1024, 0x20);
			const pump = () => {
				while (!res.destroyed && state.bytesSent < total) {
					state.bytesSent += chunk.length;
					if (!res.write(chunk)) return void res.once('drain', pump);
				}
				if (!res.destroyed) res.end();
			};
			return pump();
		}
		if (mode === 'drip') {
			res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
			const t = setInterval(() => {
				if (res.destroyed) return clearInterval(t);
				state.bytesSent++;
				res.write(' ');
			}, 1000);
			res.on('close', () => clearInterval(t));
			return;
		}
		const token = url.searchParams.get('access_token') ?? '';
		if (mode === 'tokenRefusal' && (state.dropped.has(token) || !state.issued.includes(token)))
			return json(res, o.refusal ?? { code: 40001, msg: 'invalid access_token' });
		return json(res, o.result?.(url.pathname) ?? { code: 0, msg: 'ok', result: { status: 0, bps_size: 0 } });
	});
	server.on('connection', (s) => {
		sockets.add(s);
		s.on('close', () => sockets.delete(s));
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const { port } = server.address() as AddressInfo;
	announceStarted({
		what: `hostile vendor (api ${o.api ?? 'ok'}, token ${o.token ?? 'ok'})`,
		addresses: { url: `http://127.0.0.1:${port}` },
		log: () => JSON.stringify({ ...state, dropped: state.dropped.size, issued: state.issued.length }),
	});
	return {
		url: `http://127.0.0.1:${port}`,
		state,
		/** The service forgets every token issued so far (revoked or expired early). */
		drop() {
			for (const t of state.issued) state.dropped.add(t);
		},
		close: () =>
			new Promise<void>((r) => {
				for (const s of sockets) s.destroy();
				server.close(() => r());
			}),
	};
}

/**
 * A vendor stand-in and a client of it (undici `transport`, fast backoff, events recorded); the vendor closes after
 * the current test file. For the client's tests (test/unit/tokenRefusal, hostile).
 */
export async function vendorClient(vendor: HostileOptions, transport: Transport, extra: Partial<ClientOptions> = {}) {
	const v = await startHostileVendor(vendor);
	after(() => v.close());
	const events: ClientEvent[] = [];
	const client = createClient({
		baseUrl: v.url,
		transport,
		credentials: { appId: 'app', secret: 'vendor-secret-1', tokenKind: 'app' },
		backoff: { baseMs: 1, maxMs: 2 },
		sleep: (ms) => delay(ms),
		onEvent: (e) => events.push(e),
		...extra,
	});
	/** Why each token request was made (the client's `token` events). */
	const renewals = () => events.flatMap((e) => (e.type === 'token' ? [e.reason] : []));
	return { v, client, renewals };
}
