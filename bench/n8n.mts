/**
 * Bench 2: in the same real n8n 2.40.7 (one user folder, one simulator in its own process), N items (default 1,000)
 * through the Security Service node (dashboard › Is Under Attack per item) vs the HTTP Request node doing the same
 * calls with a manually fetched token (HTTP Request POST /oauth/credit/token, then one GET per item with
 * `access_token` from an expression).
 *
 * Measured per run, from the execution n8n itself records (`n8n execute --rawOutput` prints the IRun):
 *   - node time: the `executionTime` n8n records for the node(s) doing the calls (ours: the Security Service node;
 *     baseline: the token node + the per-item GET node);
 *   - execution time: stoppedAt − startedAt of the whole execution, minus the median of a no-op workflow that
 *     builds the same items (Manual Trigger → Code → No Op).
 * Counted from the simulator's request log: token requests and API requests of each run (both must be N API calls).
 * Every "ours" run starts from a credential without a stored token (re-imported), so both sides fetch a token.
 * Runs alternate ours / baseline; medians count.
 *
 *   node --import tsx bench/n8n.mts [--items 1000] [--runs 3]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, makeN8nHome, n8nCli, packPackage, parseRawOutput, type N8nHome } from '../test/n8n/harness.mts';
import { linearConnections } from '../test/n8n/workflows.mts';
import { median, round, startSimProcess, type Row, type SimProcess } from './lib.mts';

const APP_ID = 'bench-n8n';
const SECRET = 'bench-n8n-secret-value-7';
const CRED = { id: 'benchSecsvcCred1', name: 'Security Service (bench simulator)' };
const NODE_TYPE = 'CUSTOM.securityService';

const WF = { noop: 'wfBenchN8nNoop01', ours: 'wfBenchN8nOurs01', http: 'wfBenchN8nHttp01' } as const;

function node(
	id: number,
	name: string,
	type: string,
	typeVersion: number,
	parameters: Record<string, unknown>,
	extra: Record<string, unknown> = {},
) {
	return {
		id: `b0000000-0000-4000-8000-${String(id).padStart(12, '0')}`,
		name,
		type,
		typeVersion,
		position: [id * 220, 300],
		parameters,
		...extra,
	};
}

function linear(id: string, name: string, nodes: ReturnType<typeof node>[]) {
	return {
		id,
		name,
		active: false,
		nodes,
		connections: linearConnections(nodes),
		settings: { executionOrder: 'v1' },
		pinData: {},
	};
}

/** The three workflows of the bench (exported for reading; the bench imports them into a temporary user folder). */
export function benchWorkflows(simUrl: string, siteId: string, items: number) {
	const trigger = () => node(1, 'Start', 'n8n-nodes-base.manualTrigger', 1, {});
	const makeItems = (id: number) =>
		node(id, 'Items', 'n8n-nodes-base.code', 2, {
			mode: 'runOnceForAllItems',
			jsCode: `const out = [];\nfor (let i = 0; i < ${items}; i++) out.push({ json: { n: i, site_id: '${siteId}' } });\nreturn out;`,
		});
	const noop = linear(WF.noop, 'Bench 2: no-op baseline', [
		trigger(),
		makeItems(2),
		node(3, 'Done', 'n8n-nodes-base.noOp', 1, {}),
	]);
	const ours = linear(WF.ours, 'Bench 2: Security Service node', [
		trigger(),
		makeItems(2),
		node(
			3,
			'Under attack',
			NODE_TYPE,
			1,
			{ resource: 'dashboard', operation: 'isUnderAttack', site_id: '={{ $json.site_id }}' },
			{
				credentials: { securityServiceApi: CRED },
			},
		),
	]);
	const http = linear(WF.http, 'Bench 2: HTTP Request node with a manual token', [
		trigger(),
		node(2, 'Token', 'n8n-nodes-base.httpRequest', 4.2, {
			method: 'POST',
			url: `${simUrl}/oauth/credit/token`,
			sendBody: true,
			contentType: 'form-urlencoded',
			bodyParameters: {
				parameters: [
					{ name: 'app_id', value: APP_ID },
					{ name: 'secret', value: SECRET },
					{ name: 'grant_type', value: 'client_credential' },
				],
			},
			options: {},
		}),
		makeItems(3),
		node(4, 'Under attack (HTTP)', 'n8n-nodes-base.httpRequest', 4.2, {
			method: 'GET',
			url: `={{ '${simUrl}/api/specp/op/dashboard/site/' + encodeURIComponent($json.site_id) + '/is_under_attack' }}`,
			sendQuery: true,
			queryParameters: {
				parameters: [{ name: 'access_token', value: "={{ $('Token').first().json.result.access_token }}" }],
			},
			options: {},
		}),
	]);
	return { noop, ours, http };
}

interface RunMeasure {
	executionMs: number;
	nodeMs: number;
	tokenRequests: number;
	apiRequests: number;
	apiOk: number;
	outputItems: number;
}

interface Ctx {
	home: N8nHome;
	sim: SimProcess;
	work: string;
	items: number;
}

