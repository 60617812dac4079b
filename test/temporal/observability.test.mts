/**
 * What operators see, on a real dev server against the simulator, with ONE runbook (kept short):
 *  - the worker's Prometheus /metrics (SECSVC_METRICS_ADDRESS) during and after the runbook: SDK metrics and ours,
 *    checked against the runbook's changes and the simulator's request log; no IP, secret or token in any label;
 *  - the search attributes through a visibility query (`secsvc list`) while mitigating and once done;
 *  - every metric queried by the Grafana dashboard (examples/grafana) was exported in this run;
 *  - `secsvc report <site> --html FILE` opened in Debian's chromium (playwright-core, executablePath): chart points
 *    and markers counted, no console error, no request leaves the page; screenshots saved under test-output/report/.
 */
import assert from 'node:assert/strict';
import { MIN_SERIES_POINTS } from '../../api/report/model.ts';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { changesQuery, stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse, listRunbooks } from '../../workflows/attackResponse/client.mts';
import { parsePrometheus } from '../helpers/prometheus.mts';
import type { WorkerProcess } from '../../demo/stack.mts';
import type { RunningSimulator } from '../../simulator/index.mts';
import { createClient } from '../../api/client.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import {
	APP_ID,
	ATTACK_SOURCES,
	env,
	useDevServer,
	metricsWorker,
	plan,
	ROOT,
	SECRET,
	startSim,
	uniqueQueue,
	waitFor,
	type Ids,
} from './helpers.mts';
import { secsvcArgs } from '../helpers/secsvcCli.mts';

const OUT = process.env.SECSVC_TEST_OUTPUT
	? join(process.env.SECSVC_TEST_OUTPUT, 'observability')
	: join(ROOT, 'test-output', 'observability');
const run = promisify(execFile);

let sim: RunningSimulator;
let worker: WorkerProcess;
let metricsUrl: string;
let ids: Ids;
let queue: string;
let result: AttackResponseResult;
let finalScrape: Row[];

type Row = ReturnType<typeof parsePrometheus>[number];
/** Scrapes /metrics; the text is kept with the test output (`<name>.prom`). */
const scrape = async (name: string) => {
	const text = await (await fetch(metricsUrl)).text();
	mkdirSync(OUT, { recursive: true });
	writeFileSync(join(OUT, `${name}.prom`), text);
	return parsePrometheus(text);
};
const sum = (rows: Row[], name: string, where: Record<string, string> = {}) =>
	rows
		.filter((r) => r.name === name && Object.entries(where).every(([k, v]) => r.labels[k] === v))
		.reduce((s, r) => s + r.value, 0);
const countBy = <T,>(xs: T[], key: (x: T) => string) =>
	xs.reduce<Record<string, number>>((m, x) => ((m[key(x)] = (m[key(x)] ?? 0) + 1), m), {});

useDevServer({
	bundle: false,
	start: async () => {
		rmSync(OUT, { recursive: true, force: true });
		sim = await startSim(11);
		ids = sim.sim.firstIds();
		queue = uniqueQueue('observe');
		({ worker, metricsUrl } = await metricsWorker(sim.url, queue));
		assert.match(worker.output(), new RegExp(`metrics on ${metricsUrl.replace(/[.]/g, '\\.')}`));
	},
	stop: async () => {
		await worker?.stop();
		await sim?.close();
	},
});

