// Test-side driver for test/n8n/inprocess-runner.mjs: builds dist/ when stale, starts the runner on the cached
// n8n runtime's Node 24, exchanges JSON lines with it, and turns catalog parameters into node parameters with
// the node's own catalog→parameter mapping (nodes/SecurityService/actions/fields.ts).
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CatalogEntry } from '../../api/catalog/index.ts';
import { fieldProperty, isHiddenField, isPaged } from '../../nodes/SecurityService/actions/fields.ts';
import { resourceOf } from '../../nodes/SecurityService/actions/resources.ts';
import { n8nRuntime, ROOT } from './harness.mts';

export const MARK = '@@secsvc-inprocess@@ ';
export const NODE_TYPE = 'CUSTOM.securityService';
export const CRED_TYPE = 'securityServiceApi';

function newestMtime(dir: string, exts: string[]): number {
	let t = 0;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		if (e.isDirectory()) t = Math.max(t, newestMtime(p, exts));
		else if (exts.some((x) => e.name.endsWith(x))) t = Math.max(t, statSync(p).mtimeMs);
	}
	return t;
}

/** Builds dist/ when it is missing or older than the sources that ship (api/, nodes/, credentials/). */
export function ensureBuilt(): void {
	const out = join(ROOT, 'dist/nodes/SecurityService/SecurityService.node.js');
	const src = Math.max(...['api', 'nodes', 'credentials'].map((d) => newestMtime(join(ROOT, d), ['.ts', '.json'])));
	if (existsSync(out) && statSync(out).mtimeMs >= src && existsSync(join(ROOT, 'dist/credentials/SecurityServiceApi.credentials.js')))
		return;
	execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

export interface RunnerError {
	name?: string;
	message: string;
	description?: string;
	context?: Record<string, unknown>;
	httpCode?: string;
	nodeName?: string;
}

export interface TaskResult {
	executionStatus?: string;
	error?: RunnerError;
	items: Array<Record<string, any>>;
	pairedItems: unknown[];
}

export interface RunResult {
	status: string;
	finished?: boolean;
	error?: RunnerError;
	lastNodeExecuted?: string;
	runData: Record<string, TaskResult[]>;
	order: string[];
	ms: number;
	credentialUpdates: string[];
}

export interface Runner {
	versions: Record<string, string>;
	stderr(): string;
	setCredential(credId: string, name: string, data: Record<string, unknown>): Promise<void>;
	getCredential(credId: string): Promise<Record<string, unknown> | null>;
	run(workflow: { nodes: unknown[]; connections: Record<string, unknown>; name?: string; pinData?: Record<string, unknown[]> }): Promise<RunResult>;
	close(): Promise<void>;
}

/** Starts the runner with the cached n8n's Node 24. Throws (never skips) when the runtime is missing. */
export async function startRunner(): Promise<Runner> {
	const rt = n8nRuntime();
	const userFolder = mkdtempSync(join(tmpdir(), 'secsvc-inproc-'));
	const child: ChildProcessWithoutNullStreams = spawn(rt.node, [join(ROOT, 'test/n8n/inprocess-runner.mjs')], {
		cwd: userFolder,
		env: {
			PATH: process.env.PATH,
			HOME: userFolder,
			N8N_RUNTIME: rt.dir,
			// SECSVC_INPROC_DIST: run another build of the package (used to check that the test catches broken builds).
			SECSVC_DIST: process.env.SECSVC_INPROC_DIST ?? join(ROOT, 'dist'),
			N8N_USER_FOLDER: userFolder,
			N8N_ENCRYPTION_KEY: 'secsvc-inprocess-test-key-0123456789',
			N8N_DIAGNOSTICS_ENABLED: 'false',
			N8N_LOG_LEVEL: 'warn',
			N8N_RUNNERS_ENABLED: 'false',
			NODE_ENV: 'test',
		},
		stdio: ['pipe', 'pipe', 'pipe'],
	});
	let stderr = '';
	child.stderr.on('data', (d) => {
		stderr += d;
		if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
	});
	const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
	let ready!: (v: any) => void;
	let failed!: (e: Error) => void;
	const readyP = new Promise<any>((res, rej) => {
		ready = res;
		failed = rej;
	});
	let exited = false;
	child.on('exit', (code, signal) => {
		exited = true;
		const err = new Error(`in-process runner exited (code ${code}, signal ${signal})\n${stderr.slice(-4000)}`);
		failed(err);
		for (const p of pending.values()) p.reject(err);
		pending.clear();
	});
	createInterface({ input: child.stdout }).on('line', (line) => {
		if (!line.startsWith(MARK)) return;
		const msg = JSON.parse(line.slice(MARK.length));
		if (msg.ready) return ready(msg);
		const p = pending.get(msg.id);
		if (!p) return;
		pending.delete(msg.id);
		if (msg.ok) p.resolve(msg.result);
		else p.reject(new Error(`runner: ${msg.error?.message}\n${msg.error?.stack ?? ''}`));
	});
	const timer = setTimeout(() => failed(new Error(`in-process runner not ready after 60 s\n${stderr.slice(-4000)}`)), 60_000);
	const hello = await readyP.finally(() => clearTimeout(timer));

	let next = 0;
	const send = (cmd: Record<string, unknown>, timeoutMs = 60_000): Promise<any> => {
		if (exited) return Promise.reject(new Error(`in-process runner is gone\n${stderr.slice(-4000)}`));
		const id = ++next;
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => {
				pending.delete(id);
				reject(new Error(`runner command ${String(cmd.cmd)} timed out after ${timeoutMs} ms\n${stderr.slice(-4000)}`));
			}, timeoutMs);
			pending.set(id, {
				resolve: (v) => {
					clearTimeout(t);
					resolve(v);
				},
				reject: (e) => {
					clearTimeout(t);
					reject(e);
				},
			});
			child.stdin.write(`${JSON.stringify({ id, ...cmd })}\n`);
		});
	};

	return {
		versions: hello.versions,
		stderr: () => stderr,
		setCredential: (credId, name, data) => send({ cmd: 'setCredential', credId, name, data }),
		getCredential: (credId) => send({ cmd: 'getCredential', credId }),
		run: (workflow) => send({ cmd: 'run', workflow }),
		async close() {
			if (!exited) {
				await send({ cmd: 'exit' }, 10_000).catch(() => undefined);
				await new Promise<void>((r) => {
					if (exited) r();
					else {
						const k = setTimeout(() => child.kill('SIGKILL'), 5_000);
						child.once('exit', () => {
							clearTimeout(k);
							r();
						});
					}
				});
			}
			rmSync(userFolder, { recursive: true, force: true });
		},
	};
}

