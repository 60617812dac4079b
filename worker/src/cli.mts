import { abortInputProblem, extendInputProblem } from '../../api/signalRules.ts';
import { printable } from './printable.mts';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { idProblem } from '../../api/limits.ts';
import { renderReportHtml } from '../../api/report/html.ts';
import { runbookReportModel } from '../../api/report/model.ts';
import { redactText } from '../../api/redact.ts';
import { PlanError, parsePlan } from '../../workflows/plan.mts';
import { checkDesiredState, DesiredStateError } from '../../workflows/desired.mts';
import { loadConfig, loadTemporalConfig, ConfigError } from './config.mts';
import { holds, release } from './coordination.mts';
import { getOperation, hasOperation } from '../../api/catalog/index.ts';
import { validateParams } from '../../api/client.ts';
import { ValidationError } from '../../api/errors.ts';
import { FLEET_USAGE, isFleetUserError, runFleet } from './fleetCli.mts';
import { addBlock, addBlocks, BlockRefused, extendBlock, formatBlocks, listBlocks, removeBlock } from './blocks.mts';
import { BlockInputError, checkBulkRequest, MAX_BULK_BLOCKS, normalizeEntry, type BlockRequest, type BulkBlockResult } from '../../workflows/blocksShared.mts';
import type { Client as TemporalClient } from '@temporalio/client';
import {
	abort,
	decide,
	DecisionRefused,
	createSchedule,
	deleteSchedule,
	extendCooldown,
	failureText,
	formatTimeline,
	formatRunbookList,
	inspect,
	scheduleStatuses,
	listRunbooks,
	ListFilterError,
	startAttackResponse,
	temporalClient,
	timeline,
	type ScheduleKind,
} from './runbooks.mts';

const USAGE = `usage: secsvc <command> [options]

  worker                                   run the worker (config: env / SECSVC_CONFIG, see worker/README.md)
  start --plan FILE [--dry-run] [--wait]   start attack response (workflow id attack-response-<site>)
  approve SITE|ID --by ID [--reason TEXT]   approve (Update: the decision comes back; refused when not an approver …)
  reject SITE|ID --by ID --reason TEXT     reject (a reason is required)
  abort SITE|ID [--by NAME] [--reason TEXT]
  extend SITE|ID --seconds N               extend the cooldown
  inspect SITE|ID                          state and changes (running) or result (closed), as JSON
  list [--site S] [--phase P] [--running] [--json]
                                           attack responses (visibility query on the search attributes);
                                           --phase mitigation = tightening, blacklisting, rate-limiting or waiting
  timeline SITE|ID                         the runbook's audit trail, one line per step
  drift --desired FILE [--enforce] [--wait]
  report --site SITE [--hours N] [--markdown] [--html FILE]
                                           period report (attack report playbook); --html writes the HTML report
  report SITE|ID --html FILE               one runbook's attack report as a self-contained HTML file
  schedule create watch --plan FILE --every 60s
  schedule create drift --desired FILE --every 1h [--enforce]
  schedule create report --site SITE --every 24h [--hours N] [--with-html]   (result carries the HTML report)
  schedule delete SCHEDULE_ID
  schedule list                            health of every schedule; exit 3 when one is failing or stuck
  holds SITE [--json]                      settings held at the site's coordinator (who, since, until, why)
  holds release SITE --owner WORKFLOW_ID   let go of what an owner holds (an owner that will never release)
  block add SITE DP ENTRY [ENTRY…] --seconds N --by ID --reason TEXT [--max-prefix N]
  block add SITE DP --file FILE --seconds N --by ID --reason TEXT   (one entry a line, # comments; a threat feed)
                                           block addresses / start-end ranges / CIDRs for N seconds (removed at expiry);
                                           several entries go in bulk adds (one Update per ${MAX_BULK_BLOCKS}); a bad entry is
                                           named (ENTRY 2 / --file line 7) and nothing is sent
  block list SITE [--dp DP] [--json]       site, domain-port, range, expires at, by, why, state
  block extend SITE DP ENTRY --seconds N --by ID   new remaining time (longer or shorter)
  block remove SITE DP ENTRY --by ID       remove now
  call OPERATION --params JSON [--wait]    one API operation as a durable step (retried; HTTP-filter writes serialized)
  deploy status [--json]                   builds of the worker deployment, routing, build of each running runbook
  deploy set-current BUILD_ID              roll a build out: new runbooks go to it (pinned ones stay on theirs)
  deploy retire-check [BUILD_ID] [--json]  which old builds have no pinned runbook left (exit 1: BUILD_ID not yet)
${FLEET_USAGE}`;

