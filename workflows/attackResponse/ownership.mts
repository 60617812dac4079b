import { settingKey, type Hold } from '../coordination.mts';
import { claim, release } from '../claims.mts';
import type { Change } from '../defs.mts';
import { formatRange, parseEntry } from '../ranges.mts';
import type { PlanContext, Runbook } from './context.mts';

/**
 * One owner per setting (workflows/README.md): before the snapshot the runbook HOLDS, at the site's coordinator,
 * every setting its plan may change (a drift enforce that started just before waits for nothing: the claim waits
 * for its lease to end, and the snapshot is taken after it); after planning it holds the blacklist entries it will
 * add. Settings another owner holds are left alone and reported. Everything is released after the revert.
 */

/** The keys of the settings a plan may change (blacklist entries are claimed once planned). */
export function planKeys(ctx: PlanContext): string[] {
	const { plan } = ctx;
	const keys: string[] = [];
	if (plan.detection.rapidMode) keys.push(settingKey.detectionMode());
	for (const t of plan.detection.thresholds) keys.push(settingKey.detectionItem(t.name));
	for (const dp of plan.domain_ports) {
		if (plan.ipAuth) keys.push(settingKey.ipAuth(dp));
		for (const sw of plan.switches) keys.push(settingKey.switch(dp, sw.name));
	}
	return keys;
}

/** The key of a change's setting (blacklist changes: one key per entry, see entryKeys). */
export function changeKey(c: Change): string | undefined {
	const t = c.target;
	switch (c.kind) {
		case 'detectionMode':
			return settingKey.detectionMode();
		case 'detectionPolicy':
			return settingKey.detectionItem(t.name);
		case 'ipAuth':
			return settingKey.ipAuth(t.domain_port_id);
		case 'switch':
			return settingKey.switch(t.domain_port_id, t.name);
		default:
			return undefined;
	}
}

export const entryKey = (dp: string, entry: string) => {
	const r = parseEntry(entry);
	return settingKey.blacklistEntry(dp, r ? formatRange(r) : entry);
};

const ttlOf = (ctx: PlanContext) => ctx.plan.maxDurationSeconds + (ctx.plan.approval.required ? ctx.plan.approval.timeoutSeconds : 0) + 6 * 3600;

/** Holds the plan's settings before the snapshot. Returns the keys held by someone else (left alone). */
export async function holdPlanSettings(rb: Runbook, ctx: PlanContext): Promise<Hold[]> {
	const keys = planKeys(ctx);
	if (!keys.length) return [];
	rb.state.holding = 0; // from here on a claim may have been granted: releaseAll asks the coordinator
	const r = await claim(ctx.site, { keys, mode: 'hold', reason: 'attack response: mitigation in place until the revert', ttlSeconds: ttlOf(ctx) });
	rb.state.holding = r.granted.length;
	rb.log('snapshot', `holding ${r.granted.length} setting(s) of site ${ctx.site}`, 'one owner per setting: other playbooks leave them alone until the revert');
	return r.held;
}

/** After planning: holds the blacklist entries to add; drops changes (and entries) that someone else holds. */
export async function holdPlannedChanges(rb: Runbook, ctx: PlanContext, heldBefore: Hold[]): Promise<void> {
	const heldKeys = new Map(heldBefore.map((h) => [h.key, h]));
	const entryKeys = rb.changes.filter((c) => c.kind === 'blacklistAdd').flatMap((c) => (c.after as string[]).map((e) => entryKey(c.target.domain_port_id, e)));
	if (entryKeys.length) {
		rb.state.holding ??= 0;
		const r = await claim(ctx.site, { keys: entryKeys, mode: 'hold', reason: 'attack response: blacklisted attack source', ttlSeconds: ttlOf(ctx) });
		rb.state.holding = (rb.state.holding ?? 0) + r.granted.length;
		for (const h of r.held) heldKeys.set(h.key, h);
	}
	if (!heldKeys.size) return;
	const note = (what: string, h: Hold) => {
		rb.heldByOthers.push(h);
		rb.log('planning', what, `held by ${h.owner} since ${h.since} (${h.reason}); left alone`);
	};
	for (const c of [...rb.changes]) {
		if (c.kind === 'blacklistAdd') {
			const keep = (c.after as string[]).filter((e) => {
				const h = heldKeys.get(entryKey(c.target.domain_port_id, e));
				if (h) note(`${c.what}: ${e}`, h);
				return !h;
			});
			c.after = keep;
			if (keep.length) continue;
		} else {
			const h = heldKeys.get(changeKey(c) ?? '');
			if (!h) continue;
			note(c.what, h);
		}
		rb.changes.splice(rb.changes.indexOf(c), 1);
	}
}

/** Releases every setting this runbook holds (after the revert, or when it ends without writing). */
export async function releaseAll(rb: Runbook, ctx: PlanContext): Promise<void> {
	if (rb.state.holding === undefined) return;
	try {
		const r = await release(ctx.site);
		rb.log('done', `released ${r.released} setting(s)`, 'the revert is done: other playbooks may write them again');
	} catch (e) {
		rb.log('done', 'could not release the held settings', `they are let go by the coordinator at their expiry (${String((e as Error)?.message ?? e)})`);
	}
	rb.state.holding = undefined;
}
