/**
 * Simulator throughput: GET is_under_attack with a valid token, through undici with keep-alive and N
 * concurrent connections, for a bounded time. The simulator runs in its own child process (one Node
 * thread = one core); the load generator runs here. Prints a summary and writes bench/out/simulator.json.
 *
 *   node --import tsx bench/simulator.mts [--seconds 5] [--connections 16] [--attack]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({
	options: {
		seconds: { type: 'string', default: '5' },
		connections: { type: 'string', default: '16' },
		attack: { type: 'boolean', default: true },
	},
});
const seconds = Math.min(30, Math.max(1, Number(values.seconds)));
const connections = Math.min(256, Math.max(1, Number(values.connections)));
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const child = spawn(
	process.execPath,
	['--import', 'tsx', 'simulator/main.mts', '--port', '0', '--app-id', 'bench-app', '--secret', 'bench-secret'],
	{
		cwd: root,
		stdio: ['ignore', 'pipe', 'inherit'],
	},
);
const url: string = await new Promise((resolve, reject) => {
	let buf = '';
	child.stdout.on('data', (d: Buffer) => {
		buf += d.toString();
		const line = buf.split('\n')[0];
		if (buf.includes('\n')) resolve(line.trim());
	});
	child.once('exit', (c) => reject(new Error(`simulator exited with ${c}`)));
	setTimeout(() => reject(new Error('simulator did not start within 20 s')), 20_000);
});

function cpuTicks(pid: number): number {
	// utime + stime of the simulator process, in clock ticks (100/s on Linux)
	const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
	const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
	return Number(rest[11]) + Number(rest[12]);
}

try {
	const pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
	const tokRes = await pool.request({
		path: '/oauth/credit/token',
		method: 'POST',
		headers: { 'content-type': 'application/x-www-form-urlencoded' },
		body: 'app_id=bench-app&secret=bench-secret&grant_type=client_credential',
	});
	const tok = ((await tokRes.body.json()) as { result: { access_token: string } }).result.access_token;
	const ids = (await (await pool.request({ path: '/__sim/ids', method: 'GET' })).body.json()) as { site_id: string };
	if (values.attack) {
		const r = await pool.request({
			path: '/__sim/attacks',
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ site_id: ids.site_id, sources: [{ cidr: '198.18.0.0/24' }, { country: 'CN' }] }),
		});
		await r.body.text();
	}
	const path = `/api/specp/op/dashboard/site/${ids.site_id}/is_under_attack?access_token=${tok}`;
	const once = async () => {
		const r = await pool.request({ path, method: 'GET' });
		const j = (await r.body.json()) as { code: number };
		if (r.statusCode !== 200 || j.code !== 0) throw new Error(`unexpected answer ${r.statusCode} ${JSON.stringify(j)}`);
	};
	// warm-up
	const warmEnd = Date.now() + 1000;
	await Promise.all(
		Array.from({ length: connections }, async () => {
			while (Date.now() < warmEnd) await once();
		}),
	);

	const lat: number[] = [];
	let n = 0;
	const cpu0 = cpuTicks(child.pid as number);
	const t0 = performance.now();
	const end = t0 + seconds * 1000;
	await Promise.all(
		Array.from({ length: connections }, async () => {
			while (performance.now() < end) {
				const s = performance.now();
				await once();
				lat.push(performance.now() - s);
				n++;
			}
		}),
	);
	const elapsed = (performance.now() - t0) / 1000;
	const cpu = (cpuTicks(child.pid as number) - cpu0) / 100;
	await pool.close();
	lat.sort((a, b) => a - b);
	const pct = (p: number) => Math.round(lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] * 1000) / 1000;
	const out = {
		bench: 'simulator',
		request: 'GET /api/specp/op/dashboard/site/{site_id}/is_under_attack (valid token, one running attack)',
		at: new Date().toISOString(),
		node: process.version,
		connections,
		seconds: Math.round(elapsed * 100) / 100,
		requests: n,
		reqPerSec: Math.round(n / elapsed),
		latencyMs: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: pct(1) },
		simulatorCpuSeconds: cpu,
		simulatorCpuShare: Math.round((cpu / elapsed) * 100) / 100,
		reqPerCpuSecond: cpu > 0 ? Math.round(n / cpu) : null,
		goal: { reqPerSec: 5000, met: n / elapsed >= 5000 },
	};
	mkdirSync(join(root, 'bench/out'), { recursive: true });
	writeFileSync(join(root, 'bench/out/simulator.json'), `${JSON.stringify(out, null, 2)}\n`);
	console.log(JSON.stringify(out, null, 2));
} finally {
	child.kill('SIGTERM');
}
