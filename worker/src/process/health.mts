import { createServer, type Server } from 'node:http';
import { redactText } from '../../../api/redact.ts';

/**
 * The worker's health listener (SECSVC_HEALTH_ADDRESS / health.address; off when unset), separate from the
 * Prometheus exporter (SECSVC_METRICS_ADDRESS, the SDK's own listener):
 *
 *   GET /healthz  200 {"status":"ok"} while the process runs (liveness: restart only when this stops answering)
 *   GET /readyz   200 when every check passes, else 503; the body names each check and why it fails:
 *                 {"ready":false,"checks":{"temporal":{"ok":false,"error":"…"},"polling":{"ok":true},"api":{"ok":true}}}
 *
 * Checks are functions run on each /readyz request (each bounded by `timeoutMs`); their errors are redacted.
 */
export type Check = () => Promise<void> | void;

export interface HealthServer {
	server: Server;
	address: { host: string; port: number };
	close(): Promise<void>;
}

const withTimeout = <T,>(p: Promise<T>, ms: number, what: string) =>
	new Promise<T>((resolve, reject) => {
		const t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
		p.then(
			(v) => (clearTimeout(t), resolve(v)),
			(e) => (clearTimeout(t), reject(e)),
		);
	});

export async function runChecks(checks: Record<string, Check>, timeoutMs = 2000) {
	const entries = await Promise.all(
		Object.entries(checks).map(async ([name, fn]) => {
			try {
				await withTimeout(Promise.resolve().then(fn), timeoutMs, name);
				return [name, { ok: true }] as const;
			} catch (e) {
				return [
					name,
					{ ok: false, error: redactText(e instanceof Error ? e.message : String(e)).slice(0, 300) },
				] as const;
			}
		}),
	);
	const result = Object.fromEntries(entries) as Record<string, { ok: boolean; error?: string }>;
	return { ready: entries.every(([, r]) => r.ok), checks: result };
}

export function startHealthServer(
	addr: { host: string; port: number },
	checks: Record<string, Check>,
	timeoutMs = 2000,
): Promise<HealthServer> {
	const server = createServer((req, res) => {
		const send = (status: number, body: unknown) => {
			res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
			res.end(`${JSON.stringify(body)}\n`);
		};
		const path = (req.url ?? '/').split('?')[0];
		if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, { error: 'GET only' });
		if (path === '/healthz') return send(200, { status: 'ok' });
		if (path === '/readyz')
			return void runChecks(checks, timeoutMs).then(
				(r) => send(r.ready ? 200 : 503, r),
				() => send(503, { ready: false }),
			);
		send(404, { error: 'not found: /healthz, /readyz' });
	});
	server.keepAliveTimeout = 1000;
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(addr.port, addr.host, () => {
			server.off('error', reject);
			server.unref(); // never keeps a drained worker alive
			const a = server.address() as { address: string; port: number };
			resolve({
				server,
				address: { host: a.address, port: a.port },
				close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
			});
		});
	});
}
