import type { Client } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { attackReport } from './attackReport.mts';

/** Starts an attack report (typed by the workflow function): id `attack-report-<site>-<time>` unless one is given. */
export function startAttackReport(
	client: Client,
	taskQueue: string,
	input: Parameters<typeof attackReport>[0],
	workflowId = `attack-report-${input.site_id}-${Date.now()}`,
) {
	return client.workflow.start<typeof attackReport>(WORKFLOW_TYPE.attackReport, {
		taskQueue,
		workflowId,
		args: [input],
	});
}
