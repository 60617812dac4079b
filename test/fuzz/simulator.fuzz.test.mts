// Fuzz, the simulator as a sandbox that gets hostile input: raw-socket garbage always gets an envelope or a closed
// connection (never a crash, never Node's bare 400), the control API refuses bad clocks and scenarios without
// changing anything, and the service keeps serving.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { startSimulator } from '../../simulator/index.mts';
import { Tally, check } from './hostile.mts';
import '../helpers/started.mts'; // a failing test prints what this file started
import { scratchDir } from '../helpers/scratch.mts';

const tally = new Tally('simulator');
const sim = await startSimulator({ port: 0, appId: 'fuzz-app', secret: 'fuzz-secret-0123', seed: 5, clock: 'manual' });
after(async () => {
	tally.report();
	await sim.close();
});

/** Sends raw bytes; resolves with everything the server wrote before closing (or after 1.5 s of silence). */
function raw(bytes: Buffer, { endAfterWrite = false } = {}): Promise<{ text: string; closed: boolean }> {
	return new Promise((resolve) => {
		const s = net.connect(sim.port, '127.0.0.1');
		const chunks: Buffer[] = [];
		let done = false;
		const finish = (closed: boolean) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			s.destroy();
			resolve({ text: Buffer.concat(chunks).toString('latin1'), closed });
		};
		const timer = setTimeout(() => finish(false), 1500);
		s.on('data', (c) => chunks.push(c));
		s.on('close', () => finish(true));
		s.on('error', () => finish(true));
		s.write(bytes, () => {
			if (endAfterWrite) s.end();
		});
	});
}

/** An answer is acceptable when it is a closed connection without bytes, or HTTP responses each carrying an envelope. */
function assertEnvelopeOrClosed(r: { text: string; closed: boolean }, what: string) {
	if (r.text === '') {
		// no answer: only acceptable when the server closed the connection (the client half-closed after writing)
		assert.ok(r.closed, `${what}: neither an answer nor a closed connection within 1.5 s`);
		return;
	}
	assert.match(r.text, /^HTTP\/1\.1 \d{3} /, `${what}: an HTTP response`);
	const status = Number(r.text.slice(9, 12));
	const body = r.text.slice(r.text.indexOf('\r\n\r\n') + 4);
	const first = body.split(/HTTP\/1\.1 \d{3} /)[0];
	let env: { code?: unknown; msg?: unknown; error?: unknown };
	try {
		env = JSON.parse(first.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, ''));
	} catch {
		assert.fail(`${what}: HTTP ${status} without a JSON body: ${JSON.stringify(r.text.slice(0, 200))}`);
	}
	assert.ok(
		typeof env.code === 'number' || typeof env.error === 'string',
		`${what}: envelope ${JSON.stringify(env).slice(0, 200)}`,
	);
}

