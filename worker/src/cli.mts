import { readFileSync } from 'node:fs';
import { redactText } from '../../api/redact.ts';
import { PlanError, parsePlan } from '../../workflows/plan.mts';
import { loadConfig, loadTemporalConfig, ConfigError } from './config.mts';
import { holds, release } from './coordination.mts';
import { getOperation, hasOperation } from '../../api/catalog/index.ts';
import { validateParams } from '../../api/client.ts';
import { ValidationError } from '../../api/errors.ts';
import { addBlock, BlockRefused, extendBlock, formatBlocks, listBlocks, removeBlock } from './blocks.mts';
import { BlockInputError } from '../../workflows/blocksShared.mts';
import type { Client as TemporalClient } from '@temporalio/client';
import {
	abort,
	decide,
	DecisionRefused,
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
  approve SITE|ID --by ID [--reason TEXT]   approve (Update: the decision comes back; refused when not an approver …)
  reject SITE|ID --by ID --reason TEXT     reject (a reason is required)
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
  holds SITE [--json]                      settings held at the site's coordinator (who, since, until, why)
  holds release SITE --owner WORKFLOW_ID   let go of what an owner holds (an owner that will never release)
  block add SITE DP ENTRY --seconds N --by ID --reason TEXT [--max-prefix N]
                                           block an address / start-end range / CIDR for N seconds (removed at expiry)
  block list SITE [--dp DP] [--json]       site, domain-port, range, expires at, by, why, state
  block extend SITE DP ENTRY --seconds N --by ID   new remaining time (longer or shorter)
  block remove SITE DP ENTRY --by ID       remove now
  call OPERATION --params JSON [--wait]    one API operation as a durable step (retried; HTTP-filter writes serialized)
`;

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
			case 'reject': {
				const approved = cmd === 'approve' && o.reject !== true;
				if (typeof o.by !== 'string' || !o.by.trim()) throw new UsageError('--by: is required (your identity, as listed in the plan\'s approval.approvers)');
				if (!approved && typeof o.reason !== 'string') throw new UsageError('--reason: is required to reject');
				out(await decide(await conn(), need(0, 'SITE|ID'), { approved, by: o.by, reason: str(o.reason), via: 'cli' }));
				return 0;
			}
			case 'block':
				return await blockCommand(pos, o, conn, t.taskQueue, out);
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
			case 'holds': {
				if (pos[0] === 'release') {
					if (typeof o.owner !== 'string') throw new UsageError('--owner: is required (the workflow id whose holds are let go)');
					out(await release(await conn(), need(1, 'SITE'), o.owner));
					return 0;
				}
				const held = await holds(await conn(), need(0, 'SITE'));
				out(o.json ? held : held.length ? held.map((h) => `${h.key}  ${h.mode} by ${h.owner} since ${h.since} until ${h.until} — ${h.reason}`).join('\n') : 'nothing held');
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
			default:
				throw new UsageError(`unknown command '${cmd}'\n${USAGE}`);
		}
	} catch (e) {
		if (
			e instanceof UsageError ||
			e instanceof PlanError ||
			e instanceof ConfigError ||
			e instanceof ValidationError ||
			e instanceof BlockInputError ||
			e instanceof BlockRefused ||
			e instanceof DecisionRefused
		) {
			process.stderr.write(`secsvc: ${e.message}\n`);
			return 2;
		}
		process.stderr.write(`secsvc: ${redactText((e as Error).message ?? String(e))}\n`);
		return 1;
	}
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

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
		return pos[i];
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
			const req = { entry: arg(3, 'ENTRY'), seconds: int('seconds'), by: by(), reason: o.reason, via: 'cli' as const };
			out(await addBlock(await conn(), taskQueue, arg(1, 'SITE'), arg(2, 'DP'), req, maxPrefix));
			return 0;
		}
		case 'list': {
			const blocks = await listBlocks(await conn(), arg(1, 'SITE'), typeof o.dp === 'string' ? o.dp : undefined);
			out(o.json ? blocks : formatBlocks(blocks));
			return 0;
		}
		case 'extend':
			out(await extendBlock(await conn(), arg(1, 'SITE'), arg(2, 'DP'), { entry: arg(3, 'ENTRY'), seconds: int('seconds'), by: by(), via: 'cli' }));
			return 0;
		case 'remove':
			out(await removeBlock(await conn(), arg(1, 'SITE'), arg(2, 'DP'), { entry: arg(3, 'ENTRY'), by: by(), via: 'cli' }));
			return 0;
		default:
			throw new UsageError(`block ${sub ?? ''}: must be add, list, extend or remove`);
	}
}