/**
 * Node parameters for catalog parameters, the inverse of the node's collectParams: the n8n widget of each field
 * comes from the node's own fieldProperty (boolean for 0/1, fixedCollection / multiOptions / string for lists,
 * collection for objects); required and conditional fields are top-level, optional ones go to Additional Fields,
 * fields the node fills itself (constants, app_id/secret of token calls, page/start of paged lists) are left out.
 */
export function toNodeParameters(op: CatalogEntry, params: Record<string, unknown>, extra: Record<string, unknown> = {}) {
	const out: Record<string, unknown> = { resource: resourceOf(op), operation: op.action };
	const additional: Record<string, unknown> = {};
	for (const f of op.fields) {
		if (isHiddenField(op, f)) continue;
		const v = params[f.name];
		if (v === undefined) continue;
		const prop = fieldProperty(f);
		let value: unknown = v;
		switch (prop.type) {
			case 'boolean':
				value = v === true || v === 1 || v === '1';
				break;
			case 'fixedCollection':
				value = { values: (Array.isArray(v) ? v : [v]).map((x) => ({ value: String(x) })) };
				break;
			case 'multiOptions':
				value = Array.isArray(v) ? v : [v];
				break;
			case 'string':
				value = Array.isArray(v) ? v.join(',') : v;
				break;
		}
		if (f.showWhen || f.required) out[f.name] = value;
		else additional[f.name] = value;
	}
	if (Object.keys(additional).length) out.additionalFields = additional;
	if (isPaged(op)) out.returnAll = true;
	return { ...out, ...extra };
}

let nodeCounter = 0;

export interface NodeOptions {
	credId?: string;
	continueOnFail?: boolean;
	/** n8n's "Execute Once" setting: run for the first input item only (chains after a list output). */
	executeOnce?: boolean;
}

