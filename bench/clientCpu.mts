/**
 * Diagnosis for bench 1 (not in run.mts): the bench process's CPU per call (process.cpuUsage, which other processes'
 * load hardly moves) of the client against raw undici, GET is_under_attack, blocks alternated, min and median of the
 * blocks. `--only client` runs the client alone (for `node --cpu-prof`).
 *
 *   node --import tsx bench/clientCpu.mts [--calls 2000] [--rounds 10] [--only client|raw]
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { getOperation } from '../api/catalog/index.ts';
import { createApiClient } from '../worker/src/service/client.mts';
import { rawCall } from './client.mts';
import { loadText, median, startSimProcess } from './lib.mts';

const { values } = parseArgs({
	options: {
		calls: { type: 'string', default: '2000' },
		rounds: { type: 'string', default: '10' },
		only: { type: 'string' },
	},
});
const APP_ID = 'bench-client';
const SECRET = 'bench-client-secret-1';
const sim = await startSimProcess(APP_ID, SECRET);
const client = createApiClient({
	baseUrl: sim.url,
	credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
	connections: 1,
	retries: 0,
});
const agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 10_000 });
const { timeoutMs } = client.options;
try {
	const ids = await sim.control<{ site_id: string }>('GET', '/ids');
	const tr = await request(`${sim.url}/oauth/credit/token`, {
		method: 'POST',
		dispatcher: agent,
		headers: { 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ app_id: APP_ID, secret: SECRET, grant_type: 'client_credential' }).toString(),
	});
	const token = ((await tr.body.json()) as { result: { access_token: string } }).result.access_token;
	const path = getOperation('dashboard.isUnderAttack').path.replace('{site_id}', ids.site_id);
	const sides: Record<string, () => Promise<unknown>> = {
		client: () => client.call('dashboard.isUnderAttack', { site_id: ids.site_id }),
		raw: () =>
			rawCall(`${sim.url}${path}?access_token=${encodeURIComponent(token)}`, { method: 'GET' }, agent, timeoutMs),
	};
	const names = values.only ? [values.only] : Object.keys(sides);
	const calls = Number(values.calls);
	for (const n of names) for (let i = 0; i < 300; i++) await sides[n]();
	const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
	for (let r = 0; r < Number(values.rounds); r++)
		for (const n of r % 2 ? [...names].reverse() : names) {
			const c0 = process.cpuUsage();
			for (let i = 0; i < calls; i++) await sides[n]();
			const c = process.cpuUsage(c0);
			cpu[n].push((c.user + c.system) / calls);
		}
	for (const n of names)
		process.stdout.write(
			`${n}: CPU per call min ${Math.min(...cpu[n]).toFixed(1)} / median ${median(cpu[n]).toFixed(1)} µs (load ${loadText()})\n`,
		);
} finally {
	await client.close();
	await agent.close();
	await sim.stop();
}
