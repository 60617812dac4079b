import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** The drift audit: desired state vs live policy, on demand or by schedule; its reads are reporting. */
export const driftAuditPlaybook = {
	type: WORKFLOW_TYPE.driftAudit,
	id: 'drift-audit-<site>-<time> (schedule: secsvc-drift-<site>-run)',
	versioning: 'AUTO_UPGRADE',
	budget: 'report',
	schedule: { kind: 'drift', every: '24h' },
	commands: { drift: { usage: `  drift --desired FILE [--enforce] [--wait]`, startsWorkflow: () => true } },
} as const satisfies Playbook;
