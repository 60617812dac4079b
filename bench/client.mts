/**
 * Bench 1: per-call cost of the client (validate → encode → undici → envelope → result schema, token cached)
 * vs raw undici doing the same HTTP request (same URL built from the catalog path, same body bytes, same deadline
 * timer and timeout, JSON parse and envelope code check: `rawCall`), both sequential on one keep-alive connection
 * against the simulator in its own process.
 * Blocks of `calls` alternate client / raw (`rounds` each, the order swapped every round) so machine noise hits both;
 * the ratio is the median over rounds of client block / raw block of the same round (a load that drifts between
 * rounds moves both halves of a pair alike), the times shown the median blocks. Besides the wall time per call, the
 * bench process's own CPU time per call (process.cpuUsage: client + undici vs undici alone), which other processes'
 * load hardly moves: on a shared machine it is the steadier figure.
 * The client is the one the worker ships: compiled by the worker's own build (esbuild, one ESM file), not the sources
 * through tsx, whose CommonJS modules reach every import through a getter (docs/bench/client.md, session 23).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { getOperation } from '../api/catalog/index.ts';
import { buildWorker } from '../worker/src/process/build.mts';
import { ROOT, loadText, median, round, startSimProcess, type Row } from './lib.mts';

type ClientModule = typeof import('../worker/src/service/client.mts');

/** Goal: the client's time per call at most this many times raw undici's (issue 42). */
export const CLIENT_GOAL = 1.05;

const APP_ID = 'bench-client';
const SECRET = 'bench-client-secret-1';

/**
 * Raw undici as our transport does it, minus the client: the same deadline mechanism (one timer per request, cleared
 * when the body is read; AbortSignal.timeout costs more, and the baseline must not pay for a choice the client does
 * not make), the same timeout, body read as text, JSON parse, status and envelope code checked.
 */
export async function rawCall(
	url: string,
	o: { method: string; body?: string; contentType?: string },
	agent: Agent,
	timeoutMs: number,
) {
	const ac = new AbortController();
	const timer = setTimeout(() => ac.abort(new DOMException('timeout', 'TimeoutError')), timeoutMs);
	try {
		const r = await request(url, {
			method: o.method,
			headers: o.contentType
				? { accept: 'application/json', 'content-type': o.contentType }
				: { accept: 'application/json' },
			body: o.body,
			dispatcher: agent,
			signal: ac.signal,
		});
		const j = JSON.parse(await r.body.text()) as { code: number; result: unknown };
		if (r.statusCode !== 200 || j.code !== 0) throw new Error(`raw: ${JSON.stringify(j)}`);
		return j.result;
	} finally {
		clearTimeout(timer);
	}
}

/**
 * The multipart body as the client's transports send it (api/transport/multipart.ts: text, not undici's FormData,
 * whose stream per body costs ~25 KB of allocation), written out by hand: the baseline sends the same bytes.
 */
