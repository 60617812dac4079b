import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** One site's attack watch, run by a schedule (`secsvc schedule create watch`); its checks are reporting reads. */
export const attackWatchPlaybook = {
	type: WORKFLOW_TYPE.attackWatch,
	id: 'secsvc-watch-<site>-run',
	versioning: 'AUTO_UPGRADE',
	budget: 'report',
	schedule: { kind: 'watch', every: '60s' },
} as const satisfies Playbook;