async function importCredential(c: Ctx) {
	const file = join(c.work, 'cred.json');
	writeFileSync(
		file,
		JSON.stringify([
			{
				...CRED,
				type: 'securityServiceApi',
				data: {
					baseUrl: c.sim.url,
					appId: APP_ID,
					secret: SECRET,
					grantType: 'app',
					authFailureCodes: '40101',
					accessToken: '',
					expiresAt: 0,
				},
			},
		]),
	);
	const r = await n8nCli(c.home, ['import:credentials', `--input=${file}`]);
	if (r.code !== 0) throw new Error(`import:credentials failed:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
	rmSync(file);
}

async function execute(c: Ctx, id: string, nodes: string[], outNode: string): Promise<RunMeasure> {
	await c.sim.control('DELETE', '/requests');
	// BENCH_N8N_CPU_PROF=dir: V8 CPU profiles of every n8n process of the measured runs (one sub-folder per workflow).
	const prof = process.env.BENCH_N8N_CPU_PROF;
	if (prof && id !== WF.noop) c.home.env.NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${join(prof, id)}`;
	const r = await n8nCli(c.home, ['execute', `--id=${id}`, '--rawOutput'], 600_000).finally(
		() => delete c.home.env.NODE_OPTIONS,
	);
	if (r.code !== 0)
		throw new Error(`n8n execute ${id} failed (${r.code}):\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
	const run = parseRawOutput(r.stdout);
	const runData = run.data.resultData.runData as Record<
		string,
		Array<{ executionTime: number; data?: { main?: Array<Array<{ json: any }>> } }>
	>;
	const nodeMs = nodes.reduce((s, n) => {
		if (!runData[n]) throw new Error(`node '${n}' did not run in ${id}`);
		return s + runData[n].reduce((t, x) => t + x.executionTime, 0);
	}, 0);
	const out = (runData[outNode]?.at(-1)?.data?.main?.[0] ?? []).map((i) => i.json);
	const log = await c.sim.control<Array<{ opId: string; code: number | null }>>('GET', '/requests');
	return {
		executionMs: new Date(run.stoppedAt).getTime() - new Date(run.startedAt).getTime(),
		nodeMs,
		tokenRequests: log.filter((q) => q.opId.startsWith('authorization.')).length,
		apiRequests: log.filter((q) => q.opId === 'dashboard.isUnderAttack').length,
		apiOk: log.filter((q) => q.opId === 'dashboard.isUnderAttack' && q.code === 0).length,
		outputItems: out.length,
	};
}

export async function benchN8n(o: { items?: number; runs?: number; log?: (s: string) => void } = {}) {
	const items = o.items ?? 1000;
	const runs = o.runs ?? 3;
	const log = o.log ?? ((s: string) => process.stderr.write(`bench 2: ${s}\n`));
	const work = mkdtempSync(join(tmpdir(), 'secsvc-bench-n8n-'));
	const sim = await startSimProcess(APP_ID, SECRET);
	let home: N8nHome | undefined;
	try {
		log('packing the package and installing it into a temporary n8n user folder');
		home = makeN8nHome(packPackage(join(work, 'pack')));
		home.env.N8N_RUNNERS_BROKER_PORT = String(await freePort());
		const c: Ctx = { home, sim, work, items };
		const ids = await sim.control<{ site_id: string }>('GET', '/ids');
		const wfs = benchWorkflows(sim.url, ids.site_id, items);
		const wfDir = join(work, 'wf');
		mkdirSync(wfDir);
		for (const wf of Object.values(wfs)) writeFileSync(join(wfDir, `${wf.id}.json`), JSON.stringify(wf));
		const imp = await n8nCli(home, ['import:workflow', '--separate', `--input=${wfDir}`]);
		if (imp.code !== 0)
			throw new Error(`import:workflow failed:\n${imp.stdout.slice(-2000)}\n${imp.stderr.slice(-2000)}`);

		const noop: RunMeasure[] = [];
		const ours: RunMeasure[] = [];
		const http: RunMeasure[] = [];
		for (let k = 0; k < runs; k++) {
			noop.push(await execute(c, WF.noop, ['Items'], 'Done'));
			await importCredential(c);
			ours.push(await execute(c, WF.ours, ['Under attack'], 'Under attack'));
			http.push(await execute(c, WF.http, ['Token', 'Under attack (HTTP)'], 'Under attack (HTTP)'));
			log(
				`run ${k + 1}/${runs}: ours ${ours[k].nodeMs} ms (execution ${ours[k].executionMs} ms, ${ours[k].tokenRequests} token + ${ours[k].apiRequests} API requests), HTTP Request ${http[k].nodeMs} ms (execution ${http[k].executionMs} ms, ${http[k].tokenRequests} token + ${http[k].apiRequests} API requests), no-op ${noop[k].executionMs} ms`,
			);
		}
		for (const [name, ms] of [
			['ours', ours],
			['http', http],
		] as const) {
			for (const m of ms) {
				if (m.apiRequests !== items || m.apiOk !== items || m.outputItems !== items)
					throw new Error(
						`${name}: expected ${items} successful API requests and output items, got ${m.apiRequests} requests (${m.apiOk} code 0), ${m.outputItems} items`,
					);
			}
		}
		const base = median(noop.map((m) => m.executionMs));
		const sum = (ms: RunMeasure[]) => ({
			nodeMsMedian: median(ms.map((m) => m.nodeMs)),
			executionMsMedian: median(ms.map((m) => m.executionMs)),
			executionMinusNoopMsMedian: Math.max(0, median(ms.map((m) => m.executionMs)) - base),
			perItemUs: round((median(ms.map((m) => m.nodeMs)) * 1000) / items, 0),
			tokenRequestsPerRun: ms.map((m) => m.tokenRequests),
			apiRequestsPerRun: ms.map((m) => m.apiRequests),
			runs: ms,
		});
		const result = {
			items,
			runs,
			operation: 'dashboard.isUnderAttack (GET /api/specp/op/dashboard/site/{site_id}/is_under_attack)',
			noopExecutionMsMedian: base,
			ours: sum(ours),
			httpRequest: sum(http),
			ratioNodeTime: round(median(ours.map((m) => m.nodeMs)) / median(http.map((m) => m.nodeMs))),
			ratioExecutionMinusNoop: round(
				Math.max(1, median(ours.map((m) => m.executionMs)) - base) /
					Math.max(1, median(http.map((m) => m.executionMs)) - base),
			),
		};
		const rows: Row[] = [
			{
				bench: '2',
				measure: `n8n: ${items} items, Is Under Attack per item — node time (n8n executionTime), median of ${runs}`,
				ours: `${result.ours.nodeMsMedian} ms`,
				baseline: `${result.httpRequest.nodeMsMedian} ms (HTTP Request: token + GETs)`,
				ratio: `${result.ratioNodeTime}×`,
				goal: '≤ 0.5×',
				met: result.ratioNodeTime <= 0.5,
			},
			{
				bench: '2',
				measure: `n8n: ${items} items — execution (stoppedAt − startedAt) minus no-op (${base} ms)`,
				ours: `${result.ours.executionMinusNoopMsMedian} ms`,
				baseline: `${result.httpRequest.executionMinusNoopMsMedian} ms`,
				ratio: `${result.ratioExecutionMinusNoop}×`,
				goal: '≤ 0.5×',
				met: result.ratioExecutionMinusNoop <= 0.5,
			},
			{
				bench: '2',
				measure: `n8n: token requests / API requests per run (simulator log)`,
				ours: `${result.ours.tokenRequestsPerRun.join(',')} / ${result.ours.apiRequestsPerRun.join(',')}`,
				baseline: `${result.httpRequest.tokenRequestsPerRun.join(',')} / ${result.httpRequest.apiRequestsPerRun.join(',')}`,
				ratio: '—',
				goal: `1 token; ${items} API`,
				met:
					result.ours.tokenRequestsPerRun.every((t) => t === 1) &&
					result.ours.apiRequestsPerRun.every((a) => a === items),
			},
		];
		return { result, rows };
	} finally {
		await sim.stop();
		home?.cleanup();
		rmSync(work, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const { values } = parseArgs({
		options: { items: { type: 'string', default: '1000' }, runs: { type: 'string', default: '3' } },
	});
	const items = Math.min(5000, Math.max(1, Number(values.items) || 1000));
	const runs = Math.min(10, Math.max(1, Number(values.runs) || 3));
	const { result, rows } = await benchN8n({ items, runs });
	const { table, ROOT } = await import('./lib.mts');
	process.stdout.write(
		`${table(rows)}\n${JSON.stringify({ ...result, ours: { ...result.ours, runs: undefined }, httpRequest: { ...result.httpRequest, runs: undefined } }, null, 2)}\n`,
	);
	// Run alone, it updates bench/results.json in place: the `n8n` key and the bench-2 rows; the other benches stay.
	const { existsSync, readFileSync } = await import('node:fs');
	const { cpus, loadavg } = await import('node:os');
	const file = `${ROOT}bench/results.json`;
	const doc = existsSync(file)
		? (JSON.parse(readFileSync(file, 'utf8')) as {
				rows?: Row[];
				results?: Record<string, unknown>;
				notYetMeasured?: string[];
			})
		: {};
	doc.results = {
		...doc.results,
		n8n: {
			...result,
			at: new Date().toISOString(),
			machine: {
				cpus: cpus().length,
				cpuModel: cpus()[0]?.model,
				node: process.version,
				loadAverageAtEnd: loadavg().map((x) => round(x, 1)),
			},
		},
	};
	doc.rows = [...(doc.rows ?? []).filter((r) => r.bench !== '2'), ...rows].sort((a, b) =>
		a.bench.localeCompare(b.bench),
	);
	doc.notYetMeasured = (doc.notYetMeasured ?? []).filter((t) => !t.startsWith('2'));
	writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
	process.stdout.write(`saved bench/results.json (key n8n)\n`);
}
