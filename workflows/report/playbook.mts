import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { Playbook } from '../playbooks.mts';

/** The attack report of a period; `report SITE|ID --html` only reads a finished runbook. */
export const attackReportPlaybook = {
	type: WORKFLOW_TYPE.attackReport,
	id: 'attack-report-<site>-<time> (schedule: secsvc-report-<site>-run)',
	versioning: 'AUTO_UPGRADE',
	budget: 'report',
	schedule: { kind: 'report', every: '24h' },
	commands: {
		report: {
			usage: `  report --site SITE [--hours N] [--markdown] [--html FILE]
                                           period report (attack report playbook); --html writes the HTML report
  report SITE|ID --html FILE               one runbook's attack report as a self-contained HTML file`,
			startsWorkflow: (pos: string[]) => !pos[0],
		},
	},
} as const satisfies Playbook;
