import { pathSegment } from '../../../../api/limits';
import type { Env } from './types';

/**
 * Before a Start or a block Add sends anything: does a worker poll the Task Queue? Temporal accepts a start on any
 * queue name, so a typo would start a workflow nobody runs (RUNNING forever, and the node would say started).
 * DescribeTaskQueue (GET …/task-queues/{name}, workflow type) lists the workflow pollers the server has seen within
 * its poller history (5 minutes by default); none means nobody will run what we start, so the item is refused
 * naming the field. A describe that itself fails refuses too (nothing is started on a queue we could not check).
 */
export async function requirePollers(env: Env, field: string, taskQueue: string): Promise<void> {
	const url = env.workflowsUrl.replace(/\/workflows$/, `/task-queues/${pathSegment(taskQueue)}`);
	const r = await env.call('GET', url, undefined, { taskQueueType: 'TASK_QUEUE_TYPE_WORKFLOW' });
	if (r.status >= 400)
		env.fail(
			field,
			`could not check that a worker polls task queue "${taskQueue}" (HTTP ${r.status}: ${String(r.body.message ?? '').slice(0, 200)})`,
		);
	const pollers = r.body.pollers;
	if (!Array.isArray(pollers) || pollers.length === 0)
		env.fail(
			field,
			`no worker polls task queue "${taskQueue}" (check the name against the worker's TEMPORAL_TASK_QUEUE, and that a worker runs)`,
		);
}
