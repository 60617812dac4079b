/**
 * `npm run demo`: the whole product in one command, on loopback.
 *
 *   simulator (real clock) + Temporal dev server (Web UI on) + worker (child process)
 *   → attack-watch schedule for one site → simulated attack → live timeline:
 *     attack detected → mitigation applied (thresholds, blacklisted ranges, rate limit) → attack over → cooldown →
 *     reverted → summary (time to detect / mitigate / revert) → exit 0.
 *
 * Options: --keep (leave everything running until Ctrl-C), --attack-seconds N (default 15), --cooldown N (default 5),
 * --every N (schedule interval in seconds, default 2), --ephemeral (random ports instead of 7233/8233/7243/8443/9464),
 * --report FILE (the HTML attack report; default in the temp directory). The worker serves Prometheus /metrics.
 * Ctrl-C at any time stops the worker, the dev server and the simulator.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { startSimulator, type RunningSimulator } from '../simulator/index.mts';
import { isUnderAttack } from '../simulator/attacks.mts';
import {
	workflowIdFor,
	type AttackResponseResult,
	type AuditEntry,
	type RunbookState,
} from '../api/runbook/contract.ts';
import { auditQuery, stateQuery } from '../workflows/attackResponse/messages.mts';
import type { PlanInput } from '../api/runbook/plan.ts';
import { createSchedule, deleteSchedule } from '../worker/src/temporal/schedules.mts';
import { renderReportHtml } from '../api/report/html.ts';
import { runbookReportModel } from '../api/report/model.ts';
import {
	freePort,
	portOr,
	sleep,
	startTemporalDev,
	startWorkerProcess,
	type TemporalDev,
	type WorkerProcess,
} from '../demo/stack.mts';
import { DEMO_PEOPLE, startDemoIdentity, type DemoIdentity } from '../worker/src/identity/demoIdentity.mts';

const { values: args } = parseArgs({
	options: {
		keep: { type: 'boolean', default: false },
		ephemeral: { type: 'boolean', default: false },
		'attack-seconds': { type: 'string', default: '15' },
		cooldown: { type: 'string', default: '5' },
		every: { type: 'string', default: '2' },
		'timeout-seconds': { type: 'string', default: '240' },
		report: { type: 'string' },
	},
});

function intArg(name: keyof typeof args, min: number, max: number): number {
	const v = Number(args[name]);
	if (!Number.isInteger(v) || v < min || v > max) {
		process.stderr.write(`demo: --${name} must be an integer from ${min} to ${max} (got ${String(args[name])})\n`);
		process.exit(2);
	}
	return v;
}
const attackSeconds = intArg('attack-seconds', 3, 600);
const cooldown = intArg('cooldown', 0, 600);
const every = intArg('every', 1, 60);
const timeoutSeconds = intArg('timeout-seconds', 30, 3600);

const tty = Boolean(process.stdout.isTTY);
const c = (code: string, s: string) => (tty ? `\x1b[${code}m${s}\x1b[0m` : s);
const bold = (s: string) => c('1', s);
const dim = (s: string) => c('2', s);
const green = (s: string) => c('32', s);
const red = (s: string) => c('31', s);
const yellow = (s: string) => c('33', s);

let status = '';
let metricsUrl = '';
function say(line: string) {
	if (tty && status) process.stdout.write('\r\x1b[2K');
	process.stdout.write(line + '\n');
	if (tty && status) process.stdout.write(status);
}
function progress(s: string) {
	if (!tty) return;
	status = dim(s);
	process.stdout.write('\r\x1b[2K' + status);
}

// ------------------------------------------------------------------ cleanup (also on Ctrl-C)
let sim: RunningSimulator | undefined;
let temporal: TemporalDev | undefined;
let worker: WorkerProcess | undefined;
let identity: DemoIdentity | undefined;
/** The operator's shell settings for `secsvc approve --login` (0600, removed at exit). */
const clientEnvFile = join(tmpdir(), `secsvc-demo-${process.pid}.env`);
let connection: Connection | undefined;
let scheduleId: string | undefined;
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
	cleaning ??= (async () => {
		if (tty && status) process.stdout.write('\r\x1b[2K');
		status = '';
		if (scheduleId && connection) await deleteSchedule(new Client({ connection }), scheduleId).catch(() => {});
		await connection?.close().catch(() => {});
		await worker?.stop().catch(() => {});
		await temporal?.stop().catch(() => {});
		await sim?.close().catch(() => {});
		await identity?.stop().catch(() => {});
		rmSync(clientEnvFile, { force: true });
	})();
	return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
	process.once(sig, () => {
		say(yellow(`\n${sig}: stopping the worker, the Temporal dev server and the simulator…`));
		void cleanup().then(() => process.exit(130));
	});
}

