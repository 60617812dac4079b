/**
 * Workflow entry point for the worker's bundle: every export here is a workflow type.
 *
 * Which build each type runs on (Worker Deployment Versioning; rollout in worker/README.md), declared for EVERY type:
 *  - attackResponse is PINNED (its record, attackResponse/playbook.mts): a runbook finishes on the build it started on;
 *  - every other type is AUTO_UPGRADE (their records): short playbooks and the entity workflows (site coordinator, blocks, fleet
 *    watchers) move to the current build at their next task and guard changed code with `patched()`.
 * The worker's default behaviour is PINNED (worker/src/process/deploy.mts) and is NOT relied on by any type: the SDK completes
 * workflow-task heartbeats (a local activity running past ~80 % of the task timeout) with the worker's default, not
 * with the workflow's declared behaviour (test/temporal/versioning-default.test.mts shows it). With
 * an AUTO_UPGRADE default, such a heartbeat made a PINNED runbook AUTO_UPGRADE on the server until its next task, so a
 * rollout at that moment could move it to new code. A PINNED default only ever keeps a short playbook on its build for
 * one more task.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import type { WorkflowType } from '../api/runbook/contract.ts';
import { PLAYBOOKS } from './playbooks.mts';
import * as registered from './registered.mts';

// Each type's versioning behaviour comes from its playbook record. Every type has its function and every function its
// type: `_exact` fails the typecheck otherwise.
type Fn = (...args: never[]) => Promise<unknown>;
const _exact: [Exclude<WorkflowType, keyof typeof registered>, Exclude<keyof typeof registered, WorkflowType>] extends [
	never,
	never,
]
	? true
	: false = true;
const WORKFLOWS: Record<WorkflowType, unknown> = registered;
for (const p of PLAYBOOKS) setWorkflowOptions({ versioningBehavior: p.versioning }, WORKFLOWS[p.type] as Fn);

export * from './registered.mts';
