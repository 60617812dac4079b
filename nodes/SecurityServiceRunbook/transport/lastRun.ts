import type { IDataObject } from 'n8n-workflow';
import { workflowIdFor, type AttackResponseResult } from '../../../api/runbook/contract';
import { HOLD_DOWN_DEFAULTS, lastRunOf, type LastRun } from '../../../api/runbook/holdDownRules';
import type { Http } from '../actions/common/types';
import { firstValue } from './http';

/**
 * The site's last finished attack-response runbook over Temporal's HTTP API (issue 39 item 5), read as the worker's
 * `runbook.lastRun` activity reads it through the SDK: the newest COMPLETED run of `attack-response-<site>` whose
 * result has a revert time (of the 3 newest), its owned entries (api/runbook/holdDownRules.ts `lastRunOf`), and what
 * its start carried: the plan (for "re-arm from the last plan") and its hold-down (the window a return falls in).
 */
export interface TemporalHttp {
	workflowsUrl: string;
	wfUrl(id: string): string;
	call(method: 'GET' | 'POST', url: string, body?: IDataObject, qs?: IDataObject): Promise<Http>;
}

export interface LastRunbook extends LastRun {
	workflowId: string;
	taskQueue: string;
	/** The plan the run was started with (its start input, as sent). */
	plan: IDataObject;
	/** plan.holdDown.seconds of that plan (default 1800). */
	holdDownSeconds: number;
}

const CANDIDATES = 3;

/** Temporal could not be read (the trigger notes it on the item; the Runbook node fails the item with it). */
export class TemporalReadError extends Error {}

export async function findLastRunbook(t: TemporalHttp, siteId: string): Promise<LastRunbook | undefined> {
	const workflowId = workflowIdFor(siteId);
	const list = await must(
		t,
		t.workflowsUrl,
		{
			query: `WorkflowId = "${workflowId}" AND ExecutionStatus = "Completed"`,
			pageSize: CANDIDATES,
		},
		'list the runbooks',
	);
	const runs = (Array.isArray(list.executions) ? (list.executions as IDataObject[]) : [])
		.map((e) => ({
			runId: String((e.execution as IDataObject | undefined)?.runId ?? ''),
			closeTime: String(e.closeTime ?? ''),
			taskQueue: String(e.taskQueue ?? ''),
		}))
		.filter((e) => e.runId)
		.sort((a, b) => Date.parse(b.closeTime) - Date.parse(a.closeTime))
		.slice(0, CANDIDATES);
	for (const run of runs) {
		const history = `${t.wfUrl(workflowId)}/history`;
		const closed = await events(t, history, {
			'execution.runId': run.runId,
			historyEventFilterType: 'HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT',
		});
		const done = closed[0]?.workflowExecutionCompletedEventAttributes as IDataObject | undefined;
		const last = lastRunOf(run.runId, firstValue(done?.result) as AttackResponseResult | null);
		if (!last) continue;
		const first = await events(t, history, { 'execution.runId': run.runId, maximumPageSize: 1 });
		const started = first[0]?.workflowExecutionStartedEventAttributes as IDataObject | undefined;
		const input = (firstValue(started?.input) ?? {}) as IDataObject;
		const plan = (input.plan && typeof input.plan === 'object' ? input.plan : {}) as IDataObject;
		const hd = (plan.holdDown ?? {}) as IDataObject;
		const seconds = typeof hd.seconds === 'number' ? hd.seconds : HOLD_DOWN_DEFAULTS.seconds;
		return { ...last, workflowId, taskQueue: run.taskQueue, plan, holdDownSeconds: seconds };
	}
	return undefined;
}

async function events(t: TemporalHttp, url: string, qs: IDataObject): Promise<IDataObject[]> {
	const r = await must(t, url, qs, 'read a runbook history');
	const ev = (r.history as IDataObject | undefined)?.events;
	return Array.isArray(ev) ? (ev as IDataObject[]) : [];
}

async function must(t: TemporalHttp, url: string, qs: IDataObject, what: string): Promise<IDataObject> {
	const r = await t.call('GET', url, undefined, qs);
	if (r.status >= 400)
		throw new TemporalReadError(
			`Temporal: could not ${what} (HTTP ${r.status}: ${String(r.body.message ?? '').slice(0, 200)})`,
		);
	return r.body;
}
