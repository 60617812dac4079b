import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** A tenant (entity workflow): the cluster tokens of one customer; `secsvc tenants` has its own client (codec). */
export const tenantPlaybook = {
	type: WORKFLOW_TYPE.tenant,
	id: 'tenant-<customer>',
	versioning: 'AUTO_UPGRADE',
	commands: {
		tenants: {
			usage: `  tenants add|install|list|show|remove, entrance   customers the app acts for (docs/worker/tenants.md)`,
		},
	},
} as const satisfies Playbook;
