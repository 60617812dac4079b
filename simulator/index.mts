/**
 * The Security Service Open API simulator: a real HTTP server (node:http) holding the whole service
 * state in memory. `startSimulator()` starts it; `sim` gives in-process access to the same control
 * operations as the HTTP control API under /__sim/ (see simulator/README.md).
 */
import { channel } from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CODES } from './codes.mts';
import { BodyTooLarge, onClientError, sendJson } from './http.mts';
import type { SimOptions } from './options.mts';
import { Simulator } from './simulator.mts';

export { CODES } from './codes.mts';
export type { AttackScenarioItem, FaultKind, FaultSpec, LogEntry, Scenario, SimOptions, TokenRec } from './options.mts';
export type { RateLimitSpec } from './rateLimit.mts';
export { Simulator } from './simulator.mts';

export interface RunningSimulator {
	url: string;
	port: number;
	sim: Simulator;
	close(): Promise<void>;
}

export async function startSimulator(opts: SimOptions): Promise<RunningSimulator> {
	const sim = new Simulator(opts);
	// No Host header required (Node's default answers a bare 400 without the envelope); clientError below.
	const server = http.createServer({ requireHostHeader: false }, (req, res) => {
		sim.handle(req, res).catch((e) => {
			if (res.headersSent) res.destroy();
			else if (e instanceof BodyTooLarge)
				sendJson(res, 413, { code: CODES.VALIDATION, msg: e.message }, { connection: 'close' });
			else
				sendJson(res, 500, {
					code: CODES.INTERNAL,
					msg: `internal error: ${String((e as Error).message).slice(0, 300)}`,
				});
		});
	});
	server.on('clientError', onClientError);
	server.keepAliveTimeout = 10_000;
	const host = opts.host ?? '127.0.0.1';
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(opts.port ?? 0, host, () => resolve());
	});
	const port = (server.address() as AddressInfo).port;
	const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
	// Announced for a failing test's report (test/helpers/started.mts; demo/stack.mts announceStarted): the address,
	// the seed of the world and the request log's last entries. Nothing happens when nobody listens.
	channel('secsvc:started').publish({
		what: 'simulator',
		addresses: { url },
		seed: opts.scenario?.seed ?? opts.seed ?? 1,
		log: () =>
			sim
				.requests()
				.slice(-25)
				.map(
					(r) =>
						`#${r.seq} ${new Date(r.time).toISOString().slice(11, 23)} ${r.method} ${r.path} → ${r.status} code ${r.code}${r.fault ? ` fault ${r.fault}` : ''}`,
				)
				.join('\n'),
	});
	return {
		url,
		port,
		sim,
		close: () =>
			new Promise<void>((resolve) => {
				sim.rateLimiter?.close();
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	};
}
