import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { scheduleIdFor } from '../../../api/runbook/contract.ts';
import { scheduledBy, type ScheduleKind } from '../../../workflows/playbooks.mts';
import { failureText } from './failureText.mts';

/** Schedules of the playbooks that run on a timer (their records' `schedule`) and their health (`secsvc schedule list`). */
export type { ScheduleKind };

export async function createSchedule(
	client: Client,
	taskQueue: string,
	kind: ScheduleKind,
	site: string,
	every: string,
	input: unknown,
) {
	const workflowType = scheduledBy(kind)?.type;
	if (!workflowType) throw new Error(`schedule kind ${kind}: no playbook runs on it`);
	const scheduleId = scheduleIdFor(kind, site);
	return client.schedule.create({
		scheduleId,
		spec: { intervals: [{ every: every as `${number}s` }] },
		action: { type: 'startWorkflow', workflowType, taskQueue, workflowId: `${scheduleId}-run`, args: [input] },
		policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
	});
}

export async function deleteSchedule(client: Client, scheduleId: string) {
	await client.schedule.getHandle(scheduleId).delete();
}

export type ScheduleHealth = 'ok' | 'failing' | 'stuck' | 'no runs yet';

export interface ScheduleStatus {
	scheduleId: string;
	health: ScheduleHealth;
	paused: boolean;
	/** The latest runs, newest first: when they started and how they ended. */
	recent: { startedAt: string; workflowId: string; status: string }[];
	/** Root cause of the newest failed run. */
	lastError?: string;
	skippedOverlap: number;
}

/** A run still open this long is reported as stuck (a watch or audit tick takes seconds). */
export const STUCK_AFTER_MS = 10 * 60_000;

/**
 * Every schedule with the outcome of its recent actions: `failing` when the newest finished run failed, timed out
 * or was terminated; `stuck` when a run has been open for more than STUCK_AFTER_MS (with overlap SKIP, later ticks
 * are skipped, so the site is no longer watched).
 */
export async function scheduleStatuses(client: Client, now = Date.now()): Promise<ScheduleStatus[]> {
	const out: ScheduleStatus[] = [];
	for await (const s of client.schedule.list()) {
		const d = await client.schedule.getHandle(s.scheduleId).describe();
		const actions = [...d.info.recentActions].reverse().slice(0, 5);
		const recent: ScheduleStatus['recent'] = [];
		let health: ScheduleHealth = 'no runs yet';
		let lastError: string | undefined;
		for (const [i, a] of actions.entries()) {
			const wf = (a.action as { workflow?: { workflowId: string; firstExecutionRunId: string } }).workflow;
			if (!wf) continue;
			const h = client.workflow.getHandle(wf.workflowId, wf.firstExecutionRunId, { followRuns: false });
			let status = 'UNKNOWN';
			try {
				status = (await h.describe()).status.name;
			} catch {
				/* run deleted by retention */
			}
			recent.push({ startedAt: a.takenAt.toISOString(), workflowId: wf.workflowId, status });
			const failed = ['FAILED', 'TIMED_OUT', 'TERMINATED'].includes(status);
			if (failed && lastError === undefined) {
				try {
					await h.result();
				} catch (e) {
					lastError = failureText(e);
				}
			}
			if (i === 0)
				health =
					status === 'RUNNING'
						? now - a.takenAt.getTime() > STUCK_AFTER_MS
							? 'stuck'
							: 'ok'
						: failed
							? 'failing'
							: 'ok';
			// the newest run still going and fine: judge by the newest finished one
			else if (health === 'ok' && recent[0].status === 'RUNNING' && i === 1 && failed) health = 'failing';
		}
		out.push({
			scheduleId: s.scheduleId,
			health,
			paused: d.state.paused,
			recent,
			...(lastError ? { lastError } : {}),
			skippedOverlap: d.info.numActionsSkippedOverlap,
		});
	}
	return out;
}
