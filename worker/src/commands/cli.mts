import { pathToFileURL } from 'node:url';
import { redactText } from '../../../api/redact.ts';
import { PlanError } from '../../../api/runbook/plan.ts';
import { DesiredStateError } from '../../../api/runbook/desired.ts';
import { loadConfig, loadTemporalConfig, ConfigError } from '../process/config.mts';
import { ValidationError } from '../../../api/errors.ts';
import { isFleetUserError } from '../../../workflows/fleet/command.mts';
import { BlockRefused } from '../../../workflows/blocks/client.mts';
import { NoPollers, requirePollers, startsWorkflow } from '../temporal/pollers.mts';
import { BlockInputError } from '../../../workflows/blocks/shared.mts';
import { PLAYBOOKS } from '../../../workflows/playbooks.mts';
import { playbookCommand } from '../playbooks.mts';
import { DecisionRefused, ListFilterError } from '../../../workflows/attackResponse/client.mts';
import { failureText } from '../temporal/failureText.mts';
import { temporalClient } from '../process/temporalClient.mts';
import { opts, runbookArg, text, UsageError, type Command } from './args.mts';
import { allow } from './allow.mts';
import { deploy } from './deploy.mts';
import { schedule } from './schedule.mts';
import { runSandbox, SANDBOX_USAGE } from './sandbox.mts';

/** The `secsvc` command: one module per command (this folder), found by name here. `worker` runs the worker process. */

const USAGE = `usage: secsvc <command> [options]

  worker                                   run the worker (config: env / SECSVC_CONFIG, see worker/README.md)
${SANDBOX_USAGE}
${PLAYBOOKS.flatMap((p) => Object.values(p.commands ?? {}).map((c) => c.usage + '\n')).join('')}\
  schedule create watch --plan FILE --every 60s
  schedule create drift --desired FILE --every 1h [--enforce]
  schedule create report --site SITE --every 24h [--hours N] [--with-html]   (result carries the HTML report)
  schedule delete SCHEDULE_ID
  schedule list                            health of every schedule; exit 3 when one is failing or stuck
  allow SITE [RANGE…] --reason TEXT [--dp DP] [--from-config] [--json]
                                           the allow-list wins: ends at once the live expiring blocks and runbook
                                           entries overlapping the ranges (or guard.protectedRanges), each with why;
                                           \`call applicationProtection.ipWhitelist.add\` does it for its entry
  deploy status [--json]                   builds of the worker deployment, routing, build of each running runbook
  deploy set-current BUILD_ID              roll a build out: new runbooks go to it (pinned ones stay on theirs)
  deploy retire-check [BUILD_ID] [--json]  which old builds have no pinned runbook left (exit 1: BUILD_ID not yet)
`;

/** The commands of no playbook (the playbooks' own come from their rows in ../playbooks.mts). */
const COMMANDS: Record<string, Command> = { allow, schedule, deploy };

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
		if (cmd === 'sandbox') return await runSandbox(o, io);
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
		const command = COMMANDS[cmd] ?? playbookCommand(cmd);
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

// Run as a file (`node worker/dist/cli.mjs …`, the compiled command: ../process/build.mts ensureCliBuild) it runs the
// command; imported (bin/secsvc.mjs, the tests' runCli) it only exports `run`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
	void run(process.argv.slice(2)).then((code) => (process.exitCode = code));
