import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import { FLEET_CHECK_ACTIVITY } from './shared.mts';
import type { Playbook } from '../playbooks.mts';

/** Fleet watchers (`secsvc fleet`): their checks are the watch class, the batch activity wherever it runs. */
export const fleetWatchPlaybook = {
	type: WORKFLOW_TYPE.fleetWatch,
	id: 'fleet-watch-<fleet>-<n>',
	versioning: 'AUTO_UPGRADE',
	budget: 'watch',
	activityBudget: { [FLEET_CHECK_ACTIVITY]: 'watch' },
	commands: {
		fleet: {
			usage: `  fleet apply FILE [--dry-run] [--json]     make the fleet's watchers match FILE (examples/fleet/fleet.json)
  fleet status [--fleet NAME] [--json]     each site's last check, state and runbook`,
			startsWorkflow: (pos: string[]) => pos[0] === 'apply',
		},
	},
} as const satisfies Playbook;
