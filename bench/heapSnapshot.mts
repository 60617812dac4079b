/**
 * Diagnosis (not in run.mts): heap snapshots of a running worker's isolates over the inspector protocol — the main
 * thread and every worker thread (the SDK's workflow thread) — and a summary of a snapshot by constructor/type.
 *   snapshotIsolates(wsUrl, prefix) → files `${prefix}-main.heapsnapshot`, `${prefix}-thread<N>.heapsnapshot`
 *   node --import tsx bench/heapSnapshot.mts FILE.heapsnapshot [top]   → self size by (type, name), and strings by length
 * The worker must run with `--inspect=127.0.0.1:0` (bench/workerMemory.mts INSPECT=1 does it and prints the URL).
 */
import { createWriteStream, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'undici';

type Msg = { id?: number; method?: string; params?: any; result?: any; error?: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

export async function snapshotIsolates(wsUrl: string, prefix: string): Promise<string[]> {
	const ws = new WebSocket(wsUrl);
	await new Promise<void>((ok, ko) => {
		ws.addEventListener('open', () => ok());
		ws.addEventListener('error', (e) => ko(e));
	});
	let id = 0;
	const pending = new Map<number, (m: Msg) => void>();
	const workerPending = new Map<string, (m: Msg) => void>();
	const chunks = new Map<string, import('node:fs').WriteStream>();
	const workers: string[] = [];
	const send = (method: string, params: unknown = {}) =>
		new Promise<Msg>((ok) => {
			const i = ++id;
			pending.set(i, ok);
			ws.send(JSON.stringify({ id: i, method, params }));
		});
	const sendWorker = (sessionId: string, method: string, params: unknown = {}) =>
		new Promise<Msg>((ok) => {
			const i = ++id;
			workerPending.set(`${sessionId}:${i}`, ok);
			void send('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id: i, method, params }) });
		});
	ws.addEventListener('message', (ev) => {
		const m = JSON.parse(String(ev.data)) as Msg;
		if (m.id !== undefined) return pending.get(m.id)?.(m);
		if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get('main')?.write(m.params.chunk);
		else if (m.method === 'NodeWorker.attachedToWorker') workers.push(m.params.sessionId);
		else if (m.method === 'NodeWorker.receivedMessageFromWorker') {
			const sid = m.params.sessionId as string;
			const inner = JSON.parse(m.params.message) as Msg;
			if (inner.id !== undefined) workerPending.get(`${sid}:${inner.id}`)?.(inner);
			else if (inner.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get(sid)?.write(inner.params.chunk);
		}
	});
	const files: string[] = [];
	const take = async (key: string, file: string, run: () => Promise<Msg>) => {
		const out = createWriteStream(file);
		chunks.set(key, out);
		const r = await run();
		if (r.error) throw new Error(`${file}: ${JSON.stringify(r.error)}`);
		await new Promise<void>((ok) => out.end(ok));
		files.push(file);
	};
	await send('NodeWorker.enable', { waitForDebuggerOnStart: false });
	await new Promise((r) => setTimeout(r, 500));
	for (const [i, sid] of workers.entries()) {
		await take(sid, `${prefix}-thread${i}.heapsnapshot`, () =>
			sendWorker(sid, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false }),
		);
	}
	await take('main', `${prefix}-main.heapsnapshot`, () =>
		send('HeapProfiler.takeHeapSnapshot', { reportProgress: false }),
	);
	ws.close();
	return files;
}

/** Self size by node type and name (constructor), the largest first. */
export function summarize(file: string, top = 40): string {
	const snap = JSON.parse(readFileSync(file, 'utf8'));
	const meta = snap.snapshot.meta;
	const nf: string[] = meta.node_fields;
	const types: string[] = meta.node_types[0];
	const N = nf.length;
	const iType = nf.indexOf('type');
	const iName = nf.indexOf('name');
	const iSize = nf.indexOf('self_size');
	const nodes: number[] = snap.nodes;
	const strings: string[] = snap.strings;
	const by = new Map<string, { n: number; bytes: number }>();
	let total = 0;
	for (let i = 0; i < nodes.length; i += N) {
		const t = types[nodes[i + iType]];
		const name =
			t === 'string' || t === 'concatenated string' || t === 'sliced string'
				? ''
				: t === 'code' || t === 'closure'
					? strings[nodes[i + iName]].slice(0, 40)
					: strings[nodes[i + iName]].slice(0, 60);
		const k = `${t}:${name}`;
		const e = by.get(k) ?? { n: 0, bytes: 0 };
		e.n++;
		e.bytes += nodes[i + iSize];
		total += nodes[i + iSize];
		by.set(k, e);
	}
	const rows = [...by.entries()].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top);
	return [
		`${file}: ${(total / 2 ** 20).toFixed(1)} MB in ${nodes.length / N} nodes`,
		...rows.map(([k, v]) => `${(v.bytes / 1024).toFixed(0).padStart(8)} KB ${String(v.n).padStart(8)}  ${k}`),
	].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	console.log(summarize(process.argv[2], Number(process.argv[3] ?? 40)));
}
