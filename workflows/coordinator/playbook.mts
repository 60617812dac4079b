import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** The site's coordinator (entity workflow): who holds which setting; makes no API call. */
export const siteCoordinatorPlaybook = {
	type: WORKFLOW_TYPE.siteCoordinator,
	id: 'site-<site>',
	versioning: 'AUTO_UPGRADE',
	commands: {
		holds: {
			usage: `  holds SITE [--json]                      settings held at the site's coordinator (who, since, until, why)
  holds release SITE --owner WORKFLOW_ID   let go of what an owner holds (an owner that will never release)`,
		},
	},
} as const satisfies Playbook;
