import type { Client } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { driftAudit } from './driftAudit.mts';

/** Starts a drift audit (typed by the workflow function): id `drift-audit-<site>-<time>` unless one is given. */
export function startDriftAudit(
	client: Client,
	taskQueue: string,
	input: Parameters<typeof driftAudit>[0],
	workflowId = `drift-audit-${input.desired.site_id}-${Date.now()}`,
) {
	return client.workflow.start<typeof driftAudit>(WORKFLOW_TYPE.driftAudit, { taskQueue, workflowId, args: [input] });
}
