/**
 * Where a runbook's time went, from its own history (issue 37's liveness under load): the time its workflow tasks and
 * activities waited in their task queues for a worker (schedule → start), the time activities ran (start → close,
 * every attempt's retries inside it), timers (poll, cooldown, backoff), and the longest single waits. A run that waits
 * on something that never comes shows as one open wait; a loaded machine as queue waits spread over every step.
 */
import type { Client as TemporalClient } from '@temporalio/client';
import proto from '@temporalio/proto';

export interface Timeline {
	/** workflow start → close (or → now while running), s */
	totalS: number;
	/** workflow tasks: schedule → start (a worker's slot), start → complete (the task's own CPU), s */
	wftQueueS: number;
	wftRunS: number;
	/** activities: schedule → start (the last attempt's), start → close, s */
	actQueueS: number;
	actRunS: number;
	timerS: number;
	/** attempts beyond the first, over every activity */
	retries: number;
	/** workflow tasks that timed out (a killed worker's, or one its worker did not finish within the task timeout) */
	wftTimeouts: number;
	/** from each such timeout to the next workflow task completed, s: the time the run could not move */
	afterTimeoutS: number;
	/** the longest single waits, longest first: `<kind> <name> <s>` */
	longest: string[];
	/** still running: what it waits on now (pending activities, the last event) */
	open?: string;
}

type Ev = proto.temporal.api.history.v1.IHistoryEvent;
const T = proto.temporal.api.enums.v1.EventType;
const ms = (e: Ev | undefined) => (e?.eventTime ? Number(e.eventTime.seconds) * 1000 + e.eventTime.nanos! / 1e6 : 0);

export async function timelineOf(client: TemporalClient, workflowId: string): Promise<Timeline> {
	const h = client.workflow.getHandle(workflowId);
	const events = (await h.fetchHistory()).events ?? [];
	const byId = new Map(events.map((e) => [Number(e.eventId), e]));
	const t: Timeline = {
		totalS: 0,
		wftQueueS: 0,
		wftRunS: 0,
		actQueueS: 0,
		actRunS: 0,
		timerS: 0,
		retries: 0,
		wftTimeouts: 0,
		afterTimeoutS: 0,
		longest: [],
	};
	let timedOutAt: number | undefined;
	const spans: [string, number][] = [];
	const since = (id: unknown, e: Ev) => (ms(e) - ms(byId.get(Number(id)))) / 1000;
	const actName = (schedId: unknown) =>
		byId.get(Number(schedId))?.activityTaskScheduledEventAttributes?.activityType?.name ?? '?';
	for (const e of events) {
		if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
			const s = since(e.workflowTaskStartedEventAttributes?.scheduledEventId, e);
			t.wftQueueS += s;
			spans.push(['wft-queue', s]);
		} else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
			t.wftRunS += since(e.workflowTaskCompletedEventAttributes?.startedEventId, e);
			if (timedOutAt !== undefined) {
				spans.push(['after a workflow task timeout', (ms(e) - timedOutAt) / 1000]);
				t.afterTimeoutS += (ms(e) - timedOutAt) / 1000;
				timedOutAt = undefined;
			}
		} else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
			t.wftTimeouts++;
			timedOutAt ??= ms(e);
		} else if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
			const a = e.activityTaskStartedEventAttributes;
			const s = since(a?.scheduledEventId, e);
			t.actQueueS += s;
			t.retries += Math.max(0, (a?.attempt ?? 1) - 1);
			spans.push([`act-queue ${actName(a?.scheduledEventId)}`, s]);
		} else {
			const a =
				e.activityTaskCompletedEventAttributes ??
				e.activityTaskFailedEventAttributes ??
				e.activityTaskTimedOutEventAttributes;
			if (a?.startedEventId) {
				const s = since(a.startedEventId, e);
				t.actRunS += s;
				spans.push([`act-run ${actName(a.scheduledEventId)}`, s]);
			}
			const f = e.timerFiredEventAttributes;
			if (f) {
				const s = since(f.startedEventId, e);
				t.timerS += s;
				spans.push(['timer', s]);
			}
		}
	}
	const closed = events.at(-1);
	const running = !closed || !String(T[closed.eventType ?? 0]).includes('WORKFLOW_EXECUTION_');
	t.totalS = ((running ? Date.now() : ms(closed)) - ms(events[0])) / 1000;
	if (running) {
		const d = await h.describe();
		const pending = (d.raw.pendingActivities ?? []).map(
			(p) => `${p.activityType?.name} attempt ${p.attempt} ${p.lastFailure?.message?.slice(0, 80) ?? ''}`,
		);
		t.open = `${pending.join(' | ') || 'no activity pending'}; last event ${T[closed?.eventType ?? 0]} ${((Date.now() - ms(closed)) / 1000).toFixed(1)} s ago`;
	}
	for (const k of ['wftQueueS', 'wftRunS', 'actQueueS', 'actRunS', 'timerS', 'totalS', 'afterTimeoutS'] as const)
		t[k] = Math.round(t[k] * 10) / 10;
	t.longest = spans
		.sort((a, b) => b[1] - a[1])
		.slice(0, 4)
		.map(([k, s]) => `${k} ${s.toFixed(1)}`);
	return t;
}

export const timelineText = (t: Timeline) =>
	`total ${t.totalS} s: workflow tasks queued ${t.wftQueueS} / ran ${t.wftRunS}, activities queued ${t.actQueueS} / ran ${t.actRunS} (${t.retries} retries), timers ${t.timerS}, ${t.wftTimeouts} workflow task timeouts (${t.afterTimeoutS} s until the next task completed); longest: ${t.longest.join(', ')}${t.open ? `; OPEN: ${t.open}` : ''}`;