// ------------------------------------------------------------------ formatting
const fmtBps = (b: number) =>
	b >= 1e9 ? `${(b / 1e9).toFixed(1)} Gbps` : b >= 1e6 ? `${(b / 1e6).toFixed(1)} Mbps` : `${Math.round(b / 1e3)} Kbps`;
let t0 = Date.now();
const rel = (ms = Date.now()) => `+${((ms - t0) / 1000).toFixed(1).padStart(5)}s`;

function changed(before: unknown, after: unknown): string {
	if (Array.isArray(after)) return after.join(', ');
	if (before && after && typeof before === 'object' && typeof after === 'object') {
		const b = before as Record<string, unknown>;
		const a = after as Record<string, unknown>;
		const parts: string[] = [];
		for (const k of new Set([...Object.keys(b), ...Object.keys(a)])) {
			if (JSON.stringify(b[k]) !== JSON.stringify(a[k]))
				parts.push(`${k} ${JSON.stringify(b[k]) ?? '—'} → ${JSON.stringify(a[k])}`);
		}
		return parts.join(', ');
	}
	return `${JSON.stringify(before)} → ${JSON.stringify(after)}`;
}

const STEP_LABEL: Record<string, string> = {
	snapshot: 'snapshot',
	planning: 'plan',
	'awaiting-approval': 'approval',
	tightening: 'MITIGATE',
	blacklisting: 'MITIGATE',
	'rate-limiting': 'MITIGATE',
	waiting: 'wait',
	reverting: 'REVERT',
	signal: 'signal',
};

function auditLine(e: AuditEntry): string {
	const label = (STEP_LABEL[e.step] ?? e.step).padEnd(8);
	const at = Date.parse(e.at);
	let text = e.what;
	if (e.step === 'blacklisting' && Array.isArray(e.after))
		text = `${e.what}: blacklisted ${e.after.length} range(s) ${(e.after as string[]).join(', ')}`;
	else if (e.step === 'reverting')
		text = `${e.what}: ${e.result ?? ''}${Array.isArray(e.before) ? ` — removed ${e.before.join(', ')}` : e.before !== undefined && e.after !== undefined ? ` — ${changed(e.before, e.after)}` : ''}`;
	else if (e.before !== undefined && e.after !== undefined && (e.step === 'tightening' || e.step === 'rate-limiting'))
		text = `${e.what}: ${changed(e.before, e.after)}`;
	else if (e.step === 'waiting') text = `${e.what} — ${e.why}`;
	const colour = e.step === 'reverting' ? green : STEP_LABEL[e.step] === 'MITIGATE' ? yellow : (s: string) => s;
	return `${rel(at)}  ${colour(label)} ${text}`;
}