function rawMultipart(parts: [string, string][]): { body: string; contentType: string } {
	const b = `----raw${Date.now().toString(36)}`;
	let body = '';
	for (const [k, v] of parts) body += `--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
	return { body: `${body}--${b}--\r\n`, contentType: `multipart/form-data; boundary=${b}` };
}

function pathFor(opId: string, params: Record<string, string>): string {
	return getOperation(opId).path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k]));
}

interface Case {
	name: string;
	client: () => Promise<unknown>;
	raw: () => Promise<unknown>;
}

interface Measured {
	name: string;
	block: number;
	clientUs: number;
	rawUs: number;
	ratio: number;
	clientCpuUs: number;
	rawCpuUs: number;
	cpuRatio: number;
	load: string;
}

/** Blocks of `block` calls, client and raw alternated for `rounds` rounds: medians and paired ratios. */
async function measure(c: Case, block: number, rounds: number): Promise<Measured> {
	const wall = { client: [] as number[], raw: [] as number[] };
	const cpu = { client: [] as number[], raw: [] as number[] };
	for (let r = 0; r < rounds; r++)
		for (const side of r % 2 ? (['raw', 'client'] as const) : (['client', 'raw'] as const)) {
			const fn = c[side];
			const c0 = process.cpuUsage();
			const t0 = performance.now();
			for (let i = 0; i < block; i++) await fn();
			wall[side].push(((performance.now() - t0) * 1000) / block);
			const used = process.cpuUsage(c0);
			cpu[side].push((used.user + used.system) / block);
		}
	const paired = (x: { client: number[]; raw: number[] }) => median(x.client.map((v, i) => v / x.raw[i]));
	return {
		name: c.name,
		block,
		clientUs: round(median(wall.client), 1),
		rawUs: round(median(wall.raw), 1),
		ratio: round(paired(wall), 3),
		clientCpuUs: round(median(cpu.client), 1),
		rawCpuUs: round(median(cpu.raw), 1),
		cpuRatio: round(paired(cpu), 3),
		load: loadText(),
	};
}

/** worker/src/service/client.mts compiled as the worker is (worker/src/process/build.mts), loaded, the file removed. */
async function compiledClient(): Promise<ClientModule> {
	const out = join(ROOT, '.tmp', `bench-client-${process.pid}.mjs`);
	buildWorker(out, join(ROOT, 'worker/src/service/client.mts'));
	try {
		return (await import(pathToFileURL(out).href)) as ClientModule;
	} finally {
		rmSync(out, { force: true });
	}
}

export async function benchClient(o: { callsPerSide?: number; blockSteady?: number; blockInterleaved?: number } = {}) {
	const callsPerSide = o.callsPerSide ?? 6000;
	const blockSteady = o.blockSteady ?? 500;
	const blockInterleaved = o.blockInterleaved ?? 50;
	const { createApiClient } = await compiledClient();
	const sim = await startSimProcess(APP_ID, SECRET);
	const client = createApiClient({
		baseUrl: sim.url,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		connections: 1,
		retries: 0,
	});
	// the same pool settings as the client's transport (worker/src/service/undici.mts) and the client's timeout
	const agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 10_000 });
	const { timeoutMs } = client.options;
	try {
		const ids = await sim.control<{ site_id: string; domain_port_id: string }>('GET', '/ids');
		await sim.control('POST', '/attacks', { site_id: ids.site_id, sources: [{ cidr: '198.18.0.0/24' }] });
		const tr = await request(`${sim.url}/oauth/credit/token`, {
			method: 'POST',
			dispatcher: agent,
			headers: { 'content-type': 'application/x-www-form-urlencoded' },
			body: new URLSearchParams({ app_id: APP_ID, secret: SECRET, grant_type: 'client_credential' }).toString(),
		});
		const token = ((await tr.body.json()) as { result: { access_token: string } }).result.access_token;
		const urlOf = (opId: string) => `${sim.url}${pathFor(opId, ids)}?access_token=${encodeURIComponent(token)}`;
		const getParams = { site_id: ids.site_id };
		const postParams = { site_id: ids.site_id, domain_port_id: ids.domain_port_id, duration: 600, threshold_tps: 1000 };
		const cases: Case[] = [
			{
				name: 'GET is_under_attack',
				client: () => client.call('dashboard.isUnderAttack', getParams),
				raw: () => rawCall(urlOf('dashboard.isUnderAttack'), { method: 'GET' }, agent, timeoutMs),
			},
			{
				name: 'POST authentication/base (multipart)',
				client: () => client.call('applicationProtection.authBase.set', postParams),
				raw: () => {
					const m = rawMultipart([
						['duration', '600'],
						['threshold_tps', '1000'],
					]);
					const url = urlOf('applicationProtection.authBase.set');
					return rawCall(url, { method: 'POST', body: m.body, contentType: m.contentType }, agent, timeoutMs);
				},
			},
		];

		const out: Measured[] = [];
		for (const c of cases) {
			for (let i = 0; i < 300; i++) {
				await c.client();
				await c.raw();
			}
			// Two block sizes: steady state (500 consecutive calls, which includes what allocation costs in GC) and
			// interleaved (50), more sensitive to switching between the two.
			for (const block of [blockSteady, blockInterleaved])
				out.push(await measure(c, block, Math.max(2, Math.round(callsPerSide / block))));
		}
		const tokenCalls = (await sim.control<unknown[]>('GET', '/requests?op=authorization.appToken')).length;
		const steady = out.filter((x) => x.block === blockSteady);
		const worst = Math.max(...steady.map((x) => x.ratio));
		const rows: Row[] = out.map((x) => ({
			bench: '1',
			measure: `client (compiled, as the worker ships it) vs raw undici, ${x.name}, per call (${x.block === blockSteady ? 'steady' : 'interleaved'}, blocks of ${x.block}; median of paired rounds); bench process CPU per call ${x.clientCpuUs} vs ${x.rawCpuUs} µs = ${x.cpuRatio.toFixed(2)}×; load ${x.load}`,
			ours: `${x.clientUs} µs`,
			baseline: `${x.rawUs} µs`,
			ratio: `${x.ratio.toFixed(2)}×`,
			goal: `≤ ${CLIENT_GOAL.toFixed(2)}×`,
			met: x.block === blockSteady ? x.ratio <= CLIENT_GOAL : null,
		}));
		return {
			result: {
				callsPerSide,
				blockSteady,
				blockInterleaved,
				cases: out,
				worstSteadyRatio: worst,
				tokenRequestsByClientAndRaw: tokenCalls,
				goal: CLIENT_GOAL,
				met: worst <= CLIENT_GOAL,
			},
			rows,
		};
	} finally {
		await client.close();
		await agent.close();
		await sim.stop();
	}
}
