import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import type { OperationActivities } from '../pure/activityTypes.mts';
import type { attackResponse } from '../attackResponse/attackResponse.mts';
import { WORKFLOW_TYPE, workflowIdFor } from '../../api/runbook/contract.ts';
import { parsePlanInWorker } from '../input/parsePlan.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { runbookStartRules } from '../input/inputRules.mts';

/**
 * Run by a Temporal Schedule per site: checks is_under_attack and starts attackResponse with the workflow id
 * `attack-response-<site>`. The id makes the server refuse a second one while one runs: at most one per site.
 */

export interface AttackWatchInput {
	plan: unknown;
	dryRun?: boolean;
}

export interface AttackWatchResult {
	site_id: string;
	underAttack: boolean;
	started: boolean;
	workflowId: string;
	reason: string;
}

const acts = proxyActivities<OperationActivities>({
	startToCloseTimeout: '20s',
	retry: { maximumAttempts: 5, maximumInterval: '5s' },
});

export async function attackWatch(input: AttackWatchInput): Promise<AttackWatchResult> {
	failOn('plan', problems(input, runbookStartRules));
	const plan = await parsePlanInWorker(input.plan);
	const workflowId = workflowIdFor(plan.site_id);
	const r = await acts['dashboard.isUnderAttack']({ site_id: plan.site_id });
	const underAttack = Number(r?.status) === 1;
	if (!underAttack)
		return { site_id: plan.site_id, underAttack, started: false, workflowId, reason: 'not under attack' };
	try {
		await startChild<typeof attackResponse>(WORKFLOW_TYPE.attackResponse, {
			workflowId,
			args: [{ plan: input.plan, dryRun: input.dryRun }],
			taskQueue: workflowInfo().taskQueue,
			parentClosePolicy: ParentClosePolicy.ABANDON,
		});
		return { site_id: plan.site_id, underAttack, started: true, workflowId, reason: 'under attack: runbook started' };
	} catch (e) {
		if (
			e instanceof WorkflowExecutionAlreadyStartedError ||
			(e as Error)?.name === 'WorkflowExecutionAlreadyStartedError'
		)
			return {
				site_id: plan.site_id,
				underAttack,
				started: false,
				workflowId,
				reason: 'a runbook is already running for this site',
			};
		throw e;
	}
}
