// Test side of the in-process n8n runners (inprocess-runner.mjs, trigger-runner.mjs; protocol in n8n-runtime.mjs
// serveCommands): starts one on the cached n8n runtime's Node 24 in a temporary user folder and exchanges JSON
// lines with it. Throws (never skips) when the runtime is missing.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { announceStarted } from '../../demo/stack.mts';
import { N8N_COMPILE_CACHE, n8nRuntime, ROOT } from './harness.mts';

export interface N8nChildOptions {
	/** The runner script under test/n8n/. */
	script: string;
	/** Prefix of the runner's answer lines (its MARK). */
	mark: string;
	/** Name in error messages ("in-process runner"). */
	label: string;
	/** The package build to load (default dist/). */
	dist?: string;
	encryptionKey: string;
	/** Default timeout of a command. */
	commandTimeoutMs: number;
}

export interface N8nChild {
	versions: Record<string, string>;
	stderr(): string;
	send(cmd: Record<string, unknown>, timeoutMs?: number): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
	close(): Promise<void>;
}

export async function startN8nChild(o: N8nChildOptions): Promise<N8nChild> {
	const rt = n8nRuntime();
	const userFolder = mkdtempSync(join(tmpdir(), 'secsvc-n8n-child-'));
	const child: ChildProcessWithoutNullStreams = spawn(rt.node, [join(ROOT, 'test/n8n', o.script)], {
		cwd: userFolder,
		env: {
			PATH: process.env.PATH,
			HOME: userFolder,
			N8N_RUNTIME: rt.dir,
			SECSVC_DIST: o.dist ?? join(ROOT, 'dist'),
			N8N_USER_FOLDER: userFolder,
			N8N_ENCRYPTION_KEY: o.encryptionKey,
			N8N_DIAGNOSTICS_ENABLED: 'false',
			N8N_LOG_LEVEL: 'warn',
			N8N_RUNNERS_ENABLED: 'false',
			NODE_ENV: 'test',
			...N8N_COMPILE_CACHE,
		},
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let stderr = '';
	child.stderr.on('data', (d) => {
		stderr += d;
		if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
	});
	announceStarted({ what: `n8n ${o.label}`, pid: child.pid, addresses: { userFolder }, log: () => stderr });
	const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
	let ready!: (v: { versions: Record<string, string> }) => void;
	let failed!: (e: Error) => void;
	const readyP = new Promise<{ versions: Record<string, string> }>((res, rej) => {
		ready = res;
		failed = rej;
	});
	let exited = false;
	child.on('exit', (code, signal) => {
		exited = true;
		const err = new Error(`${o.label} exited (code ${code}, signal ${signal})\n${stderr.slice(-4000)}`);
		failed(err);
		for (const p of pending.values()) p.reject(err);
		pending.clear();
	});
	createInterface({ input: child.stdout }).on('line', (line) => {
		if (!line.startsWith(o.mark)) return;
		const msg = JSON.parse(line.slice(o.mark.length));
		if (msg.ready) return ready(msg);
		const p = pending.get(msg.id);
		if (!p) return;
		pending.delete(msg.id);
		if (msg.ok) p.resolve(msg.result);
		else p.reject(new Error(`runner: ${msg.error?.message}\n${msg.error?.stack ?? ''}`));
	});
	const timer = setTimeout(() => failed(new Error(`${o.label} not ready after 60 s\n${stderr.slice(-4000)}`)), 60_000);
	const hello = await readyP.finally(() => clearTimeout(timer));

	let next = 0;
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	const send = (cmd: Record<string, unknown>, timeoutMs = o.commandTimeoutMs): Promise<any> => {
		if (exited) return Promise.reject(new Error(`${o.label} is gone\n${stderr.slice(-4000)}`));
		const id = ++next;
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => {
				pending.delete(id);
				reject(new Error(`runner command ${String(cmd.cmd)} timed out after ${timeoutMs} ms\n${stderr.slice(-4000)}`));
			}, timeoutMs);
			pending.set(id, {
				resolve: (v) => (clearTimeout(t), resolve(v)),
				reject: (e) => (clearTimeout(t), reject(e)),
			});
			child.stdin.write(`${JSON.stringify({ id, ...cmd })}\n`);
		});
	};

	return {
		versions: hello.versions,
		stderr: () => stderr,
		send,
		async close() {
			if (!exited) {
				await send({ cmd: 'exit' }, 10_000).catch(() => undefined);
				await new Promise<void>((r) => {
					if (exited) return r();
					const k = setTimeout(() => child.kill('SIGKILL'), 5_000);
					child.once('exit', () => (clearTimeout(k), r()));
				});
			}
			rmSync(userFolder, { recursive: true, force: true });
		},
	};
}
