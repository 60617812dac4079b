/**
 * Temporal Cloud actions counted from workflow histories fetched from the (dev) server, by the rules of
 * docs.temporal.io/cloud/actions: a workflow started (client, continue-as-new, schedule) 1, plus 2 for a Schedule's
 * start; an activity 1 per attempt (ActivityTaskStarted `attempt`); all local activities of one workflow task 1
 * (markers grouped by their WorkflowTaskCompleted); a timer 1; a signal received or sent 1; a child workflow 2
 * (start + execution); an accepted Update 1; a search-attribute upsert 1. Only events whose time lies in the window
 * count. Queries are not in histories (the bench sends none while measuring).
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { temporal as T } from '@temporalio/proto';

const temporal = proto.temporal;
const E = temporal.api.enums.v1.EventType;
type Event = T.api.history.v1.IHistoryEvent;

const ms = (t: Event['eventTime']) => (t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0);

export interface ActionCount {
	total: number;
	byKind: Record<string, number>;
}

export function countActions(
	events: Event[],
	t0: number,
	t1: number,
	scheduled: boolean,
	into: ActionCount = { total: 0, byKind: {} },
): ActionCount {
	const add = (k: string, n = 1) => {
		into.total += n;
		into.byKind[k] = (into.byKind[k] ?? 0) + n;
	};
	const markerTasks = new Set<string>();
	for (const e of events) {
		const t = ms(e.eventTime);
		if (t < t0 || t > t1) continue;
		switch (e.eventType) {
			case E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				add('workflow started');
				if (scheduled) add('schedule start', 2);
				break;
			case E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				add('activity attempt', Math.max(1, e.activityTaskStartedEventAttributes?.attempt ?? 1));
				break;
			case E.EVENT_TYPE_MARKER_RECORDED: {
				const wft = String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? e.eventId);
				if (!markerTasks.has(wft)) {
					markerTasks.add(wft);
					add('local activities (per workflow task)');
				}
				break;
			}
			case E.EVENT_TYPE_TIMER_STARTED:
				add('timer');
				break;
			case E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			case E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
				add('signal');
				break;
			case E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
				add('child workflow (start + execution)', 2);
				break;
			case E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
				add('update');
				break;
			case E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
				add('search attribute upsert');
				break;
		}
	}
	return into;
}

/**
 * Actions of every execution matching `query` (visibility) in [t0, t1]. With `sample`, only that many executions'
 * histories are fetched (every `step`-th of the list) and the sum is scaled by total / sampled.
 */
export async function actionsOf(
	client: Client,
	query: string,
	t0: number,
	t1: number,
	o: { scheduled?: boolean; sample?: number } = {},
) {
	const list: { workflowId: string; runId: string }[] = [];
	for await (const w of client.workflow.list({ query })) list.push({ workflowId: w.workflowId, runId: w.runId });
	const step = o.sample && list.length > o.sample ? list.length / o.sample : 1;
	const picked = step === 1 ? list : Array.from({ length: o.sample as number }, (_, i) => list[Math.floor(i * step)]);
	const count: ActionCount = { total: 0, byKind: {} };
	let i = 0;
	const lane = async () => {
		while (i < picked.length) {
			const w = picked[i++];
			const h = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
			countActions(h.events ?? [], t0, t1, o.scheduled === true, count);
		}
	};
	await Promise.all(Array.from({ length: 8 }, lane));
	const scale = picked.length ? list.length / picked.length : 0;
	const byKind = Object.fromEntries(Object.entries(count.byKind).map(([k, v]) => [k, Math.round(v * scale)]));
	return { executions: list.length, fetched: picked.length, total: Math.round(count.total * scale), byKind };
}