test('metrics and search attributes during and after a runbook', async () => {
	// one rate-limited poll (the client waits and repeats it) and one rejected token (renewed, the write repeated)
	sim.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'ratelimit', count: 1 });
	sim.sim.addFault({ op: 'applicationProtection.switch.set', kind: 'expireToken', count: 1 });
	const attack = sim.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
	const h = await startAttackResponse(env.client, queue, plan(ids, { cooldownSeconds: 2, pollSeconds: 1 }));
	await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);

	// during: applied changes by kind = the runbook's; one runbook waiting; the API counters moved
	const changes = await h.query(changesQuery);
	const applied = countBy(
		changes.filter((c) => c.status === 'applied'),
		(c) => c.kind,
	);
	const during = await scrape('metrics-during');
	for (const [kind, n] of Object.entries(applied))
		assert.equal(sum(during, 'secsvc_changes_applied_total', { kind }), n, `applied ${kind}`);
	assert.equal(sum(during, 'secsvc_changes_applied_total'), changes.length);
	assert.equal(sum(during, 'secsvc_runbooks_in_phase', { phase: 'waiting' }), 1);
	assert.equal(sum(during, 'secsvc_runbooks_in_phase', { phase: 'tightening' }), 0);
	// admission control (worker/src/process/admission.mts): the default cap, not reached by one runbook
	assert.equal(sum(during, 'secsvc_worker_admission_limit'), 400);
	assert.equal(sum(during, 'secsvc_worker_admission_holding'), 0);
	assert.equal(sum(during, 'secsvc_api_requests_total', { operation: 'detection.setMode', outcome: '0' }), 1);
	assert.ok(sum(during, 'secsvc_api_requests_total', { operation: 'dashboard.isUnderAttack', outcome: '0' }) >= 1);

	// visibility: "all sites under mitigation now"
	const mitigating = await waitFor('visibility: site under mitigation', async () => {
		const rows = await listRunbooks(env.client, { site: ids.site_id, phase: 'mitigation', running: true });
		return rows.length === 1 && rows;
	});
	assert.equal(mitigating[0].workflowId, h.workflowId);
	assert.equal(mitigating[0].phase, 'waiting');
	assert.equal(mitigating[0].dryRun, false);
	assert.equal(mitigating[0].eventId, (await h.query(stateQuery)).eventId);

	// an operator changes the rate limit during the attack: kept at the revert (a conflict)
	let operatorRequests = 0;
	const opSeq = [sim.sim.requests().at(-1)?.seq ?? 0, 0];
	const transport = createUndiciTransport({ connections: 1 });
	const operator = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		retries: 0,
		onEvent: (e) => void (e.type === 'response' && operatorRequests++),
	});
	await operator.call('applicationProtection.authIp.set', {
		site_id: ids.site_id,
		domain_port_id: ids.domain_port_id,
		action: 'ratelimit',
		enable: 1,
		mode: 2,
		action_ratelimit: { duration: 60, ratelimit_rps: 20, threshold_rps: 40 },
	});
	await transport.close();
	opSeq[1] = sim.sim.requests().at(-1)?.seq ?? 0;

	sim.sim.stopAttack(attack.id);
	result = (await h.result()) as AttackResponseResult;
	assert.equal(result.outcome, 'reverted');
	assert.equal(operatorRequests, 2, 'the operator: one token, one write');
	assert.ok((result.traffic?.length ?? 0) >= 2, 'the runbook kept its is_under_attack samples');
	assert.ok(result.traffic?.some((s) => s.underAttack) && result.traffic.some((s) => !s.underAttack));
	assert.ok(result.eventTraffic?.bps?.attack?.length, 'the event traffic module is in the result');

	// after: restored by kind, one of each time histogram with the result's value, nobody in any phase
	const fin = await scrape('metrics-after');
	finalScrape = fin;
	for (const [kind, n] of Object.entries(
		countBy(
			result.changes.filter((c) => c.status === 'restored'),
			(c) => c.kind,
		),
	))
		assert.equal(sum(fin, 'secsvc_changes_restored_total', { kind }), n, `restored ${kind}`);
	assert.equal(sum(fin, 'secsvc_change_conflicts_total', { kind: 'ipAuth' }), 1);
	assert.equal(sum(fin, 'secsvc_change_conflicts_total'), 1);
	assert.deepEqual(
		result.conflicts.map((c) => c.kind),
		['ipAuth'],
	);
	for (const [name, v] of [
		['secsvc_runbook_time_to_detect', result.timeToDetectSeconds],
		['secsvc_runbook_time_to_mitigate', result.timeToMitigateSeconds],
		['secsvc_runbook_time_to_revert', result.timeToRevertSeconds],
	] as const) {
		assert.equal(sum(fin, `${name}_count`), 1, name);
		assert.ok(
			Math.abs(sum(fin, `${name}_sum`) - (v as number)) < 0.01,
			`${name}_sum ${sum(fin, `${name}_sum`)} vs ${v}`,
		);
	}
	assert.equal(sum(fin, 'secsvc_runbooks_finished_total', { outcome: 'reverted' }), 1);
	assert.equal(sum(fin, 'secsvc_runbooks_in_phase'), 0);

	// every API request of the worker in the simulator's log (all but the operator's two) was counted once, and timed once
	const logged = sim.sim
		.requests()
		.filter(
			(r) =>
				!(
					r.seq > opSeq[0] &&
					r.seq <= opSeq[1] &&
					['authorization.appToken', 'applicationProtection.authIp.set'].includes(r.opId ?? '')
				),
		);
	assert.equal(logged.length, sim.sim.requests().length - 2);
	assert.equal(sum(fin, 'secsvc_api_requests_total'), logged.length);
	assert.equal(sum(fin, 'secsvc_api_request_latency_count'), logged.length);
	const byOpCode = countBy(logged, (r) => `${r.opId} ${r.code}`);
	for (const [k, n] of Object.entries(byOpCode)) {
		const [operation, outcome] = k.split(' ');
		assert.equal(sum(fin, 'secsvc_api_requests_total', { operation, outcome }), n, k);
	}
	assert.equal(sum(fin, 'secsvc_api_requests_total', { operation: 'dashboard.isUnderAttack', outcome: '42901' }), 1);
	assert.equal(
		sum(fin, 'secsvc_api_retries_total', { operation: 'dashboard.isUnderAttack', reason: 'rate_limited' }),
		1,
	);
	assert.equal(sum(fin, 'secsvc_api_rate_limit_waits_total'), 1);
	assert.equal(sum(fin, 'secsvc_api_rate_limit_wait_time_count'), 1);
	assert.equal(sum(fin, 'secsvc_api_token_renewals_total', { reason: 'refused_code' }), 1);
	assert.equal(
		sum(fin, 'secsvc_api_requests_total', { operation: 'applicationProtection.switch.set', outcome: '40101' }),
		1,
	);

	// the SDK's own runtime metrics are there too
	for (const n of [
		'temporal_workflow_completed',
		'temporal_activity_execution_latency_count',
		'temporal_sticky_cache_size',
		'temporal_num_pollers',
		'temporal_workflow_task_execution_latency_count',
	])
		assert.ok(
			fin.some((r) => r.name === n || r.name === `${n}_total`),
			`SDK metric ${n}`,
		);

	// labels never carry an IP address, the secret or a token
	const issued = [...sim.sim.tokens.keys(), ...sim.sim.refreshTokens.keys()];
	for (const r of fin)
		for (const [k, v] of Object.entries(r.labels)) {
			assert.doesNotMatch(v, /\b\d{1,3}(\.\d{1,3}){3}\b/, `${r.name} ${k}=${v}`);
			assert.ok(!v.includes(SECRET) && !issued.some((t) => v.includes(t)), `${r.name} ${k}`);
		}

	// once done: the outcome is searchable, and `secsvc list` shows it
	await waitFor(
		'visibility: outcome',
		async () => (await listRunbooks(env.client, { site: ids.site_id }))[0]?.outcome === 'reverted',
	);
	const cli = await run(process.execPath, secsvcArgs('list', '--site', ids.site_id, '--phase', 'done'), {
		env: { ...process.env, TEMPORAL_ADDRESS: env.address },
	});
	assert.match(cli.stdout, /WORKFLOW ID\s+STATUS\s+SITE\s+PHASE\s+OUTCOME/);
	assert.match(cli.stdout, new RegExp(`${h.workflowId}\\s+COMPLETED\\s+${ids.site_id}\\s+done\\s+reverted`));
	const bad = await run(process.execPath, secsvcArgs('list', '--phase', 'mitigating'), {
		env: { ...process.env, TEMPORAL_ADDRESS: env.address },
	}).catch((e) => e);
	assert.equal(bad.code, 2);
	assert.match(bad.stderr, /--phase: must be one of .* or mitigation/);
});

