import { condition, defineUpdate, setHandler } from '@temporalio/workflow';
import type { Change } from '../../api/runbook/contract.ts';
import {
	ALLOW_LISTED_UPDATE,
	allowedOverlap,
	allowRequestProblems,
	type AllowEnded,
	type AllowListedRequest,
} from '../../api/runbook/allowRules.ts';
import type { PlanContext, Runbook } from './context.mts';
import { presentEntries, readSettings } from './live.mts';
import { errText } from './settings.mts';
import { addNote, ownedEntries } from './written.mts';

/**
 * The allow-list always wins (issue 39 item 4, api/runbook/allowRules.ts): an entry of this runbook that overlaps an
 * allowed range ends at once — a planned one is dropped before it is written, a written one is removed now (only if
 * it is on the list and ours) — and is no longer the runbook's: hold-the-line, the waves and the revert leave it
 * (recorded in `live`, as an entry someone else removed). Each is reported in the answer, the audit and the note.
 */
export const allowListedUpdate = defineUpdate<AllowEnded[], [AllowListedRequest]>(ALLOW_LISTED_UPDATE);

export function registerAllowList(rb: Runbook, ctx: PlanContext): void {
	setHandler(allowListedUpdate, (req) => endAllowed(rb, ctx, req), {
		validator: (req) => {
			const p = allowRequestProblems(req);
			if (p.length) throw new Error(`invalid allowListed request — ${p.join('; ')}`);
		},
	});
}

async function endAllowed(rb: Runbook, ctx: PlanContext, req: AllowListedRequest): Promise<AllowEnded[]> {
	const out: AllowEnded[] = [];
	const owner = `attack-response-${ctx.site}`;
	for (const c of rb.changes) {
		if (c.kind !== 'blacklistAdd') continue;
		const dp = c.target.domain_port_id;
		if (req.domain_port_id !== undefined && req.domain_port_id !== dp) continue;
		// A write in flight finishes first: then the entry is known to be ours (or not).
		if (c.status === 'pending') await condition(() => c.status !== 'pending');
		const hit = (e: string) => allowedOverlap(e, req.ranges);
		const why = (e: string) => `allow-list wins: ${e} overlaps ${hit(e)} (${req.reason})`;
		if (c.status === 'planned') {
			const drop = (c.after as string[]).filter(hit);
			if (!drop.length) continue;
			c.after = (c.after as string[]).filter((e) => !hit(e));
			for (const e of drop) out.push(ended(ctx, dp, e, owner, why(e)));
			addNote(c, `allow-listed ${drop.join(', ')}: not written (${req.reason})`);
			rb.log(rb.state.phase, `${c.what}: ${drop.join(', ')}`, `${why(drop[0])}: dropped before it was written`);
			continue;
		}
		if (c.status !== 'applied') continue;
		const mine = ownedEntries(rb, c).filter(hit);
		if (!mine.length) continue;
		await removeNow(rb, ctx, c, mine, req.reason);
		for (const e of mine) out.push(ended(ctx, dp, e, owner, why(e)));
	}
	return out;
}

const ended = (ctx: PlanContext, dp: string, entry: string, owner: string, reason: string): AllowEnded => ({
	kind: 'runbook entry',
	site_id: ctx.site,
	domain_port_id: dp,
	entry,
	owner,
	reason,
});

/** Our entries that are listed are removed now; from here on none of them is ours (kept out of the revert). */
async function removeNow(rb: Runbook, ctx: PlanContext, c: Change, mine: string[], reason: string): Promise<void> {
	// Not ours any more BEFORE the write: a poll meanwhile must not call them removed by someone else.
	c.live = [...(Array.isArray(c.live) ? (c.live as string[]) : []), ...mine];
	const dp = c.target.domain_port_id;
	try {
		const live = await readSettings(ctx, ctx.revertReads, { detection: false, dp: { [dp]: { black: true } } });
		const present = presentEntries(mine, c, live);
		if (present.length)
			await ctx.revertActs['applicationProtection.ipBlacklist.remove']({ ...ctx.dpParams(dp), ip_black_list: present });
		addNote(c, `allow-listed ${mine.join(', ')}: ended at once (${reason})`);
		rb.log(rb.state.phase, `${c.what}: ${mine.join(', ')}`, `allow-list wins (${reason}): removed at once`, {
			before: mine,
			after: [],
			result: present.length ? 'removed' : 'already gone',
		});
	} catch (e) {
		// Not removed: ours again, so the revert still removes them.
		c.live = (c.live as string[]).filter((x) => !mine.includes(x));
		rb.log(rb.state.phase, `${c.what}: ${mine.join(', ')}`, `allow-list: removal failed (${errText(e)})`, {
			result: 'failed',
		});
		throw e;
	}
}
