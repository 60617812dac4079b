/**
 * The playbooks, as data: one descriptor record per playbook folder (`<folder>/playbook.mts`), read by everything that
 * used to keep its own table — the bundle entry (versioning, index.mts), the worker's request budget (budget class,
 * worker/src/service/priority.mts), the CLI (commands, their USAGE lines and which of them start a workflow,
 * worker/src/commands/cli.mts and temporal/pollers.mts) and the schedules (schedule kind, temporal/schedules.mts).
 * Pure (bundled): the activities factory and the command code a record names are bound to it by the worker's
 * composition root (worker/src/playbooks.mts), which the bundle never imports.
 */
import type { PriorityClass } from '../api/rateBudget.ts';
import type { ScheduleKind, WorkflowType } from '../api/runbook/contract.ts';
import { attackResponsePlaybook } from './attackResponse/playbook.mts';
import { attackWatchPlaybook } from './attackWatch/playbook.mts';
import { blocksPlaybook, offendersPlaybook } from './blocks/playbook.mts';
import { siteCoordinatorPlaybook } from './coordinator/playbook.mts';
import { driftAuditPlaybook } from './drift/playbook.mts';
import { durableCallPlaybook } from './durableCall/playbook.mts';
import { fleetWatchPlaybook } from './fleet/playbook.mts';
import { rateBudgetPlaybook } from './rateBudget/playbook.mts';
import { attackReportPlaybook } from './report/playbook.mts';
import { tenantPlaybook } from './tenant/playbook.mts';

export type { ScheduleKind };

/** A CLI command of a playbook: its USAGE lines and whether a command line starts a workflow (pollers checked first). */
export interface PlaybookCommand {
	usage: string;
	startsWorkflow?: (pos: string[]) => boolean;
}

export interface Playbook {
	/** The registered workflow type name (api/runbook/contract.ts WORKFLOW_TYPE): recorded histories carry it. */
	type: WorkflowType;
	/** Its workflow id rule, as operators see it (the function that makes it lives beside the contract). */
	id: string;
	/** PINNED: a run finishes on the build it started on; AUTO_UPGRADE: moves to the current build at its next task. */
	versioning: 'PINNED' | 'AUTO_UPGRADE';
	/** The request budget's class of its API calls (docs/rate-budget.md); a function when it depends on the activity. */
	budget?: PriorityClass | ((activityType: string) => PriorityClass);
	/** Activities whose calls take a class wherever they run. */
	activityBudget?: Record<string, PriorityClass>;
	/** The schedule kind that starts it, with the interval a schedule gets without --every. */
	schedule?: { kind: ScheduleKind; every: string };
	/** Its `secsvc` commands by name. */
	commands?: Record<string, PlaybookCommand>;
}

/**
 * The files of a playbook folder that run in the worker or the CLI, never in the bundle: its activities factories
 * (`activities*.mts`), its client (`client*.mts`) and its commands (`command*.mts`). Workflow code imports them only
 * with `import type`; the bundle's source hash leaves them out.
 */
export const HOST_FILE = /(^|\/)(activities|client|command)([A-Z]\w*)?\.mts$/;

/** Every playbook; the order is the CLI's USAGE order. */
export const PLAYBOOKS: readonly Playbook[] = [
	attackResponsePlaybook,
	driftAuditPlaybook,
	attackReportPlaybook,
	attackWatchPlaybook,
	siteCoordinatorPlaybook,
	tenantPlaybook,
	blocksPlaybook,
	offendersPlaybook,
	durableCallPlaybook,
	fleetWatchPlaybook,
	rateBudgetPlaybook,
];

/** The playbook of a workflow type, if it is one of ours. */
export const playbookOf = (type: string | undefined): Playbook | undefined => PLAYBOOKS.find((p) => p.type === type);

/** The playbook that owns a command, and the command. */
export function commandOf(name: string): { playbook: Playbook; command: PlaybookCommand } | undefined {
	for (const playbook of PLAYBOOKS) {
		const command = playbook.commands?.[name];
		if (command) return { playbook, command };
	}
	return undefined;
}

/** The playbook a schedule kind starts. */
export const scheduledBy = (kind: string): Playbook | undefined => PLAYBOOKS.find((p) => p.schedule?.kind === kind);
