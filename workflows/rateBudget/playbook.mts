import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** The cluster's request budget (entity workflow per task queue); makes no API call. */
export const rateBudgetPlaybook = {
	type: WORKFLOW_TYPE.rateBudget,
	id: 'secsvc-rate-budget-<task queue>',
	versioning: 'AUTO_UPGRADE',
} as const satisfies Playbook;
