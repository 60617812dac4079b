import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** One API operation as a durable step (`secsvc call`): its writes are mitigation. */
export const durableCallPlaybook = {
	type: WORKFLOW_TYPE.durableCall,
	id: 'call-<operation>-<time>',
	versioning: 'AUTO_UPGRADE',
	budget: 'mitigate',
	commands: {
		call: {
			usage: `  call OPERATION --params JSON [--wait] [--allow-wide-block REASON --by ID]
                                           one API operation as a durable step (retried; HTTP-filter writes serialized);
                                           a block is checked by the blast-radius guard before anything starts;
                                           --allow-wide-block lifts only its widest-prefix rule (recorded)`,
			startsWorkflow: () => true,
		},
	},
} as const satisfies Playbook;
