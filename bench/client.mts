/**
 * Bench 1: per-call cost of the client (validate → encode → undici → envelope → result schema, token cached)
 * vs raw undici doing the same HTTP request (same URL built from the catalog path, same body, same deadline timer
 * and timeout, JSON parse and envelope code check: `rawCall`), both sequential on one keep-alive connection against
 * the simulator in its own process.
 * Blocks of `calls` alternate client / raw (`rounds` each) so machine noise hits both; the median block counts.
 * Besides the wall time per call, the bench process's own CPU time per call (process.cpuUsage: client + undici vs
 * undici alone), which other processes' load hardly moves: on a shared machine it is the steadier figure.
 */
import { Agent, FormData, request } from 'undici';
import { getOperation } from '../api/catalog/index.ts';
import { createApiClient } from '../worker/src/service/client.mts';
import { loadText, median, round, startSimProcess, type Row } from './lib.mts';

/** Goal: the client's time per call at most this many times raw undici's (issue 42). */
export const CLIENT_GOAL = 1.05;

const APP_ID = 'bench-client';
const SECRET = 'bench-client-secret-1';

/**
 * Raw undici as our transport does it, minus the client: the same deadline mechanism (one timer per request, cleared
 * when the body is read; AbortSignal.timeout costs more, and the baseline must not pay for a choice the client does
 * not make), the same timeout, body read as text, JSON parse, status and envelope code checked.
 */
export async function rawCall(url: string, o: { method: string; body?: FormData }, agent: Agent, timeoutMs: number) {
	const ac = new AbortController();
	const timer = setTimeout(() => ac.abort(new DOMException('timeout', 'TimeoutError')), timeoutMs);
	try {
		const r = await request(url, {
			method: o.method,
			headers: { accept: 'application/json' },
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

function pathFor(opId: string, params: Record<string, string>): string {
	return getOperation(opId).path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k]));
}

export async function benchClient(o: { callsPerSide?: number; blockSteady?: number; blockInterleaved?: number } = {}) {
	const callsPerSide = o.callsPerSide ?? 4000;
	const blockSteady = o.blockSteady ?? 500;
	const blockInterleaved = o.blockInterleaved ?? 50;
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

		const cases = [
			{
				name: 'GET is_under_attack',
				opId: 'dashboard.isUnderAttack',
				params: { site_id: ids.site_id },
				raw: () =>
					rawCall(
						`${sim.url}${pathFor('dashboard.isUnderAttack', ids)}?access_token=${encodeURIComponent(token)}`,
						{ method: 'GET' },
						agent,
						timeoutMs,
					),
			},
			{
				name: 'POST authentication/base (multipart)',
				opId: 'applicationProtection.authBase.set',
				params: { site_id: ids.site_id, domain_port_id: ids.domain_port_id, duration: 600, threshold_tps: 1000 },
				raw: async () => {
					const fd = new FormData();
					fd.append('duration', '600');
					fd.append('threshold_tps', '1000');
					return rawCall(
						`${sim.url}${pathFor('applicationProtection.authBase.set', ids)}?access_token=${encodeURIComponent(token)}`,
						{ method: 'POST', body: fd },
						agent,
						timeoutMs,
					);
				},
			},
		];

		const out: {
			name: string;
			block: number;
			clientUs: number;
			rawUs: number;
			ratio: number;
			clientCpuUs: number;
			rawCpuUs: number;
			cpuRatio: number;
			load: string;
		}[] = [];
		for (const c of cases) {
			const viaClient = () => client.call(c.opId, c.params);
			for (let i = 0; i < 300; i++) {
				await viaClient();
				await c.raw();
			}
			// Alternating blocks so drift and other processes' load hit both sides alike. Two block sizes: steady
			// state (500 consecutive calls) and interleaved (50), which is more sensitive to switching connections.
			for (const block of [blockSteady, blockInterleaved]) {
				const rounds = Math.max(2, Math.round(callsPerSide / block));
				const tc: number[] = [];
				const trw: number[] = [];
				const cc: number[] = [];
				const crw: number[] = [];
				for (let r = 0; r < rounds; r++) {
					for (const [fn, into, cpuInto] of (r % 2
						? [
								[c.raw, trw, crw],
								[viaClient, tc, cc],
							]
						: [
								[viaClient, tc, cc],
								[c.raw, trw, crw],
							]) as [() => Promise<unknown>, number[], number[]][]) {
						const c0 = process.cpuUsage();
						const t0 = performance.now();
						for (let i = 0; i < block; i++) await fn();
						into.push(((performance.now() - t0) * 1000) / block);
						const cpu = process.cpuUsage(c0);
						cpuInto.push((cpu.user + cpu.system) / block);
					}
				}
				const clientUs = median(tc);
				const rawUs = median(trw);
				out.push({
					name: c.name,
					block,
					clientUs: round(clientUs, 1),
					rawUs: round(rawUs, 1),
					ratio: round(clientUs / rawUs, 3),
					clientCpuUs: round(median(cc), 1),
					rawCpuUs: round(median(crw), 1),
					cpuRatio: round(median(cc) / median(crw), 3),
					load: loadText(),
				});
			}
		}
		const tokenCalls = (await sim.control<unknown[]>('GET', '/requests?op=authorization.appToken')).length;
		const steady = out.filter((x) => x.block === blockSteady);
		const worst = Math.max(...steady.map((x) => x.ratio));
		const rows: Row[] = out.map((x) => ({
			bench: '1',
			measure: `client vs raw undici, ${x.name}, per call (${x.block === blockSteady ? 'steady' : 'interleaved'}, blocks of ${x.block}); bench process CPU per call ${x.clientCpuUs} vs ${x.rawCpuUs} µs = ${x.cpuRatio.toFixed(2)}×; load ${x.load}`,
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
