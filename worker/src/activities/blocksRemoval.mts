import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as TemporalClient } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Client } from '../../../api/client.ts';
import type { RemoveDueInput, RemoveDueResult } from '../../../workflows/blocksShared.mts';
import { releaseBySignal } from '../temporal/coordination.mts';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveEntries, ownerId, retryable } from './blocksLive.mts';
import { entryRangeKey } from '../../../api/catalog/ipv4.ts';

/** A removal waits at most this long for an entry's expiry at a time (the workflow hands them over ≤ 0.3 s early). */
const MAX_WAIT_MS = 5000;

/**
 * `blocks.removeDue` — the due entries of one domain-port removed by a LOCAL activity of its blocks workflow
 * (workflows/blocks.mts, since `blocks-local-removals`): no activity task, no completion task, the result recorded
 * as a marker by the workflow task that the expiry's timer started. In one call:
 *  1. the release (a signal to the site's coordinator) of keys whose removal an EARLIER workflow task recorded —
 *     never this call's own (a lost attempt of this call must not hand a key over before its removal is recorded);
 *  2. once an entry's expiry has come (the workflow may hand entries over up to its wake-up latency early, see
 *     workflows/blocks.mts): one read of the list, then ONE DELETE naming every due entry still listed as written.
 * An entry already gone is "taken over" (an operator removed or changed it) unless an earlier attempt of THIS
 * removal may have removed it and lost its answer. A normal activity knows that from its attempt number; a local
 * activity whose workflow task was lost (worker killed, server restarted) starts again at attempt 1, so the check is
 * the run's own history: a workflow task that failed or timed out after it had started (every attempt of this removal
 * ran in such a task, after the entry's expiry) means an earlier attempt may have sent the DELETE. Read only when an
 * entry is gone (rare: the operator's removals and crashes).
 */
export function createRemoveDue(api: Client, withTemporal: <T>(fn: (t: TemporalClient) => Promise<T>) => Promise<T>) {
	return async (raw: Record<string, unknown>): Promise<RemoveDueResult> => {
		const { site_id, domain_port_id, entries, release } = raw as unknown as RemoveDueInput;
		const info = Context.current().info;
		const owner = ownerId();
		try {
			if (release?.length) await withTemporal((t) => releaseBySignal(t, site_id, owner, release));
			// Entries are handed over up to the workflow's wake-up latency early: each is removed once its expiry has
			// come on this clock (never before), those due together in one read + ONE DELETE.
			const waiting = [...entries].sort((a, b) => Date.parse(a.expiresAt) - Date.parse(b.expiresAt));
			const found: (RemoveDueInput['entries'][number] & { live?: string })[] = [];
			while (waiting.length) {
				const wait = Date.parse(waiting[0].expiresAt) - Date.now();
				if (wait > 0) await sleep(Math.min(wait, MAX_WAIT_MS));
				const now = Date.now();
				const ready = waiting.filter((e) => Date.parse(e.expiresAt) <= now);
				if (!ready.length) continue;
				waiting.splice(0, ready.length);
				const live = await liveEntries(api, site_id, domain_port_id);
				const group = ready.map((e) => ({ ...e, live: live.get(entryRangeKey(e.range) ?? '') }));
				const present = [...new Set(group.flatMap((f) => (f.live ? [f.live] : [])))];
				if (present.length) await api.call('applicationProtection.ipBlacklist.remove', { site_id, domain_port_id, ip_black_list: present });
				found.push(...group);
			}
			const gone = found.filter((f) => !f.live);
			let lost: string | undefined;
			if (gone.length) {
				if (info.attempt > 1) lost = `attempt ${info.attempt}`;
				else {
					const since = Math.min(...gone.map((g) => Date.parse(g.expiresAt)));
					lost = await withTemporal((t) => lostTaskSince(t, info.workflowExecution as { workflowId: string; runId: string }, since));
				}
			}
			return {
				released: release?.length ?? 0,
				results: found.map((f) =>
					f.live ? { entry: f.range, removed: true } : lost ? { entry: f.range, removed: true, note: `removed (an earlier attempt's answer was lost: ${lost}; found it gone)` } : { entry: f.range, removed: false },
				),
			};
		} catch (e) {
			if (e instanceof ApplicationFailure) throw e;
			throw retryable('applicationProtection.ipBlacklist.remove', e);
		}
	};
}

const EVENT_WORKFLOW_TASK_TIMED_OUT = 8 satisfies temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT;
const EVENT_WORKFLOW_TASK_FAILED = 9 satisfies temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;
const TIMEOUT_SCHEDULE_TO_START = 2 satisfies temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START;

/**
 * A workflow task of this run that was started and then lost (failed, or timed out after its start) at or after
 * `sinceMs` (server time; 1 s of margin for the clocks): described, or undefined if none.
 */
async function lostTaskSince(client: TemporalClient, wf: { workflowId: string; runId: string }, sinceMs: number): Promise<string | undefined> {
	const h = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
	for (const e of h.events ?? []) {
		const at = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor(Number(e.eventTime?.nanos ?? 0) / 1e6);
		if (at < sinceMs - 1000) continue;
		if (e.eventType === EVENT_WORKFLOW_TASK_FAILED) return `workflow task failed at ${new Date(at).toISOString()}`;
		if (e.eventType === EVENT_WORKFLOW_TASK_TIMED_OUT && e.workflowTaskTimedOutEventAttributes?.timeoutType !== TIMEOUT_SCHEDULE_TO_START)
			return `workflow task timed out at ${new Date(at).toISOString()}`;
	}
	return undefined;
}
