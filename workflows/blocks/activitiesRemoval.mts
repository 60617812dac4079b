import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { removalIntentSignal, type RemoveDueInput, type RemoveDueResult } from './shared.mts';
import { releaseBySignal } from '../coordinator/client.mts';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveEntries, ownerId, retryable } from './activitiesLive.mts';
import { ownListed } from '../../api/catalog/ipv4.ts';

/** A removal waits at most this long for an entry's expiry at a time (the workflow hands them over ≤ 0.3 s early). */
const MAX_WAIT_MS = 5000;

/**
 * `blocks.removeDue` — the due entries of one domain-port removed by a LOCAL activity of its blocks workflow
 * (workflows/blocks/blocks.mts, since `blocks-local-removals`): no activity task, no completion task, the result recorded
 * as a marker by the workflow task that the expiry's timer started. In one call:
 *  1. the release (a signal to the site's coordinator) of keys whose removal an EARLIER workflow task recorded —
 *     never this call's own (a lost attempt of this call must not hand a key over before its removal is recorded);
 *  2. once an entry's expiry has come (the workflow may hand entries over up to its wake-up latency early, see
 *     workflows/blocks/blocks.mts): one read of the list, then ONE DELETE naming every due entry still listed as written.
 * An entry already gone is "taken over" (an operator removed or changed it) unless a DELETE of ours named it and
 * lost its answer. A local activity whose workflow task was lost (worker killed, server restarted) starts again at
 * attempt 1 and its history holds nothing of the lost attempt, so each attempt records what it is about to DELETE
 * first — a signal to its own run (`removalIntentSignal`, ignored by the workflow, kept by the history) — and an
 * entry gone at first look counts as ours only if such a record since its expiry names it. So the audit says what we
 * did, and only that: an entry the operator removed or replaced is never named by our DELETE (it was not listed as
 * written), whatever workflow tasks timed out meanwhile. The history is read only when an entry is gone (rare: the
 * operator's removals and crashes). Cost: one signal (and one workflow task) per DELETE.
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
			const found: (RemoveDueInput['entries'][number] & { live?: string; at: string })[] = [];
			while (waiting.length) {
				const wait = Date.parse(waiting[0].expiresAt) - Date.now();
				if (wait > 0) await sleep(Math.min(wait, MAX_WAIT_MS));
				const now = Date.now();
				const ready = waiting.filter((e) => Date.parse(e.expiresAt) <= now);
				if (!ready.length) continue;
				waiting.splice(0, ready.length);
				const live = await liveEntries(api, site_id, domain_port_id);
				const group = ready.map((e) => ({ ...e, live: ownListed(live, e.range), at: '' }));
				const present = [...new Set(group.flatMap((f) => (f.live ? [f.live] : [])))];
				if (present.length) {
					await withTemporal((t) =>
						recordIntent(
							t,
							info.workflowExecution as Run,
							group.flatMap((f) => (f.live ? [f.range] : [])),
						),
					);
					await api.call('applicationProtection.ipBlacklist.remove', {
						site_id,
						domain_port_id,
						ip_black_list: present,
					});
				}
				// When each entry left the list (removed, or found gone): never before its expiry on this clock.
				const at = new Date().toISOString();
				found.push(...group.map((f) => ({ ...f, at })));
			}
			const gone = found.filter((f) => !f.live);
			// Gone at first look: ours only if an earlier attempt's DELETE named it (its intent is in the history).
			const ours = gone.length
				? await withTemporal((t) =>
						intentsSince(t, info.workflowExecution as Run, Math.min(...gone.map((g) => Date.parse(g.expiresAt)))),
					)
				: new Map<string, string>();
			return {
				released: release?.length ?? 0,
				results: found.map((f) => {
					if (f.live) return { entry: f.range, removed: true, at: f.at };
					const sent = ours.get(f.range);
					return sent
						? {
								entry: f.range,
								removed: true,
								at: f.at,
								note: `removed (a DELETE naming it was sent at ${sent} by an earlier attempt whose answer was lost; found it gone)`,
							}
						: { entry: f.range, removed: false, at: f.at };
				}),
			};
		} catch (e) {
			if (e instanceof ApplicationFailure) throw e;
			throw retryable('applicationProtection.ipBlacklist.remove', e);
		}
	};
}

type Run = { workflowId: string; runId: string };

/** The removal's intent, in its run's history before its DELETE is sent (`removalIntentSignal`). */
async function recordIntent(client: TemporalClient, wf: Run, ranges: string[]): Promise<void> {
	await client.workflow.getHandle(wf.workflowId, wf.runId).signal(removalIntentSignal, { ranges });
}

/**
 * The ranges an earlier removal of this run said it was about to DELETE at or after `sinceMs` (server time; 1 s of
 * margin for the clocks: a removal sends its DELETE only once the entry's expiry has come), each with when.
 */
async function intentsSince(client: TemporalClient, wf: Run, sinceMs: number): Promise<Map<string, string>> {
	const out = new Map<string, string>();
	const h = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
	const conv = client.options.loadedDataConverter.payloadConverter;
	for (const e of h.events ?? []) {
		const a = e.workflowExecutionSignaledEventAttributes;
		if (a?.signalName !== removalIntentSignal.name) continue;
		const at = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor(Number(e.eventTime?.nanos ?? 0) / 1e6);
		if (at < sinceMs - 1000) continue;
		const p = a.input?.payloads?.[0];
		const ranges = p ? ((conv.fromPayload(p) as { ranges?: unknown })?.ranges ?? []) : [];
		if (Array.isArray(ranges))
			for (const r of ranges) if (typeof r === 'string') out.set(r, new Date(at).toISOString());
	}
	return out;
}