// ------------------------------------------------------------------ main
async function main(): Promise<number> {
	const wall0 = Date.now();
	say(bold('Security Service demo: attack → durable Temporal runbook → mitigation → revert'));
	const appId = 'demo-app';
	const secret = `demo-${randomBytes(12).toString('hex')}`; // never printed

	say(dim('starting the simulator, the Temporal dev server (Web UI on) and the worker…'));
	sim = await startSimulator({ port: args.ephemeral ? 0 : await portOr(8443), appId, secret, seed: 7 });
	const ids = sim.sim.firstIds();
	const [grpc, ui, http] = args.ephemeral
		? [undefined, undefined, undefined]
		: await Promise.all([portOr(7233), portOr(8233), portOr(7243)]);
	// The HTTP API behind a guard (no web page's cross-origin or text/plain write reaches it: issue 41), and a local
	// identity provider, so an approval here is proven (the worker accepts no typed name: docs/approvals.md).
	temporal = await startTemporalDev({ ui: true, port: grpc, uiPort: ui, httpPort: http, guardHttp: true });
	identity = await startDemoIdentity();
	writeFileSync(
		clientEnvFile,
		Object.entries({ ...identity.clientEnv, TEMPORAL_ADDRESS: temporal.address })
			.map(([k, v]) => `export ${k}='${v}'\n`)
			.join(''),
		{ mode: 0o600 },
	);
	say(`  simulator        ${sim.url}  ${dim(`(site ${ids.site_id}, domain-port ${ids.domain_port_id})`)}`);
	say(`  Temporal         ${temporal.address}  ${dim(`namespace ${temporal.namespace}`)}`);
	say(`  Temporal Web UI  ${bold(temporal.uiUrl ?? '')}`);
	say(`  Temporal HTTP    ${temporal.httpUrl}  ${dim('(for the n8n "Security Service Runbook" node)')}`);

	const taskQueue = 'secsvc-runbooks';
	const metricsAddress = `127.0.0.1:${args.ephemeral ? await freePort() : await portOr(9464)}`;
	metricsUrl = `http://${metricsAddress}/metrics`;
	worker = await startWorkerProcess({
		temporalAddress: temporal.address,
		taskQueue,
		simUrl: sim.url,
		appId,
		secret,
		env: { SECSVC_METRICS_ADDRESS: metricsAddress, ...identity.workerEnv },
	});
	say(
		`  worker           pid ${worker.pid}, task queue ${taskQueue}  ${dim(`(ready ${((Date.now() - wall0) / 1000).toFixed(1)} s after start)`)}`,
	);
	say(`  metrics          ${metricsUrl}  ${dim('(Prometheus; curl it while the demo runs)')}`);
	say(
		`  identity         ${identity.provider.issuer}  ${dim(`(local OpenID Connect provider: approvals are proven; people ${Object.keys(DEMO_PEOPLE).join(', ')})`)}`,
	);
	say(
		`  approve          ${dim(`. ${clientEnvFile} && secsvc approve SITE --login`)}  ${dim('(a runbook that requires approval; the login page lists the demo people)')}`,
	);

	connection = await Connection.connect({ address: temporal.address });
	const client = new Client({ connection, namespace: temporal.namespace });

	const plan: PlanInput = {
		site_id: ids.site_id,
		customer_id: ids.customer_id,
		domain_ports: [ids.domain_port_id],
		detection: {
			rapidMode: true,
			thresholds: [
				{ name: 'udp_total', factor: 0.5 },
				{ name: 'total_traffic', factor: 0.5 },
			],
		},
		blacklist: { enabled: true, topN: 20, metric: 'bps', minPercent: 0, protectedRanges: ['198.51.100.7'] },
		ipAuth: {
			action: 'ratelimit',
			enable: 1,
			mode: 2,
			action_ratelimit: { duration: 300, ratelimit_rps: 50, threshold_rps: 100 },
		},
		switches: [{ name: 'p_auth', enable: 1 }],
		cooldownSeconds: cooldown,
		pollSeconds: 1,
		activityTimeoutSeconds: 10,
		maxDurationSeconds: Math.max(60, attackSeconds * 4),
	};
	const sched = await createSchedule(client, taskQueue, 'watch', ids.site_id, `${every}s`, { plan });
	scheduleId = sched.scheduleId;
	say(
		`  schedule         ${scheduleId}: attackWatch every ${every}s (is_under_attack → start attack-response-${ids.site_id})`,
	);
	say('');

	// The attack: 20 Gbps UDP flood ramping over 3 s from a few hosts, a /24 and a country.
	const attack = sim.sim.startAttack({
		site_id: ids.site_id,
		attack_type: 'UDP Total',
		duration: attackSeconds,
		curve: { shape: 'ramp', peakBps: 20e9, peakPps: 4e6, rampSeconds: 3 },
		sources: [
			{ ip: '203.0.113.10', weight: 3 },
			{ ip: '203.0.113.11', weight: 3 },
			{ ip: '203.0.113.12', weight: 2 },
			{ ip: '203.0.113.13', weight: 2 },
			{ cidr: '198.51.100.4/30' },
			{ ip: '198.51.100.7' },
			{ country: 'CN' },
		],
	});
	t0 = Date.now();
	say(
		`${rel()}  ${red('ATTACK')}   ${attack.attack_type} on site ${ids.site_id}: ramps to ${fmtBps(20e9)} over 3 s, ${attack.sources.length} sources, lasts ${attackSeconds}s (simulated)`,
	);

	const wid = workflowIdFor(ids.site_id);
	const handle = client.workflow.getHandle(wid);
	let started = false;
	let printed = 0;
	let mitigatedShown = false;
	let attackOverShown = false;
	let cooldownShown = false;
	let lastState: RunbookState | undefined;
	let peakReported = 0;
	let reportedAtMitigation: number | undefined;
	const deadline = Date.now() + timeoutSeconds * 1000;

	for (;;) {
		if (Date.now() > deadline)
			throw new Error(
				`the runbook did not finish within ${timeoutSeconds}s (see the Temporal Web UI: ${temporal.uiUrl})`,
			);
		const site = sim.sim.site(ids.site_id);
		const now = sim.sim.nowSec();
		const view = sim.sim.attackView(attack.id);
		const ua = isUnderAttack(sim.sim.world, sim.sim.opts.mitigation, site, now);
		const reported = ua.status === 1 ? ua.bps_size : 0;
		peakReported = Math.max(peakReported, reported);
		if (view.status === 'stopped' && !attackOverShown) {
			attackOverShown = true;
			say(`${rel()}  ${green('OVER')}     attack stopped at the source (simulator)`);
		}

		const showMitigated = (at: string) => {
			mitigatedShown = true;
			reportedAtMitigation = reported;
			say(
				`${rel(Date.parse(at))}  ${yellow('MITIGATED')} all changes applied; reported attack traffic now ${fmtBps(reported)} (peak ${fmtBps(peakReported)})`,
			);
		};
		let desc: Awaited<ReturnType<typeof handle.describe>> | undefined;
		try {
			desc = await handle.describe();
		} catch (e) {
			if (!(e instanceof WorkflowNotFoundError)) throw e;
		}
		if (desc && !started) {
			started = true;
			say(
				`${rel(desc.startTime.getTime())}  ${bold('DETECTED')} attack watch saw is_under_attack=1 → runbook ${wid} started (run ${desc.runId.slice(0, 8)}…)`,
			);
		}
		if (desc) {
			const running = desc.status.name === 'RUNNING';
			let audit: AuditEntry[] = [];
			if (running) {
				try {
					// State first, then the audit: the audit then holds every step up to the state's mitigatedAt, so
					// MITIGATED never prints before the MITIGATE lines (two parallel queries may see different points).
					lastState = await handle.query(stateQuery);
					audit = await handle.query(auditQuery);
				} catch {
					// the first workflow task may not have run yet
				}
			}
			let result: AttackResponseResult | undefined;
			if (!running) {
				result = (await handle.result()) as AttackResponseResult;
				audit = result.audit;
			}
			for (const e of audit.slice(printed)) {
				if (e.step === 'reverting' && !mitigatedShown) mitigatedShown = true;
				// The audit may already hold the wait that follows the last write while the state read before it did
				// not yet have mitigatedAt: read the state again so that MITIGATED is printed before the wait.
				if (e.step === 'waiting' && running && !mitigatedShown && !lastState?.mitigatedAt)
					lastState = await handle.query(stateQuery).catch(() => lastState);
				if (e.step === 'waiting' && lastState?.mitigatedAt && !mitigatedShown) showMitigated(lastState.mitigatedAt);
				say(auditLine(e));
				if (e.step === 'waiting' && /no longer reported/.test(e.what) && !cooldownShown) {
					cooldownShown = true;
					say(`${rel(Date.parse(e.at))}  ${dim('COOLDOWN')} ${cooldown}s without attack before reverting`);
				}
			}
			printed = Math.max(printed, audit.length);
			if (lastState?.mitigatedAt && !mitigatedShown) showMitigated(lastState.mitigatedAt);
			if (result) {
				progress('');
				return summary(result, { wall0, peakReported, reportedAtMitigation, uiUrl: temporal.uiUrl as string, wid });
			}
			progress(
				`  phase ${lastState?.phase ?? 'starting'} · reported attack ${fmtBps(reported)} · attack ${view.status}`,
			);
		} else progress(`  waiting for the attack watch (every ${every}s) · reported attack ${fmtBps(reported)}`);
		await sleep(300);
	}
}

