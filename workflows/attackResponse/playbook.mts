import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** The attack response runbook: one per site, finishes on its build; every write and hold-the-line check is mitigation. */
export const attackResponsePlaybook = {
	type: WORKFLOW_TYPE.attackResponse,
	id: 'attack-response-<site>',
	versioning: 'PINNED',
	budget: 'mitigate',
	commands: {
		start: {
			usage: `  start --plan FILE [--dry-run] [--wait] [--login]   start attack response (workflow id attack-response-<site>); SECSVC_ID_TOKEN or --login: the starter's proof`,
			startsWorkflow: () => true,
		},
		approve: {
			usage: `  approve SITE|ID [--login | --by ID] [--reason TEXT]   approve (Update: the decision comes back; refused when not an approver …)`,
		},
		reject: {
			usage: `  reject SITE|ID [--login | --by ID] --reason TEXT     reject (a reason is required)
                                           proof of who decides: SECSVC_ID_TOKEN, or --login [browser|device] at the
                                           identity provider (the default when SECSVC_OIDC_ISSUER is set); --by only without one`,
		},
		'id-token': {
			usage: `  id-token [SITE|ID] [--login device]      log in at the identity provider, print your ID token (n8n's Start /
                                           Decide › ID Token); with SITE bound to that runbook's open gate`,
		},
		abort: { usage: `  abort SITE|ID [--by NAME] [--reason TEXT]` },
		extend: { usage: `  extend SITE|ID --seconds N               extend the cooldown` },
		inspect: {
			usage: `  inspect SITE|ID                          state and changes (running) or result (closed), as JSON`,
		},
		list: {
			usage: `  list [--site S] [--phase P] [--running] [--json]
                                           attack responses (visibility query on the search attributes);
                                           --phase mitigation = tightening, blacklisting, rate-limiting or waiting`,
		},
		timeline: { usage: `  timeline SITE|ID                         the runbook's audit trail, one line per step` },
	},
} as const satisfies Playbook;