function opts(args: string[]) {
	const pos: string[] = [];
	const o: Record<string, string | boolean> = {};
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a.startsWith('--')) {
			const k = a.slice(2);
			const next = args[i + 1];
			if (next !== undefined && !next.startsWith('--') && !['dry-run', 'wait', 'reject', 'enforce', 'markdown', 'running', 'json', 'with-html'].includes(k)) {
				o[k] = next;
				i++;
			} else o[k] = true;
		} else pos.push(a);
	}
	return { pos, o };
}

const MAX_FILE = 4 * 1024 * 1024;
const readJson = (f: unknown, what: string) => {
	if (typeof f !== 'string') throw new UsageError(`--${what}: is required (a JSON file)`);
	try {
		if (statSync(f).size > MAX_FILE) throw new Error(`larger than ${MAX_FILE} bytes`);
		return JSON.parse(readFileSync(f, 'utf8')) as unknown;
	} catch (e) {
		throw new UsageError(`--${what} ${f}: must be a readable JSON file (${(e as Error).message})`);
	}
};

class UsageError extends Error {}

/** Free-text options (--by, --reason) and positional ids: bounded, no control characters. */
const MAX_TEXT = 1024;
function text(v: unknown, what: string): string | undefined {
	if (v === undefined) return undefined;
	if (typeof v !== 'string') throw new UsageError(`${what}: needs a value`);
	if (v.length > MAX_TEXT) throw new UsageError(`${what}: must be at most ${MAX_TEXT} characters (got ${v.length})`);
	if (/[\u0000-\u001f\u007f]/.test(v)) throw new UsageError(`${what}: must not contain control characters`);
	return v;
}
/** SITE|ID: a site id (the safe id alphabet) or a workflow id (attack-response-<site>…, same alphabet, ≤ 256). */
function runbookArg(v: unknown, what = 'SITE|ID'): string {
	if (typeof v !== 'string' || v.length > 256 || !/^[A-Za-z0-9][A-Za-z0-9._~-]*$/.test(v))
		throw new UsageError(`${what}: must be a site id or a workflow id of at most 256 characters from A–Z a–z 0–9 . _ ~ - (got ${JSON.stringify(String(v).slice(0, 40))}${String(v).length > 40 ? '…' : ''})`);
	return v;
}
function siteArg(v: unknown, what: string): string {
	if (typeof v !== 'string') throw new UsageError(`${what}: is required`);
	const p = idProblem(v);
	if (p) throw new UsageError(`${what}: ${p}`);
	return v;
}
function hoursArg(v: unknown): number | undefined {
	if (v === undefined) return undefined;
	const n = Number(v);
	if (!(Number.isInteger(n) && n >= 1 && n <= 2160)) throw new UsageError('--hours: must be an integer from 1 to 2160 (90 days)');
	return n;
}
/** --every: a whole number of seconds, minutes, hours or days (1s … 365d). */
function everyArg(v: unknown, dflt: string): string {
	const e = v === undefined ? dflt : v;
	const m = typeof e === 'string' ? /^([1-9]\d{0,5})(s|m|h|d)$/.exec(e) : null;
	const secs = m ? Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's'] : 0;
	if (!m || secs > 365 * 86400) throw new UsageError(`--every: must be a duration such as 30s, 5m, 1h or 1d (at most 365d)`);
	return e as string;
}

export interface CliIo {
	out(s: string): void;
	err(s: string): void;
}
const processIo: CliIo = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) };