function summary(
	r: AttackResponseResult,
	o: { wall0: number; peakReported: number; reportedAtMitigation?: number; uiUrl: string; wid: string },
): number {
	const s = (v: number | undefined) => (v === undefined ? 'n/a' : `${v.toFixed(1)} s`);
	const restored = r.changes.filter((x) => x.status === 'restored').length;
	const blacklisted = r.changes.filter((x) => x.kind === 'blacklistAdd').flatMap((x) => x.after as string[]);
	const thresholds = r.changes
		.filter((x) => x.kind === 'detectionPolicy')
		.map((x) => `${x.target.name} (${changed(x.before, x.after)})`);
	say('');
	say(bold('Summary'));
	say(`  outcome              ${r.outcome === 'reverted' ? green(r.outcome) : red(r.outcome)}`);
	say(`  time to detect       ${s(r.timeToDetectSeconds)}   (attack start → runbook start)`);
	say(`  time to mitigate     ${s(r.timeToMitigateSeconds)}   (attack start → last mitigation write)`);
	say(
		`  time to revert       ${s(r.timeToRevertSeconds)}   (attack no longer reported → everything restored; cooldown ${cooldown}s)`,
	);
	say(`  changes              ${r.changes.length} applied, ${restored} restored, ${r.conflicts.length} conflict(s)`);
	say(`  thresholds           ${thresholds.join('; ') || 'none'}`);
	say(`  blacklisted ranges   ${blacklisted.join(', ') || 'none'}`);
	if (r.skipped.length) say(`  not blacklisted      ${r.skipped.map((x) => `${x.source} (${x.reason})`).join(', ')}`);
	if (o.reportedAtMitigation !== undefined)
		say(`  reported traffic     peak ${fmtBps(o.peakReported)} → ${fmtBps(o.reportedAtMitigation)} after mitigation`);
	say(`  demo wall time       ${((Date.now() - o.wall0) / 1000).toFixed(1)} s`);
	say(`  history              ${o.uiUrl}/namespaces/default/workflows/${o.wid}`);
	const report = resolve(args.report ?? join(tmpdir(), `secsvc-attack-report-${r.site_id}-${Date.now()}.html`));
	writeFileSync(report, renderReportHtml(runbookReportModel(r, new Date().toISOString())));
	say(`  report               ${report}  ${dim('(one self-contained HTML file)')}`);
	say(
		`  metrics              ${metricsUrl}  ${dim('(e.g. secsvc_changes_applied_total, secsvc_runbook_time_to_mitigate)')}`,
	);
	return r.outcome === 'reverted' ? 0 : 1;
}

