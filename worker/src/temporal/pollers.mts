import type { Client } from '@temporalio/client';
import { commandOf } from '../../../workflows/playbooks.mts';

/**
 * Before a command starts a workflow: does a worker poll its task queue? Temporal accepts a start on any queue name,
 * so a typo in TEMPORAL_TASK_QUEUE (or the config's temporal.taskQueue) would start a workflow nobody runs, RUNNING
 * forever. DescribeTaskQueue lists the workflow pollers the server has seen within its poller history (5 minutes by
 * default); none means nothing would run, so the command stops before it starts anything.
 */

export class NoPollers extends Error {
	override name = 'NoPollers';
}

const TQ_KIND_NORMAL = 1;
const TQ_TYPE_WORKFLOW = 1;

export async function requirePollers(client: Client, taskQueue: string): Promise<void> {
	const r = await client.workflowService.describeTaskQueue({
		namespace: client.options.namespace,
		taskQueue: { name: taskQueue, kind: TQ_KIND_NORMAL },
		taskQueueType: TQ_TYPE_WORKFLOW,
	});
	if (!r.pollers?.length)
		throw new NoPollers(
			`TEMPORAL_TASK_QUEUE: no worker polls task queue "${taskQueue}" (check the name against the worker's TEMPORAL_TASK_QUEUE / temporal.taskQueue, and that a worker runs); nothing was started`,
		);
}

/** Whether a command line starts a workflow on the configured task queue (its playbook record says; those check first). */
export function startsWorkflow(cmd: string, pos: string[]): boolean {
	return commandOf(cmd)?.command.startsWorkflow?.(pos) ?? false;
}
