/**
 * The composition root of the playbooks: each playbook's record (workflows/<folder>/playbook.mts) bound to the code the
 * bundle must not see — its activities factory and its CLI commands. One row per playbook; the worker registers the
 * activities from here (process/worker.mts) and the CLI finds its commands here (commands/cli.mts).
 */
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import type { Playbook } from '../../workflows/playbooks.mts';
import { attackResponsePlaybook } from '../../workflows/attackResponse/playbook.mts';
import { createIdentityActivities } from '../../workflows/attackResponse/activitiesIdentity.mts';
import { createHoldDownActivities } from './activities/holdDown.mts';
import {
	abortCommand,
	decideCommand,
	idTokenCommand,
	extend,
	inspectCommand,
	list,
	start,
	timelineCommand,
} from '../../workflows/attackResponse/command.mts';
import { blocksPlaybook } from '../../workflows/blocks/playbook.mts';
import { createBlocksActivities } from '../../workflows/blocks/activities.mts';
import { block } from '../../workflows/blocks/command.mts';
import { siteCoordinatorPlaybook } from '../../workflows/coordinator/playbook.mts';
import { createCoordinationActivities } from '../../workflows/coordinator/activities.mts';
import { holds } from '../../workflows/coordinator/command.mts';
import { driftAuditPlaybook } from '../../workflows/drift/playbook.mts';
import { drift } from '../../workflows/drift/command.mts';
import { durableCallPlaybook } from '../../workflows/durableCall/playbook.mts';
import { call } from '../../workflows/durableCall/command.mts';
import { fleetWatchPlaybook } from '../../workflows/fleet/playbook.mts';
import { createFleetActivities } from '../../workflows/fleet/activities.mts';
import { runFleet } from '../../workflows/fleet/command.mts';
import { attackReportPlaybook } from '../../workflows/report/playbook.mts';
import { report } from '../../workflows/report/command.mts';
import type { Command } from './commands/args.mts';
import type { WorkerConfig } from './process/config.mts';

/** What an activities factory may receive: the API client, the worker's config, the Temporal client. */
export interface ActivityDeps {
	client: Client;
	cfg: WorkerConfig;
	temporalClient: () => TemporalClient;
}
type Activities = Record<string, (...a: never[]) => Promise<unknown>>;

/** A record with its code: one command for each the record names (the CLI's USAGE and poller check read the record). */
interface Slice<P extends Playbook = Playbook> {
	playbook: P;
	activities?: (d: ActivityDeps) => object;
	commands?: { [K in keyof P['commands']]: Command };
}
const slice = <P extends Playbook>(s: Slice<P>): Slice => s as unknown as Slice;

export const SLICES: readonly Slice[] = [
	slice({
		playbook: attackResponsePlaybook,
		activities: (d) => ({
			...createIdentityActivities(d.cfg.identity, d.cfg.unverifiedApprovals === true),
			...createHoldDownActivities(d.temporalClient),
		}),
		commands: {
			start,
			approve: decideCommand,
			reject: decideCommand,
			'id-token': idTokenCommand,
			abort: abortCommand,
			extend,
			inspect: inspectCommand,
			list,
			timeline: timelineCommand,
		},
	}),
	slice({ playbook: driftAuditPlaybook, commands: { drift } }),
	slice({ playbook: attackReportPlaybook, commands: { report } }),
	slice({
		playbook: siteCoordinatorPlaybook,
		activities: (d) => createCoordinationActivities(d.temporalClient),
		commands: { holds },
	}),
	slice({
		playbook: blocksPlaybook,
		activities: (d) => createBlocksActivities(d.client, d.temporalClient),
		commands: { block },
	}),
	slice({ playbook: durableCallPlaybook, commands: { call } }),
	slice({
		playbook: fleetWatchPlaybook,
		activities: (d) => createFleetActivities(d.client, { rateLimitCodes: d.cfg.api.rateLimitCodes }),
		commands: { fleet: ({ pos, o, conn, t, out }) => runFleet(pos, o, conn, t.taskQueue, out) },
	}),
];

/** Every playbook's own activities (the per-operation ones come from activities/operations.mts). */
export function playbookActivities(d: ActivityDeps): Activities {
	return Object.assign({}, ...SLICES.map((s) => s.activities?.(d) ?? {}));
}

/** The command of a name, from the playbook that names it. */
export function playbookCommand(name: string): Command | undefined {
	for (const s of SLICES) {
		const c = (s.commands as Record<string, Command> | undefined)?.[name];
		if (c) return c;
	}
	return undefined;
}
