import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import { MAX_BULK_BLOCKS } from './shared.mts';
import type { Playbook } from '../playbooks.mts';

/** Expiring blocks, one workflow per shard of a domain-port: adding is mitigation, the expiry's removals are reverts. */
export const blocksPlaybook = {
	type: WORKFLOW_TYPE.blocks,
	id: 'blocks-<site>-<dp>[-n]',
	versioning: 'AUTO_UPGRADE',
	budget: (activityType: string) => (/^blocks\.(add|addMany|register)$/.test(activityType) ? 'mitigate' : 'revert'),
	commands: {
		block: {
			usage: `  block add SITE DP ENTRY [ENTRY…] --seconds N --by ID --reason TEXT [--max-prefix N]
  block add SITE [DP] --file FILE --seconds N --by ID --reason TEXT [--max-site-blocks N]
                                           a threat feed: one entry a line (\`DP ENTRY\` a line without DP; # comments),
                                           merged into ranges per domain-port, refused whole (nothing sent) past the
                                           site's limit (SECSVC_MAX_SITE_BLOCKS, default 20000 ranges) or its shards
                                           block addresses / start-end ranges / CIDRs for N seconds (removed at expiry);
                                           several entries go in bulk adds (one Update per ${MAX_BULK_BLOCKS}); a bad entry is
                                           named (ENTRY 2 / --file line 7) and nothing is sent
  block list SITE [--dp DP] [--json]       site, domain-port, range, expires at, by, why, state
  block extend SITE DP ENTRY --seconds N --by ID   new remaining time (longer or shorter)
  block remove SITE DP ENTRY --by ID       remove now`,
			startsWorkflow: (pos: string[]) => pos[0] === 'add',
		},
	},
} as const satisfies Playbook;

/** A customer's (or site's) history of blocked sources: repeat offenders get longer blocks (issue 39 item 3). */
export const offendersPlaybook = {
	type: WORKFLOW_TYPE.offenders,
	id: 'offenders-<customer>|offenders-site-<site>',
	versioning: 'AUTO_UPGRADE',
} as const satisfies Playbook;
