import type { Client as TemporalClient } from '@temporalio/client';
import { workflowIdFor, type AttackResponseResult } from '../../../api/runbook/contract.ts';
import { LAST_RUN_ACTIVITY, lastRunOf, type LastRun } from '../../../api/runbook/holdDownRules.ts';

/**
 * Hold-down re-arm (issue 39 item 2): the site's last finished (completed) attack response other than the caller —
 * when it reverted, the blacklist entries it owned at the end (every wave, minus what a person removed or the
 * allow-list ended), and how many returns it was itself. Read from Temporal's visibility and the run's result.
 */
export function createHoldDownActivities(temporal?: () => TemporalClient) {
	return {
		[LAST_RUN_ACTIVITY]: async (input: { site_id: string; currentRunId: string }): Promise<LastRun | undefined> => {
			if (!temporal) return undefined;
			const c = temporal();
			const id = workflowIdFor(input.site_id);
			let seen = 0;
			for await (const w of c.workflow.list({ query: `WorkflowId = "${id}" AND ExecutionStatus = "Completed"` })) {
				if (w.runId === input.currentRunId) continue;
				if (++seen > 3) break;
				const last = lastRunOf(w.runId, (await c.workflow.getHandle(id, w.runId).result()) as AttackResponseResult);
				if (last) return last;
			}
			return undefined;
		},
	};
}
