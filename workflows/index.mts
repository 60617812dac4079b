/**
 * Workflow entry point for the worker's bundle: every export here is a workflow type.
 *
 * Which build each type runs on (Worker Deployment Versioning; rollout in worker/README.md), declared for EVERY type:
 *  - attackResponse is PINNED (attackResponse.mts): a runbook finishes on the build it started on;
 *  - every other type is AUTO_UPGRADE (below): short playbooks and the entity workflows (site coordinator, blocks, fleet
 *    watchers) move to the current build at their next task and guard changed code with `patched()`.
 * The worker's default behaviour is PINNED (worker/src/process/deploy.mts) and is NOT relied on by any type: the SDK completes
 * workflow-task heartbeats (a local activity running past ~80 % of the task timeout) with the worker's default, not
 * with the workflow's declared behaviour (test/temporal/versioning-default.test.mts shows it). With
 * an AUTO_UPGRADE default, such a heartbeat made a PINNED runbook AUTO_UPGRADE on the server until its next task, so a
 * rollout at that moment could move it to new code. A PINNED default only ever keeps a short playbook on its build for
 * one more task.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { attackReport } from './report/attackReport.mts';
import { attackWatch } from './attackWatch/attackWatch.mts';
import { blocks } from './blocks/blocks.mts';
import { offenders } from './blocks/offenders.mts';
import { driftAudit } from './drift/driftAudit.mts';
import { durableCall } from './durableCall/durableCall.mts';
import { fleetWatch } from './fleet/fleetWatch.mts';
import { rateBudget } from './rateBudget/rateBudget.mts';
import { siteCoordinator } from './coordinator/siteCoordinator.mts';
import { tenant } from './tenant/tenant.mts';

const AUTO_UPGRADING = {
	attackWatch,
	driftAudit,
	attackReport,
	siteCoordinator,
	durableCall,
	fleetWatch,
	blocks,
	offenders,
	tenant,
	rateBudget,
};
for (const wf of Object.values(AUTO_UPGRADING))
	setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, wf as (...args: never[]) => Promise<unknown>);

export { attackResponse } from './attackResponse/attackResponse.mts';
export {
	attackWatch,
	driftAudit,
	attackReport,
	siteCoordinator,
	durableCall,
	fleetWatch,
	blocks,
	offenders,
	tenant,
	rateBudget,
};
