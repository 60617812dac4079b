import type { Client as TemporalClient } from '@temporalio/client';
import { workflowIdFor, type AttackResponseResult } from '../../../api/runbook/contract.ts';
import { LAST_RUN_ACTIVITY, type LastRun } from '../../../api/runbook/holdDownRules.ts';

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
				const r = (await c.workflow.getHandle(id, w.runId).result()) as AttackResponseResult | undefined;
				if (!r?.marks?.revertedAt) continue;
				return {
					runId: w.runId,
					revertedAt: r.marks.revertedAt,
					outcome: r.outcome,
					entries: entriesOf(r),
					returns: returnsOf(r),
				};
			}
			return undefined;
		},
	};
}

const list = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);

function entriesOf(r: AttackResponseResult): Record<string, string[]> {
	const out: Record<string, string[]> = {};
	for (const c of r.changes ?? []) {
		if (c.kind !== 'blacklistAdd') continue;
		const theirs = list(c.live);
		const mine = (c.written ? list(c.written.wrote) : list(c.after)).filter((e) => !theirs.includes(e));
		(out[c.target.domain_port_id] ??= []).push(...mine);
	}
	return out;
}

/** The audit says "re-armed: return N …" when the run was a return itself. */
function returnsOf(r: AttackResponseResult): number {
	for (const a of r.audit ?? []) {
		const m = /^re-armed: return (\d+)/.exec(a.what);
		if (m) return Number(m[1]);
	}
	return 0;
}
