import { redactText } from '../../../api/redact.ts';
import { PlanError } from '../../../api/runbook/plan.ts';
import { DesiredStateError } from '../../../api/runbook/desired.ts';
import { loadConfig, loadTemporalConfig, ConfigError } from '../process/config.mts';
import { ValidationError } from '../../../api/errors.ts';
import { FLEET_USAGE, isFleetUserError, runFleet } from '../../../workflows/fleet/command.mts';
import { BlockRefused } from '../../../workflows/blocks/client.mts';
import { NoPollers, requirePollers, startsWorkflow } from '../temporal/pollers.mts';
import { BlockInputError, MAX_BULK_BLOCKS } from '../../../workflows/blocks/shared.mts';
import {
	DecisionRefused,
	failureText,
	ListFilterError,
	temporalClient,
} from '../../../workflows/attackResponse/client.mts';
import { opts, runbookArg, text, UsageError, type Command } from './args.mts';
import {
	abortCommand,
	decideCommand,
	extend,
	inspectCommand,
	list,
	start,
	timelineCommand,
} from '../../../workflows/attackResponse/command.mts';
import { block } from '../../../workflows/blocks/command.mts';
import { call } from '../../../workflows/durableCall/command.mts';
import { deploy } from './deploy.mts';
import { drift } from '../../../workflows/drift/command.mts';
import { holds } from '../../../workflows/coordinator/command.mts';
import { report } from '../../../workflows/report/command.mts';
import { schedule } from './schedule.mts';

/** The `secsvc` command: one module per command (this folder), found by name here. `worker` runs the worker process. */

const USAGE = `usage: secsvc <command> [options]

  worker                                   run the worker (config: env / SECSVC_CONFIG, see worker/README.md)
  start --plan FILE [--dry-run] [--wait] [--login]   start attack response (workflow id attack-response-<site>); SECSVC_ID_TOKEN or --login: the starter's proof
  approve SITE|ID [--login | --by ID] [--reason TEXT]   approve (Update: the decision comes back; refused when not an approver …)
  reject SITE|ID [--login | --by ID] --reason TEXT     reject (a reason is required)
                                           proof of who decides: SECSVC_ID_TOKEN, or --login [browser|device] at the
                                           identity provider (the default when SECSVC_OIDC_ISSUER is set); --by only without one
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
  tenants add|install|list|show|remove, entrance   customers the app acts for (docs/worker/tenants.md)
  block add SITE DP ENTRY [ENTRY…] --seconds N --by ID --reason TEXT [--max-prefix N]
  block add SITE [DP] --file FILE --seconds N --by ID --reason TEXT [--max-site-blocks N]
                                           a threat feed: one entry a line (\`DP ENTRY\` a line without DP; # comments),
                                           merged into ranges per domain-port, refused whole (nothing sent) past the
                                           site's limit (SECSVC_MAX_SITE_BLOCKS, default 20000 ranges) or its shards
                                           block addresses / start-end ranges / CIDRs for N seconds (removed at expiry);
                                           several entries go in bulk adds (one Update per ${MAX_BULK_BLOCKS}); a bad entry is
                                           named (ENTRY 2 / --file line 7) and nothing is sent
  block list SITE [--dp DP] [--json]       site, domain-port, range, expires at, by, why, state
  block extend SITE DP ENTRY --seconds N --by ID   new remaining time (longer or shorter)
  block remove SITE DP ENTRY --by ID       remove now
  call OPERATION --params JSON [--wait] [--allow-wide-block REASON --by ID]
                                           one API operation as a durable step (retried; HTTP-filter writes serialized);
                                           a block is checked by the blast-radius guard before anything starts;
                                           --allow-wide-block lifts only its widest-prefix rule (recorded)
  deploy status [--json]                   builds of the worker deployment, routing, build of each running runbook
  deploy set-current BUILD_ID              roll a build out: new runbooks go to it (pinned ones stay on theirs)
  deploy retire-check [BUILD_ID] [--json]  which old builds have no pinned runbook left (exit 1: BUILD_ID not yet)
${FLEET_USAGE}`;

/** Every command but `worker` and `help`, by name. */
const COMMANDS: Record<string, Command> = {
	start,
	approve: decideCommand,
	reject: decideCommand,
	abort: abortCommand,
	extend,
	inspect: inspectCommand,
	list,
	timeline: timelineCommand,
	drift,
	report,
	holds,
	call,
	schedule,
	deploy,
	block,
	fleet: ({ pos, o, conn, t, out }) => runFleet(pos, o, conn, t.taskQueue, out),
};

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
		// tenants: their own Temporal client with the payload codec (tenants.mts)
		if (cmd === 'tenants')
			return await (await import('../../../workflows/tenant/command.mts')).runTenants({ pos, o }, io);
		if (cmd === 'entrance') return await (await import('../../../workflows/tenant/command.mts')).runEntrance(o, io);
		if (cmd === 'worker') {
			const { main } = await import('../process/main.mts');
			loadConfig(); // fail early with a clear message
			return await main();
		}
		const t = loadTemporalConfig();
		const conn = () => (clientP ??= temporalClient(t));
		// A command that starts a workflow checks that a worker polls its queue when it first connects, i.e. after its
		// own argument checks (pollers.mts).
		let polled: Promise<void> | undefined;
		const connChecked = async () => {
			const c = await conn();
			await (polled ??= requirePollers(c, t.taskQueue));
			return c;
		};
		const out = (v: unknown) => io.out(typeof v === 'string' ? v + '\n' : JSON.stringify(v, null, 2) + '\n');
		const need = (i: number, what: string) => {
			if (!pos[i]) throw new UsageError(`${what}: is required`);
			return what === 'SITE|ID' ? runbookArg(pos[i]) : (text(pos[i], what) as string);
		};
		const command = COMMANDS[cmd];
		if (!command) throw new UsageError(`unknown command '${cmd}'\n${USAGE}`);
		return await command({
			cmd,
			pos,
			o,
			t,
			conn: startsWorkflow(cmd, pos) ? connChecked : conn,
			out,
			err: io.err,
			need,
		});
	} catch (e) {
		if (
			e instanceof UsageError ||
			e instanceof PlanError ||
			e instanceof DesiredStateError ||
			e instanceof ConfigError ||
			e instanceof ValidationError ||
			(e as Error)?.name === 'DeployError' ||
			e instanceof ListFilterError ||
			isFleetUserError(e) ||
			e instanceof BlockInputError ||
			e instanceof BlockRefused ||
			e instanceof DecisionRefused ||
			e instanceof NoPollers
		) {
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