export function ssNode(name: string, parameters: Record<string, unknown>, opts: NodeOptions = {}) {
	nodeCounter++;
	return {
		id: `20000000-0000-4000-8000-${String(nodeCounter).padStart(12, '0')}`,
		name,
		type: NODE_TYPE,
		typeVersion: 1,
		position: [200 + nodeCounter * 10, 300],
		parameters,
		credentials: { [CRED_TYPE]: { id: opts.credId ?? 'cred-app', name: 'Security Service (simulator)' } },
		...(opts.continueOnFail ? { onError: 'continueRegularOutput' } : {}),
		...(opts.executeOnce ? { executeOnce: true } : {}),
	};
}

/** Manual Trigger → nodes[0] → nodes[1] → …; `triggerItems` pins the trigger's output (n8n's pinned data). */
export function chain(name: string, nodes: Array<ReturnType<typeof ssNode>>, triggerItems?: Array<Record<string, unknown>>) {
	const trigger = {
		id: `30000000-0000-4000-8000-${String(++nodeCounter).padStart(12, '0')}`,
		name: 'When clicking ‘Execute workflow’',
		type: 'n8n-nodes-base.manualTrigger',
		typeVersion: 1,
		position: [0, 300],
		parameters: {},
	};
	const all = [trigger, ...nodes];
	const connections: Record<string, unknown> = {};
	for (let i = 0; i < all.length - 1; i++) connections[all[i].name] = { main: [[{ node: all[i + 1].name, type: 'main', index: 0 }]] };
	const pinData = triggerItems ? { [trigger.name]: triggerItems.map((json) => ({ json })) } : undefined;
	return { name, nodes: all, connections, ...(pinData ? { pinData } : {}) };
}

export interface ProxyRecord {
	n: number;
	method: string;
	/** Path and query as n8n sent them (the access token masked). */
	url: string;
	status: number;
	/** Response body text (the envelope), as the simulator sent it. */
	body: string;
	/** Tag given by the test's `tag` callback when the exchange finished (e.g. the simulator log entry). */
	tag?: unknown;
}

/**
 * A reverse proxy in front of the simulator that records every exchange n8n makes (request line and the
 * response envelope), so a test can compute what the node should output from what the service really answered.
 */
export async function startRecordingProxy(target: string, tag?: (rec: ProxyRecord) => unknown) {
	const { createServer } = await import('node:http');
	const records: ProxyRecord[] = [];
	const errors: string[] = [];
	let n = 0;
	const server = createServer(async (req, res) => {
		const chunks: Buffer[] = [];
		for await (const c of req) chunks.push(c as Buffer);
		const headers: Record<string, string> = {};
		for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive'].includes(k)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
		try {
			const up = await fetch(`${target}${req.url}`, {
				method: req.method,
				headers,
				body: chunks.length ? Buffer.concat(chunks) : undefined,
				redirect: 'manual',
			});
			const body = await up.text();
			const rec: ProxyRecord = { n: ++n, method: req.method ?? '', url: (req.url ?? '').replace(/access_token=[^&]*/, 'access_token=***'), status: up.status, body };
			rec.tag = tag?.(rec);
			records.push(rec);
			const out: Record<string, string> = {};
			up.headers.forEach((v, k) => {
				if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection' && k !== 'keep-alive') out[k] = v;
			});
			res.writeHead(up.status, out);
			res.end(body);
		} catch (e) {
			errors.push(`${req.method} ${req.url}: ${(e as Error).message} ${String((e as Error).cause ?? '')}`);
			res.writeHead(502, { 'content-type': 'text/plain' });
			res.end(`proxy: ${(e as Error).message}`);
		}
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const { port } = server.address() as { port: number };
	return {
		url: `http://127.0.0.1:${port}`,
		records,
		/** Exchanges the proxy could not forward (a test asserts there are none). */
		errors,
		/** Records after the n-th (use `mark()` before a run). */
		since: (mark: number) => records.filter((r) => r.n > mark),
		mark: () => n,
		close: () =>
			new Promise<void>((r) => {
				server.close(() => r());
				server.closeAllConnections();
			}),
	};
}
