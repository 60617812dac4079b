import { patched, workflowInfo } from '@temporalio/workflow';
import { claim, holdsOf, release } from '../coordinator/claims.mts';
import type { Hold } from '../coordinator/coordination.mts';
import type { WriteResult } from '../../api/runbook/contract.ts';
import { notOursText, unknownText } from '../attackResponse/written.mts';
import type { Drift, HeldSetting } from './driftAudit.mts';

/** The drift audit's held settings (one owner per setting) and its enforce: writes under a short lease. */

export interface Fix {
	drift: Drift;
	/** The settings (coordinator keys) this fix writes. */
	keys: string[];
	run: (granted: Set<string>) => Promise<unknown>;
}

const heldSetting = (drift: Drift, h: Hold): HeldSetting => ({
	...drift,
	held: { by: h.owner, since: h.since, until: h.until, reason: h.reason },
});

/** Moves the differences in settings someone else holds from `drifts` to the returned list (report and enforce). */
export async function leaveHeldAlone(site: string, drifts: Drift[], fixes: Fix[]): Promise<HeldSetting[]> {
	if (!fixes.length) return [];
	const me = workflowInfo().workflowId;
	// `drift-held-keys`: only the holds of the fixes' keys (a site with thousands of expiring blocks holds more than
	// one activity result may carry); runs recorded before it asked for every hold.
	const keys = patched('drift-held-keys') ? [...new Set(fixes.flatMap((f) => f.keys))] : undefined;
	const byKey = new Map((await holdsOf(site, keys)).filter((h) => h.owner !== me).map((h) => [h.key, h]));
	const held: HeldSetting[] = [];
	for (const f of [...fixes]) {
		const h = f.keys.map((k) => byKey.get(k)).find((x) => x !== undefined);
		if (!h || f.keys.some((k) => !byKey.has(k))) continue; // partly held lists: the free entries are still drift
		held.push(heldSetting(f.drift, h));
		drifts.splice(drifts.indexOf(f.drift), 1);
		fixes.splice(fixes.indexOf(f), 1);
	}
	return held;
}

/**
 * Writes the fixes under a short lease; what another owner took meanwhile is reported as held, not written. Each
 * write answers what it changed (WriteResult): a desired value someone else set between the audit's read and the
 * write is not the enforce's and is reported "already present, not ours" (nothing sent for it).
 */
export async function enforceFixes(site: string, fixes: Fix[], drifts: Drift[], held: HeldSetting[]): Promise<void> {
	const keys = [...new Set(fixes.flatMap((f) => f.keys))];
	const r = await claim(site, {
		keys,
		mode: 'lease',
		reason: 'drift enforce: writing the desired state',
		ttlSeconds: 300,
	});
	const granted = new Set(r.granted);
	const heldBy = new Map(r.held.map((h) => [h.key, h]));
	try {
		for (const f of fixes) {
			if (!f.keys.some((k) => granted.has(k))) {
				const h = heldBy.get(f.keys[0]);
				if (h) {
					held.push(heldSetting(f.drift, h));
					drifts.splice(drifts.indexOf(f.drift), 1);
				}
				continue;
			}
			try {
				noteWritten(f.drift, await f.run(granted));
				f.drift.enforced = 'fixed';
			} catch (e) {
				f.drift.enforced = 'failed';
				f.drift.error = (e as Error).message;
			}
		}
	} finally {
		if (r.granted.length) await release(site, r.granted);
	}
}

/** Records what an enforce's write (or, for a list, each add) changed on its drift. */
function noteWritten(drift: Drift, answer: unknown): void {
	const isWrite = (w: unknown): w is WriteResult =>
		!!w && typeof w === 'object' && ('wrote' in w || 'notOurs' in w || 'unknown' in w);
	const ws = (Array.isArray(answer) ? answer : [answer]).filter(isWrite);
	if (!ws.length) return;
	const all = (k: 'wrote' | 'notOurs' | 'unknown') =>
		ws.flatMap((w) => (Array.isArray(w[k]) ? (w[k] as unknown[]) : []));
	const unknown = all('unknown');
	drift.written = Array.isArray(answer)
		? { wrote: all('wrote'), notOurs: all('notOurs'), ...(unknown.length ? { unknown } : {}) }
		: ws[0];
	const note = [notOursText(drift), unknownText(drift)].filter(Boolean).join('; ');
	if (note) drift.note = note;
	else delete drift.note;
}