async function stillServing() {
	const r = await fetch(`${sim.url}/__sim/clock`);
	assert.equal(r.status, 200);
	const t = await fetch(`${sim.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: 'fuzz-app', secret: 'fuzz-secret-0123', grant_type: 'client_credential' }),
	});
	assert.equal(((await t.json()) as { code: number }).code, 0);
}

const NAMED: [string, Buffer][] = [
	['non-HTTP bytes', Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n', 'latin1')],
	[
		'0xFF in the path',
		Buffer.concat([
			Buffer.from('GET /api/spe/customer/'),
			Buffer.from([0xff, 0xfe]),
			Buffer.from(' HTTP/1.1\r\nhost: x\r\n\r\n'),
		]),
	],
	[
		'negative Content-Length',
		Buffer.from('POST /oauth/credit/token HTTP/1.1\r\nhost: x\r\ncontent-length: -5\r\n\r\n'),
	],
	[
		'two Content-Lengths',
		Buffer.from('POST /oauth/credit/token HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab'),
	],
	['100 KB URL', Buffer.from(`GET /api/spe/customer/${'a'.repeat(100_000)} HTTP/1.1\r\nhost: x\r\n\r\n`)],
	['100 KB header', Buffer.from(`GET /__sim/clock HTTP/1.1\r\nhost: x\r\nx-big: ${'b'.repeat(100_000)}\r\n\r\n`)],
	[
		'bad chunked body',
		Buffer.from(
			'POST /oauth/credit/token HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n',
		),
	],
	['NUL in a header', Buffer.from('GET /__sim/clock HTTP/1.1\r\nhost: x\r\nx-a: a\x00b\r\n\r\n', 'latin1')],
	['HTTP/9', Buffer.from('GET / HTTP/9.9\r\n\r\n')],
	['bare LF flood', Buffer.from('\n'.repeat(5000))],
	[
		'bad percent-encoding',
		Buffer.from(
			'GET /api/specp/op/dashboard/site/%E0%A4%A/is_under_attack?access_token=%zz HTTP/1.1\r\nhost: x\r\n\r\n',
		),
	],
	['control route bad percent-encoding', Buffer.from('GET /__sim/attacks/%E0%A4%A HTTP/1.1\r\nhost: x\r\n\r\n')],
	[
		'2 MB body',
		Buffer.from(`POST /__sim/scenario HTTP/1.1\r\nhost: x\r\ncontent-length: ${2 << 20}\r\n\r\n${'{'.repeat(2 << 20)}`),
	],
];

test(
	'raw-socket garbage: an envelope or a closed connection, never a crash; the service keeps serving',
	tally.wrap(async () => {
		for (const [what, bytes] of NAMED) {
			tally.hit('raw socket (named)');
			const r = await raw(bytes, { endAfterWrite: true });
			assertEnvelopeOrClosed(r, what);
			if (['0xFF in the path', 'negative Content-Length', '100 KB URL', 'non-HTTP bytes'].includes(what))
				assert.notEqual(r.text, '', `${what}: answered`);
			if (what === '100 KB URL' || what === '100 KB header') assert.match(r.text, /^HTTP\/1\.1 431 /, what);
			if (what === '2 MB body') assert.match(r.text, /^HTTP\/1\.1 413 /, what);
		}
		await stillServing();
		const line = fc.oneof(
			fc.uint8Array({ minLength: 1, maxLength: 2000 }).map((a) => Buffer.from(a)),
			fc
				.tuple(
					fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'G\u00ffT', ''),
					fc.string({ unit: 'binary', maxLength: 300 }),
					fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', ''),
					fc.array(
						fc.tuple(fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 60 })),
						{ maxLength: 5 },
					),
					fc.string({ unit: 'binary', maxLength: 200 }),
				)
				.map(([m, p, v, hs, b]) =>
					Buffer.from(`${m} /${p} ${v}\r\n${hs.map(([k, x]) => `${k}: ${x}\r\n`).join('')}\r\n${b}`, 'utf8'),
				),
		);
		await check(
			fc.asyncProperty(line, async (bytes) => {
				tally.hit('raw socket (generated)');
				assertEnvelopeOrClosed(await raw(bytes, { endAfterWrite: true }), 'generated bytes');
			}),
			{ numRuns: 150, seed: 1601 },
		);
		await stillServing();
	}),
);

test(
	'control API: hostile clocks and scenarios are refused (400, reason) and change nothing',
	tally.wrap(async () => {
		const post = async (path: string, body: unknown) => {
			const r = await fetch(`${sim.url}/__sim${path}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: typeof body === 'string' ? body : JSON.stringify(body),
			});
			return { status: r.status, body: (await r.json()) as Record<string, unknown> };
		};
		const state = async () => ({
			now: sim.sim.nowMs(),
			attacks: sim.sim.world.attacks.length,
			flow: sim.sim.world.flowDowns.length,
		});
		const before = await state();
		for (const seconds of [1e308, '1e308', -1, 'x', null, 1e12, Infinity]) {
			tally.hit('control clock');
			const r = await post('/clock/advance', { seconds });
			assert.equal(r.status, 400, `seconds ${seconds}`);
			assert.match(String(r.body.error), /seconds/);
		}
		for (const sc of [
			{ attacks: 'x' },
			{ attacks: [{ at: 'soon' }] },
			{ attacks: [{ start: 1e308 }] },
			{ attacks: [{ at: 1, curve: { points: 'x' } }] },
			{ attacks: [{ sources: Array.from({ length: 5000 }, () => ({ ip: '1.2.3.4' })) }] },
			{ attacks: [{}], extra: 1 },
			{ flowDowns: [{ at: 1e300 }] },
			{ attacks: Array.from({ length: 2000 }, () => ({})) },
			[1, 2],
			'"text"',
		]) {
			tally.hit('control scenario');
			const r = await post('/scenario', sc);
			assert.equal(r.status, 400, JSON.stringify(sc).slice(0, 80));
			assert.ok(typeof r.body.error === 'string' && r.body.error.length < 500);
		}
		for (const a of [{ at: 'x' }, { start: -1 }, { duration: 1e300 }, { site_id: 'x'.repeat(5000) }, { curve: 7 }]) {
			tally.hit('control attack');
			assert.equal((await post('/attacks', a)).status, 400, JSON.stringify(a).slice(0, 80));
		}
		assert.deepEqual(await state(), before, 'nothing changed');
		// the clock still works, and a big but bounded step stays a finite time
		tally.hit('control clock');
		const ok = await post('/clock/advance', { seconds: 86400 * 365 });
		assert.equal(ok.status, 200);
		assert.ok(Number.isFinite(ok.body.now));
		await stillServing();
	}),
);

