// Test-side driver for test/n8n/inprocess-runner.mjs: builds dist/ when stale, starts the runner on the cached
// n8n runtime's Node 24, exchanges JSON lines with it, and turns catalog parameters into node parameters with
// the node's own catalog→parameter mapping (nodes/SecurityService/actions/fields.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CatalogEntry } from '../../api/catalog/index.ts';
import { fieldProperty } from '../../nodes/SecurityService/actions/fields.ts';
import { isHiddenField, isPaged, paramName } from '../../nodes/SecurityService/actions/fieldTables.ts';
import { resourceOf } from '../../nodes/SecurityService/actions/resources.ts';
import { ROOT } from './harness.mts';
import { startN8nChild } from './n8n-child.mts';
import { linearConnections, manualTrigger } from './workflows.mts';

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
	if (
		existsSync(out) &&
		statSync(out).mtimeMs >= src &&
		existsSync(join(ROOT, 'dist/credentials/SecurityServiceApi.credentials.js'))
	)
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
	run(workflow: {
		nodes: unknown[];
		connections: Record<string, unknown>;
		name?: string;
		pinData?: Record<string, unknown[]>;
	}): Promise<RunResult>;
	/** The credential's Test button (the node's testedBy function in n8n's CredentialTestContext). */
	testCredential(
		data: Record<string, unknown>,
		credType?: 'securityServiceApi' | 'temporalApi',
	): Promise<{ status: 'OK' | 'Error'; message: string }>;
	close(): Promise<void>;
}

/** Starts the runner with the cached n8n's Node 24. Throws (never skips) when the runtime is missing. */
export async function startRunner(): Promise<Runner> {
	const c = await startN8nChild({
		script: 'inprocess-runner.mjs',
		mark: MARK,
		label: 'in-process runner',
		// SECSVC_INPROC_DIST: run another build of the package (used to check that the test catches broken builds).
		dist: process.env.SECSVC_INPROC_DIST,
		encryptionKey: 'secsvc-inprocess-test-key-0123456789',
		commandTimeoutMs: 60_000,
	});
	return {
		versions: c.versions,
		stderr: c.stderr,
		setCredential: (credId, name, data) => c.send({ cmd: 'setCredential', credId, name, data }),
		getCredential: (credId) => c.send({ cmd: 'getCredential', credId }),
		run: (workflow) => c.send({ cmd: 'run', workflow }),
		testCredential: (data, credType) => c.send({ cmd: 'testCredential', data, credType }),
		close: c.close,
	};
}

/**
 * Node parameters for catalog parameters, the inverse of the node's collectParams: the n8n widget of each field
 * comes from the node's own fieldProperty (boolean for 0/1, fixedCollection / multiOptions / string for lists,
 * collection for objects); required and conditional fields are top-level, optional ones go to Additional Fields,
 * fields the node fills itself (constants, app_id/secret of token calls, page/start of paged lists) are left out.
 */
export function toNodeParameters(
	op: CatalogEntry,
	params: Record<string, unknown>,
	extra: Record<string, unknown> = {},
) {
	const out: Record<string, unknown> = { resource: resourceOf(op), operation: op.action };
	const additional: Record<string, unknown> = {};
	for (const f of op.fields) {
		if (isHiddenField(op, f)) continue;
		const v = params[f.name];
		if (v === undefined) continue;
		const prop = fieldProperty(f);
		const name = paramName(op.id, f.name);
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
		if (f.showWhen || f.required) out[name] = value;
		else additional[name] = value;
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
export function chain(
	name: string,
	nodes: Array<ReturnType<typeof ssNode>>,
	triggerItems?: Array<Record<string, unknown>>,
) {
	const trigger = manualTrigger(
		`30000000-0000-4000-8000-${String(++nodeCounter).padStart(12, '0')}`,
		'When clicking ‘Execute workflow’',
	);
	const all = [trigger, ...nodes];
	const pinData = triggerItems ? { [trigger.name]: triggerItems.map((json) => ({ json })) } : undefined;
	return { name, nodes: all, connections: linearConnections(all), ...(pinData ? { pinData } : {}) };
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
		for (const [k, v] of Object.entries(req.headers))
			if (v !== undefined && !['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive'].includes(k))
				headers[k] = Array.isArray(v) ? v.join(', ') : v;
		try {
			const up = await fetch(`${target}${req.url}`, {
				method: req.method,
				headers,
				body: chunks.length ? Buffer.concat(chunks) : undefined,
				redirect: 'manual',
			});
			const body = await up.text();
			const rec: ProxyRecord = {
				n: ++n,
				method: req.method ?? '',
				url: (req.url ?? '').replace(/access_token=[^&]*/, 'access_token=***'),
				status: up.status,
				body,
			};
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