let code = 1;
try {
	code = await main();
	if (args.keep && temporal && sim) {
		say('');
		say(bold('--keep: everything stays up. Ctrl-C stops it.'));
		say(`  Temporal Web UI   ${temporal.uiUrl}`);
		say(`  Temporal gRPC     ${temporal.address}   HTTP API ${temporal.httpUrl}`);
		say(`  simulator         ${sim.url}   (control API: ${sim.url}/__sim/state)`);
		say(`  metrics:          curl -s ${metricsUrl} | grep ^secsvc_`);
		say(
			`  runbooks:         TEMPORAL_ADDRESS=${temporal.address} node worker/bin/secsvc.mjs list --phase mitigation --running`,
		);
		say(
			`  another attack:   curl -s -XPOST ${sim.url}/__sim/attacks -H 'content-type: application/json' -d '{"site_id":"${sim.sim.firstIds().site_id}","duration":20,"sources":[{"cidr":"203.0.113.0/24"}]}'`,
		);
		say(
			`  CLI:              TEMPORAL_ADDRESS=${temporal.address} node worker/bin/secsvc.mjs timeline ${sim.sim.firstIds().site_id}`,
		);
		await new Promise(() => {}); // until Ctrl-C (the signal handler cleans up and exits)
	}
} catch (e) {
	say(red(`demo failed: ${(e as Error).message}`));
	if (worker) say(dim(worker.output().slice(-2000)));
	code = 1;
}
await cleanup();
process.exit(code);