test(
	'--secret from SECSVC_SIM_SECRET or --secret-file (never on the command line)',
	tally.wrap(async () => {
		const dir = scratchDir('secsvc-sim-');
		const file = join(dir, 'secret');
		writeFileSync(file, 'file-secret-42\n');
		for (const [args, env, secret] of [
			[['--secret-file', file], {}, 'file-secret-42'],
			[[], { SECSVC_SIM_SECRET: 'env-secret-42' }, 'env-secret-42'],
		] as const) {
			tally.hit('simulator CLI');
			const child = spawn(
				process.execPath,
				['--import', 'tsx', 'simulator/main.mts', '--port', '0', '--app-id', 'cli-app', ...args],
				{
					cwd: new URL('../../', import.meta.url).pathname,
					env: { ...process.env, ...env },
					stdio: ['ignore', 'pipe', 'pipe'],
				},
			);
			try {
				const url = await new Promise<string>((resolve, reject) => {
					let out = '';
					child.stdout.on('data', (c) => {
						out += c;
						if (out.includes('\n')) resolve(out.trim().split('\n')[0]);
					});
					child.on('exit', (c) => reject(new Error(`simulator exited ${c}`)));
				});
				const tok = await fetch(`${url}/oauth/credit/token`, {
					method: 'POST',
					body: new URLSearchParams({ app_id: 'cli-app', secret, grant_type: 'client_credential' }),
				});
				assert.equal(((await tok.json()) as { code: number }).code, 0, `token with ${Object.keys(env)[0] ?? args[0]}`);
			} finally {
				child.kill('SIGTERM');
			}
		}
		tally.hit('simulator CLI');
		const bad = spawn(
			process.execPath,
			['--import', 'tsx', 'simulator/main.mts', '--port', '0', '--secret-file', join(dir, 'missing')],
			{
				cwd: new URL('../../', import.meta.url).pathname,
				stdio: ['ignore', 'pipe', 'pipe'],
			},
		);
		let err = '';
		bad.stderr.on('data', (c) => (err += c));
		const code = await new Promise((r) => bad.on('exit', r));
		assert.equal(code, 2);
		assert.match(err, /--secret-file: must be a readable file/);
	}),
);