export async function run(argv: string[], io: CliIo = processIo): Promise<number> {
	const [cmd, ...rest] = argv;
	const { pos, o } = opts(rest);
	let clientP: ReturnType<typeof temporalClient> | undefined;
	try {
		if (!cmd || cmd === 'help' || cmd === '--help') {
			io.out(USAGE);
			return cmd ? 0 : 2;
		}
		if (cmd === 'worker') {
			const { main } = await import('./main.mts');
			loadConfig(); // fail early with a clear message
			return await main();
		}
		const t = loadTemporalConfig();
		const conn = () => (clientP ??= temporalClient(t));
		const out = (v: unknown) => io.out(typeof v === 'string' ? v + '\n' : JSON.stringify(v, null, 2) + '\n');
		const need = (i: number, what: string) => {
			if (!pos[i]) throw new UsageError(`${what}: is required`);
			return what === 'SITE|ID' ? runbookArg(pos[i]) : (text(pos[i], what) as string);
		};
		const str = (v: unknown, what: string) => text(v, what);
		switch (cmd) {
			case 'start': {
				const plan = readJson(o.plan, 'plan');
				parsePlan(plan);
				const h = await startAttackResponse(await conn(), t.taskQueue, plan, { dryRun: o['dry-run'] === true });
				out({ workflowId: h.workflowId, runId: h.firstExecutionRunId });
				if (o.wait) out(await h.result());
				return 0;
			}
			case 'approve':
			case 'reject': {
				const approved = cmd === 'approve' && o.reject !== true;
				const id = need(0, 'SITE|ID');
				const reason = str(o.reason, '--reason');
				if (typeof o.by !== 'string' || !o.by.trim()) throw new UsageError('--by: is required (your identity, as listed in the plan\'s approval.approvers)');
				if (!approved && typeof o.reason !== 'string') throw new UsageError('--reason: is required to reject');
				out(await decide(await conn(), id, { approved, by: o.by, reason, via: 'cli' }));
				return 0;
			}
			case 'block':
				return await blockCommand(pos, o, conn, t.taskQueue, out);
			case 'abort': {
				const [id, by, reason] = [need(0, 'SITE|ID'), str(o.by, '--by'), str(o.reason, '--reason')];
				const problem = abortInputProblem({ by, reason }); // the runbook's rule: it would refuse the signal silently
				if (problem) throw new UsageError(`--${problem}`);
				await abort(await conn(), id, by, reason);
				out('abort sent');
				return 0;
			}
			case 'extend': {
				const s = Number(o.seconds);
				const [id, by] = [need(0, 'SITE|ID'), str(o.by, '--by')];
				const problem = extendInputProblem({ seconds: s, by }); // the runbook's rule (api/signalRules.ts)
				if (problem) throw new UsageError(`--${problem}`);
				await extendCooldown(await conn(), id, s, by);
				out(`cooldown extended by ${s}s`);
				return 0;
			}
			case 'inspect':
				out(await inspect(await conn(), need(0, 'SITE|ID')));
				return 0;
			case 'list': {
				for (const k of ['site', 'phase'] as const) if (o[k] === true) throw new UsageError(`--${k}: a value is required`);
				const rows = await listRunbooks(await conn(), { site: str(o.site, '--site'), phase: str(o.phase, '--phase'), running: o.running === true });
				out(o.json ? rows : formatRunbookList(rows));
				return 0;
			}
			case 'timeline':
				out(formatTimeline(await timeline(await conn(), need(0, 'SITE|ID'))));
				return 0;
			case 'drift': {
				const desired = checkDesiredState(readJson(o.desired, 'desired'));
				const h = await (await conn()).workflow.start('driftAudit', {
					taskQueue: t.taskQueue,
					workflowId: `drift-audit-${desired.site_id}-${Date.now()}`,
					args: [{ desired, enforce: o.enforce === true }],
				});
				out(o.wait === false ? { workflowId: h.workflowId } : await h.result());
				return 0;
			}
			case 'report': {
				if (o.html !== undefined && typeof o.html !== 'string') throw new UsageError('--html: a file path is required');
				if (pos[0]) {
					if (typeof o.html !== 'string') throw new UsageError('report SITE|ID: --html FILE is required (the period report takes --site)');
					const r = await inspect(await conn(), pos[0]);
					if (!r.result) throw new UsageError(`${r.workflowId}: no result yet (status ${r.status}); the report is written once the runbook has finished`);
					writeFileSync(o.html, renderReportHtml(runbookReportModel(r.result, new Date().toISOString())));
					out(o.html);
					return 0;
				}
				const site = siteArg(o.site, '--site');
				const r = (await (await conn()).workflow.execute('attackReport', {
					taskQueue: t.taskQueue,
					workflowId: `attack-report-${site}-${Date.now()}`,
					args: [{ site_id: site, periodHours: hoursArg(o.hours), html: typeof o.html === 'string' }],
				})) as { report: unknown; markdown: string; html?: string };
				if (typeof o.html === 'string') {
					writeFileSync(o.html, r.html ?? '');
					out(o.html);
					return 0;
				}
				out(o.markdown ? r.markdown : r.report);
				return 0;
			}
			case 'holds': {
				if (pos[0] === 'release') {
					if (typeof o.owner !== 'string') throw new UsageError('--owner: is required (the workflow id whose holds are let go)');
					const [site, owner] = [siteArg(pos[1], 'SITE'), runbookArg(o.owner, '--owner')];
					out(await release(await conn(), site, owner));
					return 0;
				}
				// SITE names the coordinator `site-<SITE>`: the ids' rule, or a clear error (never "nothing held" for `..`).
				const site = siteArg(pos[0], 'SITE');
				const held = await holds(await conn(), site);
				out(o.json ? held : held.length ? held.map((h) => printable(`${h.key}  ${h.mode} by ${h.owner} since ${h.since} until ${h.until} — ${h.reason}`)).join('\n') : 'nothing held');
				return 0;
			}
			case 'call': {
				const op = need(0, 'OPERATION');
				let params: Record<string, unknown>;
				try {
					params = JSON.parse(typeof o.params === 'string' ? o.params : '{}') as Record<string, unknown>;
				} catch (e) {
					throw new UsageError(`--params: must be a JSON object (${(e as Error).message})`);
				}
				// Unknown operation or bad input: named, nothing started.
				if (!hasOperation(op)) throw new UsageError(`call ${op}: not an operation id (npm run -s catalog lists them)`);
				validateParams(getOperation(op), params);
				const h = await (await conn()).workflow.start('durableCall', { taskQueue: t.taskQueue, workflowId: `call-${op}-${Date.now()}`, args: [{ op, params }] });
				out(o.wait ? await h.result() : { workflowId: h.workflowId });
				return 0;
			}
			case 'schedule': {
				const sub = need(0, 'create|delete|list');
				if (sub === 'list') {
					const all = await scheduleStatuses(await conn());
					out(all);
					const bad = all.filter((x) => x.health === 'failing' || x.health === 'stuck');
					for (const b of bad) io.err(`secsvc: schedule ${b.scheduleId} is ${b.health}${b.lastError ? `: ${b.lastError}` : ''}\n`);
					return bad.length ? 3 : 0;
				}
				if (sub === 'delete') {
					await deleteSchedule(await conn(), need(1, 'SCHEDULE_ID'));
					out('deleted');
					return 0;
				}
				if (sub !== 'create') throw new UsageError(`schedule ${sub}: must be create, delete or list`);
				const kind = need(1, 'watch|drift|report') as ScheduleKind;
				const every = everyArg(o.every, kind === 'watch' ? '60s' : '24h');
				let site: string;
				let input: unknown;
				if (kind === 'watch') {
					// Validated here: a schedule with a bad plan would fail every tick (or never watch at all).
					const plan = readJson(o.plan, 'plan');
					site = parsePlan(plan).site_id;
					input = { plan };
				} else if (kind === 'drift') {
					const desired = checkDesiredState(readJson(o.desired, 'desired'));
					site = desired.site_id;
					input = { desired, enforce: o.enforce === true };
				} else if (kind === 'report') {
					site = siteArg(o.site, '--site');
					input = { site_id: site, periodHours: hoursArg(o.hours), html: o['with-html'] === true };
				} else throw new UsageError(`schedule create ${kind}: must be watch, drift or report`);
				const h = await createSchedule(await conn(), t.taskQueue, kind, site, every, input);
				out({ scheduleId: h.scheduleId, every });
				return 0;
			}
			case 'deploy': {
				const { deploymentStatus, formatStatus, setCurrent } = await import('./deploy.mts');
				const sub = need(0, 'status|set-current|retire-check');
				const svc = (await conn()).workflowService;
				if (sub === 'set-current') {
					const r = await setCurrent(svc, t, need(1, 'BUILD_ID'));
					out(r.changed ? `current build: ${r.current} (was ${r.previous ?? 'none'}); pinned runbooks stay on their build` : `build ${r.current} is already current; nothing changed`);
					return 0;
				}
				if (sub !== 'status' && sub !== 'retire-check') throw new UsageError(`deploy ${sub}: must be status, set-current or retire-check`);
				const s = await deploymentStatus(svc, t);
				if (sub === 'status') {
					out(o.json ? s : formatStatus(s));
					return 0;
				}
				const build = pos[1];
				const v = build ? s.versions.find((x) => x.buildId === build) : undefined;
				if (build && !v) throw new UsageError(`build id ${build}: unknown in worker deployment '${s.deployment}' (known builds: ${s.versions.map((x) => x.buildId).join(', ')})`);
				const rows = v ? [v] : s.versions;
				out(o.json ? rows.map(({ buildId, status, pinnedRunning, retirable, reason }) => ({ buildId, status, pinnedRunning, retirable, reason })) : formatStatus({ ...s, versions: rows }, 'retire'));
				return v && !v.retirable ? 1 : 0;
			}
			case 'fleet':
				return await runFleet(pos, o, conn, t.taskQueue, out);
			default:
				throw new UsageError(`unknown command '${cmd}'\n${USAGE}`);
		}
	} catch (e) {
		if (e instanceof UsageError || e instanceof PlanError || e instanceof DesiredStateError || e instanceof ConfigError || e instanceof ValidationError || (e as Error)?.name === 'DeployError' || e instanceof ListFilterError || isFleetUserError(e) || e instanceof BlockInputError || e instanceof BlockRefused || e instanceof DecisionRefused) {
			io.err(`secsvc: ${(e as Error).message}\n`);
			return 2;
		}
		// The root cause (e.g. "site '99999' does not exist"), not only Temporal's "Workflow execution failed".
		io.err(`secsvc: ${redactText(failureText(e))}\n`);
		return 1;
	} finally {
		if (clientP) await clientP.then((c) => c.connection.close()).catch(() => {});
	}
}