test('the Grafana dashboard queries only metrics the worker exported', () => {
	assert.ok(finalScrape, 'needs the runbook test');
	const exported = new Set(finalScrape.map((r) => r.name));
	const files = readdirSync(join(ROOT, 'examples/grafana')).filter((f) => f.endsWith('.json'));
	assert.ok(files.length >= 1);
	for (const f of files) {
		const dash = JSON.parse(readFileSync(join(ROOT, 'examples/grafana', f), 'utf8')) as {
			panels: { title: string; targets?: { expr: string }[]; panels?: unknown[] }[];
		};
		const panels = dash.panels
			.flatMap((p) => [p, ...((p.panels ?? []) as typeof dash.panels)])
			.filter((p) => p.targets?.length);
		assert.ok(panels.length >= 6, `${f}: panels`);
		for (const p of panels)
			for (const t of p.targets ?? []) {
				const names = [...t.expr.matchAll(/\b((?:temporal|secsvc)_[a-z0-9_]+)/g)].map((m) => m[1]);
				assert.ok(names.length, `${f} › ${p.title}: queries a metric`);
				for (const n of names) assert.ok(exported.has(n), `${f} › ${p.title}: ${n} was not exported in this run`);
			}
	}
});

test('HTML attack report: secsvc report --html, opened in chromium (light/dark, desktop/phone)', async () => {
	assert.ok(result, 'needs the runbook test');
	mkdirSync(OUT, { recursive: true });
	const file = join(OUT, 'attack-report.html');
	await run(process.execPath, secsvcArgs('report', ids.site_id, '--html', file), {
		env: { ...process.env, TEMPORAL_ADDRESS: env.address },
	});
	const html = readFileSync(file, 'utf8');
	assert.doesNotMatch(
		html,
		/<script|<link|<img|<iframe|@import|url\(|<[^>]+\s(src|href)=/i,
		'self-contained: no script, no external resource',
	);

	const { chromium } = await import('playwright-core');
	const executablePath = execFileSync('bash', [join(ROOT, 'scripts/chromium.sh'), 'path'], {
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'inherit'],
	}).trim();
	const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
	try {
		const ev = result.eventTraffic?.bps ?? {};
		// An event series with fewer than MIN_SERIES_POINTS samples is said in a note, not drawn flat at 0 (issue 40).
		const drawn = (n = 0) => (n >= MIN_SERIES_POINTS ? n : 0);
		const points = (result.traffic?.length ?? 0) + drawn(ev.attack?.length) + drawn(ev.clean?.length);
		const m: Record<string, unknown> = result.marks ?? {};
		const markers = [m.eventStart, m.startedAt, m.mitigatedAt, m.attackEndedAt, m.revertedAt].filter(
			(x) => x !== undefined,
		).length;
		assert.equal(markers, 5);
		for (const [name, width, colorScheme] of [
			['desktop-light', 1280, 'light'],
			['desktop-dark', 1280, 'dark'],
			['phone-light', 390, 'light'],
			['phone-dark', 390, 'dark'],
		] as const) {
			const page = await browser.newPage({ viewport: { width, height: 900 }, colorScheme });
			const problems: string[] = [];
			page.on('console', (msg) => msg.type() === 'error' && problems.push(msg.text()));
			page.on('pageerror', (e) => problems.push(e.message));
			page.on('request', (r) => !r.url().startsWith('file:') && problems.push(`request ${r.url()}`));
			await page.goto(`file://${file}`);
			const chart = page.locator('svg.chart:visible');
			assert.equal(await chart.count(), 1, `${name}: one chart shown`);
			assert.equal(await chart.locator('circle[data-kind]').count(), points, `${name}: chart points`);
			assert.equal(await chart.locator('circle[data-kind="reported"]').count(), result.traffic?.length);
			assert.equal(await chart.locator('g.marker').count(), markers, `${name}: markers`);
			assert.deepEqual(
				await chart.locator('g.marker').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-kind'))),
				['start', 'detected', 'mitigated', 'over', 'reverted'],
			);
			assert.equal(await page.locator('table.changes tbody tr').count(), result.changes.length);
			// nothing wider than the viewport (phone: no sideways scrolling of the page)
			assert.ok(
				(await page.evaluate(() => document.documentElement.scrollWidth)) <= width,
				`${name}: fits ${width} px`,
			);
			await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
			assert.deepEqual(problems, [], `${name}: no console errors or requests`);
			await page.close();
		}
	} finally {
		await browser.close();
	}
	writeFileSync(join(OUT, 'result.json'), JSON.stringify(result, null, 2));

	// the attack report playbook's period report (the attackReport workflow renders it): the event and its markers
	const period = join(OUT, 'period-report.html');
	await run(process.execPath, secsvcArgs('report', '--site', ids.site_id, '--hours', '1', '--html', period), {
		env: { ...process.env, TEMPORAL_ADDRESS: env.address, TEMPORAL_TASK_QUEUE: queue },
	});
	const p = readFileSync(period, 'utf8');
	assert.match(p, /<h2>Events <small>1<\/small><\/h2>/);
	assert.match(p, new RegExp(`attack start ${result.eventId}`));
	assert.equal((p.match(/<g class="marker /g) ?? []).length, 2 * 2, 'start and over, in both chart layouts');
});
