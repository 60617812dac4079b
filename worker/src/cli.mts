import { readFileSync } from 'node:fs';
import { redactText } from '../../api/redact.ts';
import { PlanError, parsePlan } from '../../workflows/plan.mts';
import { loadConfig, loadTemporalConfig, ConfigError } from './config.mts';
import { FLEET_USAGE, isFleetUserError, runFleet } from './fleetCli.mts';
import {
	abort,
	approve,
	createSchedule,
	deleteSchedule,
	extendCooldown,
	formatTimeline,
	inspect,
	listSchedules,
	startAttackResponse,
	temporalClient,
	timeline,
	type ScheduleKind,
} from './runbooks.mts';

const USAGE = `usage: secsvc <command> [options]

  worker                                   run the worker (config: env / SECSVC_CONFIG, see worker/README.md)
  start --plan FILE [--dry-run] [--wait]   start attack response (workflow id attack-response-<site>)
  approve SITE|ID [--reject] [--by NAME] [--reason TEXT]
  abort SITE|ID [--by NAME] [--reason TEXT]
  extend SITE|ID --seconds N               extend the cooldown
  inspect SITE|ID                          state and changes (running) or result (closed), as JSON
  timeline SITE|ID                         the runbook's audit trail, one line per step
  drift --desired FILE [--enforce] [--wait]
  report --site SITE [--hours N] [--markdown]
  schedule create watch --plan FILE --every 60s
  schedule create drift --desired FILE --every 1h [--enforce]
  schedule create report --site SITE --every 24h [--hours N]
  schedule delete SCHEDULE_ID
  schedule list
${FLEET_USAGE}`;

function opts(args: string[]) {
	const pos: string[] = [];
	const o: Record<string, string | boolean> = {};
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a.startsWith('--')) {
			const k = a.slice(2);
			const next = args[i + 1];
			if (next !== undefined && !next.startsWith('--') && !['dry-run', 'wait', 'reject', 'enforce', 'markdown', 'json'].includes(k)) {
				o[k] = next;
				i++;
			} else o[k] = true;
		} else pos.push(a);
	}
	return { pos, o };
}

const readJson = (f: unknown, what: string) => {
	if (typeof f !== 'string') throw new UsageError(`--${what}: is required (a JSON file)`);
	try {
		return JSON.parse(readFileSync(f, 'utf8')) as unknown;
	} catch (e) {
		throw new UsageError(`--${what} ${f}: must be a readable JSON file (${(e as Error).message})`);
	}
};

class UsageError extends Error {}

export async function run(argv: string[]): Promise<number> {
	const [cmd, ...rest] = argv;
	const { pos, o } = opts(rest);
	try {
		if (!cmd || cmd === 'help' || cmd === '--help') {
			process.stdout.write(USAGE);
			return cmd ? 0 : 2;
		}
		if (cmd === 'worker') {
			const { main } = await import('./main.mts');
			loadConfig(); // fail early with a clear message
			await main();
			return 0;
		}
		const t = loadTemporalConfig();
		let clientP: ReturnType<typeof temporalClient> | undefined;
		const conn = () => (clientP ??= temporalClient(t));
		const out = (v: unknown) => process.stdout.write(typeof v === 'string' ? v + '\n' : JSON.stringify(v, null, 2) + '\n');
		const need = (i: number, what: string) => {
			if (!pos[i]) throw new UsageError(`${what}: is required`);
			return pos[i];
		};
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
				await approve(await conn(), need(0, 'SITE|ID'), o.reject !== true, str(o.by), str(o.reason));
				out(o.reject ? 'rejected' : 'approved');
				return 0;
			case 'abort':
				await abort(await conn(), need(0, 'SITE|ID'), str(o.by), str(o.reason));
				out('abort sent');
				return 0;
			case 'extend': {
				const s = Number(o.seconds);
				if (!Number.isInteger(s) || s <= 0) throw new UsageError('--seconds: must be a positive integer');
				await extendCooldown(await conn(), need(0, 'SITE|ID'), s, str(o.by));
				out(`cooldown extended by ${s}s`);
				return 0;
			}
			case 'inspect':
				out(await inspect(await conn(), need(0, 'SITE|ID')));
				return 0;
			case 'timeline':
				out(formatTimeline(await timeline(await conn(), need(0, 'SITE|ID'))));
				return 0;
			case 'drift': {
				const desired = readJson(o.desired, 'desired') as { site_id?: string };
				const h = await (await conn()).workflow.start('driftAudit', {
					taskQueue: t.taskQueue,
					workflowId: `drift-audit-${desired.site_id}-${Date.now()}`,
					args: [{ desired, enforce: o.enforce === true }],
				});
				out(o.wait === false ? { workflowId: h.workflowId } : await h.result());
				return 0;
			}
			case 'report': {
				if (typeof o.site !== 'string') throw new UsageError('--site: is required');
				const r = (await (await conn()).workflow.execute('attackReport', {
					taskQueue: t.taskQueue,
					workflowId: `attack-report-${o.site}-${Date.now()}`,
					args: [{ site_id: o.site, periodHours: o.hours ? Number(o.hours) : undefined }],
				})) as { report: unknown; markdown: string };
				out(o.markdown ? r.markdown : r.report);
				return 0;
			}
			case 'schedule': {
				const sub = need(0, 'create|delete|list');
				if (sub === 'list') {
					out(await listSchedules(await conn()));
					return 0;
				}
				if (sub === 'delete') {
					await deleteSchedule(await conn(), need(1, 'SCHEDULE_ID'));
					out('deleted');
					return 0;
				}
				if (sub !== 'create') throw new UsageError(`schedule ${sub}: must be create, delete or list`);
				const kind = need(1, 'watch|drift|report') as ScheduleKind;
				const every = typeof o.every === 'string' ? o.every : kind === 'watch' ? '60s' : '24h';
				let site: string;
				let input: unknown;
				if (kind === 'watch') {
					const plan = readJson(o.plan, 'plan') as { site_id: string };
					site = plan.site_id;
					input = { plan };
				} else if (kind === 'drift') {
					const desired = readJson(o.desired, 'desired') as { site_id: string };
					site = desired.site_id;
					input = { desired, enforce: o.enforce === true };
				} else if (kind === 'report') {
					if (typeof o.site !== 'string') throw new UsageError('--site: is required');
					site = o.site;
					input = { site_id: site, periodHours: o.hours ? Number(o.hours) : undefined };
				} else throw new UsageError(`schedule create ${kind}: must be watch, drift or report`);
				const h = await createSchedule(await conn(), t.taskQueue, kind, site, every, input);
				out({ scheduleId: h.scheduleId, every });
				return 0;
			}
			case 'fleet':
				return await runFleet(pos, o, conn, t.taskQueue, out);
			default:
				throw new UsageError(`unknown command '${cmd}'\n${USAGE}`);
		}
	} catch (e) {
		if (e instanceof UsageError || e instanceof PlanError || e instanceof ConfigError || isFleetUserError(e)) {
			process.stderr.write(`secsvc: ${e.message}\n`);
			return 2;
		}
		process.stderr.write(`secsvc: ${redactText((e as Error).message ?? String(e))}\n`);
		return 1;
	}
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