/** The entries of `block add`: positional (ENTRY 1, ENTRY 2 …) or one a line of --file (blank lines and # comments skipped). */
function blockEntries(positional: string[], file: string | boolean | undefined): { entry: string; label: string }[] {
	if (file !== undefined) {
		if (typeof file !== 'string') throw new UsageError('--file: needs a file name');
		if (positional.length) throw new UsageError('--file: give the entries either as ENTRY arguments or in --file, not both');
		let text: string;
		try {
			if (statSync(file).size > 10 * 2 ** 20) throw new Error('larger than 10 MB');
			text = readFileSync(file, 'utf8');
		} catch (e) {
			throw new UsageError(`--file ${file}: must be a readable text file (${(e as Error).message})`);
		}
		const out = text.split(/\r?\n/).flatMap((line, i) => {
			const entry = line.replace(/#.*/, '').trim();
			return entry ? [{ entry, label: `--file line ${i + 1}` }] : [];
		});
		if (!out.length) throw new UsageError(`--file ${file}: names no entry (one address, start-end range or CIDR a line)`);
		return out;
	}
	if (!positional.length) throw new UsageError('ENTRY: is required (or --file FILE)');
	return positional.map((entry, i) => ({ entry, label: positional.length === 1 ? 'ENTRY' : `ENTRY ${i + 1}` }));
}

async function blockCommand(
	pos: string[],
	o: Record<string, string | boolean>,
	conn: () => Promise<TemporalClient>,
	taskQueue: string,
	out: (v: unknown) => void,
): Promise<number> {
	const sub = pos[0];
	const arg = (i: number, what: string) => {
		if (!pos[i]) throw new UsageError(`${what}: is required`);
		// SITE and DP name the workflow `blocks-<SITE>-<DP>` and API paths: the ids' rule (api/limits.ts).
		return what === 'SITE' || what === 'DP' ? siteArg(pos[i], what) : pos[i];
	};
	const int = (k: string) => {
		const v = o[k];
		if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new UsageError(`--${k}: must be an integer`);
		return Number(v);
	};
	const by = () => {
		if (typeof o.by !== 'string') throw new UsageError('--by: is required (who asks)');
		return o.by;
	};
	switch (sub) {
		case 'add': {
			const maxPrefix = o['max-prefix'] === undefined ? undefined : int('max-prefix');
			if (maxPrefix !== undefined && (maxPrefix < 0 || maxPrefix > 32)) throw new UsageError('--max-prefix: must be 0 to 32');
			if (typeof o.reason !== 'string') throw new UsageError('--reason: is required (why the block)');
			const site = arg(1, 'SITE');
			const dp = arg(2, 'DP');
			const entries = blockEntries(pos.slice(3), o.file);
			const seconds = int('seconds');
			const reqs: BlockRequest[] = entries.map((e) => ({ entry: e.entry, seconds, by: by(), reason: o.reason as string, via: 'cli' as const }));
			if (reqs.length === 1 && typeof o.file !== 'string') {
				out(await addBlock(await conn(), taskQueue, site, dp, reqs[0], maxPrefix));
				return 0;
			}
			// Every entry checked before anything is sent; an error names the entry as the user wrote it.
			const seen = new Map<string, string>();
			for (const e of entries) {
				let range: string;
				try {
					range = normalizeEntry(e.entry, maxPrefix);
				} catch (x) {
					if (x instanceof BlockInputError) throw new UsageError(`${e.label}: ${x.rule}`);
					throw x;
				}
				if (seen.has(range)) throw new UsageError(`${e.label}: ${e.entry} is the same range as ${seen.get(range)} (${range}): name each range once`);
				seen.set(range, e.label);
			}
			const chunks: BlockRequest[][] = [];
			for (let i = 0; i < reqs.length; i += MAX_BULK_BLOCKS) chunks.push(reqs.slice(i, i + MAX_BULK_BLOCKS));
			for (const c of chunks) checkBulkRequest({ blocks: c }, maxPrefix);
			const all: BulkBlockResult = { blocks: [], refused: [] };
			for (const c of chunks) {
				const r = await addBlocks(await conn(), taskQueue, site, dp, { blocks: c }, maxPrefix);
				all.blocks.push(...r.blocks);
				all.refused.push(...r.refused);
			}
			out(all);
			return all.refused.length ? 1 : 0;
		}
		case 'list': {
			if (o.dp === true) throw new UsageError('--dp: a value is required');
			const [site, dp] = [arg(1, 'SITE'), o.dp === undefined ? undefined : siteArg(o.dp, '--dp')];
			const blocks = await listBlocks(await conn(), site, dp);
			out(o.json ? blocks : formatBlocks(blocks));
			return 0;
		}
		case 'extend': {
			const [site, dp, req] = [arg(1, 'SITE'), arg(2, 'DP'), { entry: arg(3, 'ENTRY'), seconds: int('seconds'), by: by(), via: 'cli' as const }];
			out(await extendBlock(await conn(), site, dp, req));
			return 0;
		}
		case 'remove': {
			const [site, dp, req] = [arg(1, 'SITE'), arg(2, 'DP'), { entry: arg(3, 'ENTRY'), by: by(), via: 'cli' as const }];
			out(await removeBlock(await conn(), site, dp, req));
			return 0;
		}
		default:
			throw new UsageError(`block ${sub ?? ''}: must be add, list, extend or remove`);
	}
}
