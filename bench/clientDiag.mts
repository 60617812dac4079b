// TEMP diagnosis (not committed): per-call user/sys CPU and context switches, client vs raw vs transport alone
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { getOperation } from '../api/catalog/index.ts';
import { createApiClient } from '../worker/src/service/client.mts';
import { createUndiciTransport } from '../worker/src/service/undici.mts';
import { median, startSimProcess } from './lib.mts';

const { values } = parseArgs({
	options: {
		calls: { type: 'string', default: '1000' },
		rounds: { type: 'string', default: '10' },
		only: { type: 'string' },
		wait: { type: 'string' },
		prof: { type: 'string' },
		interval: { type: 'string', default: '100' },
		marks: { type: 'string' },
	},
});
/** Waits for the driver (callgrind_control -d) to dump the counters before a block. */
async function mark(label: string) {
	const fs = await import('node:fs');
	process.stdout.write(`mark ${label}\n`);
	const go = `${values.marks}/go`;
	while (!fs.existsSync(go)) await new Promise((r) => setTimeout(r, 20));
	fs.unlinkSync(go);
}
const sim = await startSimProcess('bench-client', 'bench-client-secret-1');
const client = createApiClient({
	baseUrl: sim.url,
	credentials: { appId: 'bench-client', secret: 'bench-client-secret-1', tokenKind: 'app' },
	connections: 1,
	retries: 0,
});
const agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 10_000 });
const transport = createUndiciTransport({ connections: 1 });
try {
	const ids = await sim.control<{ site_id: string }>('GET', '/ids');
	const tr = await request(`${sim.url}/oauth/credit/token`, {
		method: 'POST',
		dispatcher: agent,
		headers: { 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ app_id: 'bench-client', secret: 'bench-client-secret-1', grant_type: 'client_credential' }).toString(),
	});
	const token = ((await tr.body.json()) as { result: { access_token: string } }).result.access_token;
	const path = getOperation('dashboard.isUnderAttack').path.replace('{site_id}', ids.site_id);
	const url = `${sim.url}${path}?access_token=${encodeURIComponent(token)}`;
	const sides: Record<string, () => Promise<unknown>> = {
		client: () => client.call('dashboard.isUnderAttack', { site_id: ids.site_id }),
		raw: async () => {
			const r = await request(`${sim.url}${path}?access_token=${encodeURIComponent(token)}`, {
				method: 'GET',
				headers: { accept: 'application/json' },
				dispatcher: agent,
				signal: AbortSignal.timeout(10_000),
			});
			const j = JSON.parse(await r.body.text()) as { code: number; result: unknown };
			if (r.statusCode !== 200 || j.code !== 0) throw new Error(`raw: ${JSON.stringify(j)}`);
			return j.result;
		},
		transport: async () => {
			const r = await transport({ method: 'GET', url, headers: { accept: 'application/json' }, timeoutMs: 10_000 });
			const j = JSON.parse(r.body) as { code: number; result: unknown };
			if (r.status !== 200 || j.code !== 0) throw new Error('t');
			return j.result;
		},
	};
	const names = values.only ? values.only.split(',') : Object.keys(sides);
	const calls = Number(values.calls);
	for (const n of names) for (let i = 0; i < 300; i++) await sides[n]();
	if (values.wait) { process.stdout.write(`ready ${process.pid}\n`); await new Promise((r) => setTimeout(r, Number(values.wait))); }
	let session: import('node:inspector').Session | undefined;
	const post = (m: string, p?: object) => new Promise<any>((res, rej) => session!.post(m, p ?? {}, (e, r) => (e ? rej(e) : res(r))));
	if (values.prof) {
		const { Session } = await import('node:inspector');
		session = new Session();
		session.connect();
		await post('Profiler.enable');
		await post('Profiler.setSamplingInterval', { interval: Number(values.interval) });
		if (values.prof.endsWith('.heap')) {
			await post('HeapProfiler.enable');
			await post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
		} else await post('Profiler.start');
	}
	const fs = await import('node:fs');
	const { PerformanceObserver } = await import('node:perf_hooks');
	let gcMs = 0, gcN = 0, gcMajor = 0;
	new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcMs += e.duration; gcN++; if ((e as any).detail?.kind !== 1) gcMajor++; } }).observe({ entryTypes: ['gc'] });
	// per-thread CPU (ns) from /proc/self/task/*/schedstat: the main thread (tid = pid) and the others (GC, compiler)
	const threads = () => {
		let main = 0, other = 0;
		for (const t of fs.readdirSync('/proc/self/task')) {
			const ns = Number(fs.readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]);
			if (Number(t) === process.pid) main += ns; else other += ns;
		}
		return { main, other };
	};
	const m: Record<string, { u: number[]; s: number[]; v: number[]; w: number[]; tm: number[]; to: number[]; gc: number; gcn: number; gcj: number; calls: number }> = Object.fromEntries(names.map((n) => [n, { u: [], s: [], v: [], w: [], tm: [], to: [], gc: 0, gcn: 0, gcj: 0, calls: 0 }]));
	for (let r = 0; r < Number(values.rounds); r++)
		for (const n of r % 2 ? [...names].reverse() : names) {
			await new Promise((r) => setImmediate(r));
			if (values.marks) await mark(`${n}-${r}`);
			const g0 = gcMs, gn0 = gcN, gj0 = gcMajor;
			const th0 = threads();
			const r0 = process.resourceUsage();
			const t0 = performance.now();
			for (let i = 0; i < calls; i++) await sides[n]();
			const t1 = performance.now();
			const r1 = process.resourceUsage();
			const th1 = threads();
			await new Promise((r) => setImmediate(r));
			m[n].gc += gcMs - g0; m[n].gcn += gcN - gn0; m[n].gcj += gcMajor - gj0; m[n].calls += calls;
			m[n].tm.push((th1.main - th0.main) / 1000 / calls);
			m[n].to.push((th1.other - th0.other) / 1000 / calls);
			m[n].u.push((r1.userCPUTime - r0.userCPUTime) / calls);
			m[n].s.push((r1.systemCPUTime - r0.systemCPUTime) / calls);
			m[n].v.push((r1.voluntaryContextSwitches - r0.voluntaryContextSwitches) / calls);
			m[n].w.push(((t1 - t0) * 1000) / calls);
		}
	if (values.marks) await mark('end');
	if (session) {
		const { profile } = values.prof!.endsWith('.heap') ? await post('HeapProfiler.stopSampling') : await post('Profiler.stop');
		(await import('node:fs')).writeFileSync(values.prof!, JSON.stringify(profile));
	}
	for (const n of names) {
		const x = m[n];
		process.stdout.write(
			`${n.padEnd(10)} user ${median(x.u).toFixed(1)} (min ${Math.min(...x.u).toFixed(1)})  sys ${median(x.s).toFixed(1)} (min ${Math.min(...x.s).toFixed(1)})  cpu ${median(x.u.map((u, i) => u + x.s[i])).toFixed(1)}  main ${median(x.tm).toFixed(1)} (min ${Math.min(...x.tm).toFixed(1)}) other threads ${median(x.to).toFixed(1)}  gc ${((x.gc * 1000) / x.calls).toFixed(1)} µs/call (${((x.gcn * 1000) / x.calls).toFixed(2)} per 1000 calls, ${x.gcj} not scavenges)  vcsw/call ${median(x.v).toFixed(2)}  wall ${median(x.w).toFixed(1)} µs\n`,
		);
	}
	process.stdout.write(`load ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
} finally {
	await client.close();
	await agent.close();
	await transport.close();
	await sim.stop();
}
