import type { Client } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { durableCall } from './durableCall.mts';

/** Starts one API operation as a durable step (typed by the workflow function): id `call-<operation>-<time>`. */
export function startDurableCall(
	client: Client,
	taskQueue: string,
	input: Parameters<typeof durableCall>[0],
	workflowId = `call-${input.op}-${Date.now()}`,
) {
	return client.workflow.start<typeof durableCall>(WORKFLOW_TYPE.durableCall, { taskQueue, workflowId, args: [input] });
}
