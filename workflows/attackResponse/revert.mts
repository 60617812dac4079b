import { CancellationScope } from '@temporalio/workflow';
import type { Change, WriteResult } from '../../api/runbook/contract.ts';
import { iso, type PlanContext, type Runbook } from './context.mts';
import { applyChange } from './apply.mts';
import { compare, needFor, presentEntries, readSettings } from './live.mts';
import { errText } from './settings.mts';
import { withPatience } from './patience.mts';
import { entryKey, handOverEntries } from './ownership.mts';
import {
	addNote,
	isExact,
	keepTheirs,
	ownedEntries,
	ownsSetting,
	restoreValue,
	unknownEntries,
	unknownText,
} from './written.mts';

/**
 * Step 6 — revert, whatever happened before (success, abort, failure, cancellation): walks the changes in reverse,
 * reads the live value and restores the snapshot only where the live value is still the runbook's; a value an
 * operator set meanwhile is kept and reported as a conflict. An API that does not answer is waited for (up to
 * plan.apiPatienceSeconds): nothing is left tightened because the vendor had an outage.
 */
export async function revertAll(rb: Runbook, ctx: PlanContext): Promise<void> {
	rb.phase('reverting');
	await CancellationScope.nonCancellable(async () => {
		// Entries an expiring block waits for pass to it: they stay on the list until the block's expiry.
		const handed = await handOverEntries(rb, ctx);
		for (const c of [...rb.changes].reverse()) {
			if (c.status !== 'applied' && c.status !== 'pending') {
				if (c.status === 'planned') c.status = 'unchanged';
				continue;
			}
			try {
				await withPatience(rb, ctx, `revert of ${c.what}`, () => revertChange(rb, ctx, c, handed));
			} catch (e) {
				c.status = 'revert-failed';
				c.note = errText(e);
			}
			c.revertedAt = iso(Date.now());
			rb.obs.reverted(c);
			const conflict = (c.status as Change['status']) === 'conflict';
			rb.log(
				'reverting',
				c.what,
				conflict
					? 'changed by someone else after our write: their value kept'
					: isExact(rb)
						? 'restore what our write replaced'
						: 'restore the snapshot',
				{
					before: c.kind === 'blacklistAdd' ? ownedEntries(rb, c) : c.after,
					after: conflict ? c.live : restoreValue(rb, c),
					result: c.status + (c.note ? `: ${c.note}` : ''),
				},
			);
		}
	});
	rb.state.revertedAt = iso(Date.now());
}

async function revertChange(rb: Runbook, ctx: PlanContext, c: Change, handed: Map<string, string>): Promise<void> {
	const live = await readSettings(ctx, ctx.revertReads, needFor([c]));
	if (c.kind === 'blacklistAdd') {
		const to = (e: string) => handed.get(entryKey(c.target.domain_port_id, e));
		const owned = ownedEntries(rb, c);
		const presentAll = presentEntries(owned, c, live);
		const present = presentAll.filter((e) => !to(e));
		if (present.length)
			await ctx.revertActs['applicationProtection.ipBlacklist.remove']({
				...ctx.dpParams(c.target.domain_port_id),
				ip_black_list: present,
			});
		const gone = owned.filter((e) => !presentAll.includes(e));
		const notes: string[] = c.note ? [c.note] : [];
		if (gone.length) notes.push(`already removed by someone else: ${gone.join(', ')}`);
		const kept = presentAll.filter((e) => to(e));
		if (kept.length)
			notes.push(
				`handed over to ${[...new Set(kept.map((e) => to(e)))].join(', ')}: ${kept.join(', ')} (removed at the block's expiry)`,
			);
		if (notes.length) c.note = notes.join('; ');
		// Listed, but no write of ours answered that it wrote them: maybe someone else's, so never removed.
		const unsure = presentEntries(unknownEntries(rb, c), c, live);
		if (unsure.length) {
			const prev = c.written?.unknown;
			c.written = { ...c.written, unknown: [...new Set([...(Array.isArray(prev) ? prev : []), ...unsure])] };
			addNote(c, unknownText(c, unsure));
		}
		c.status = present.length ? 'restored' : 'unchanged';
		return;
	}
	// Since `exact-ownership`: the value our write replaced (someone may have changed it after the snapshot).
	const to = restoreValue(rb, c);
	const { value, is } = compare(c, live, to);
	if (is === 'after' && !ownsSetting(rb, c)) {
		// At our value, but no write of ours answered that it wrote it (failed, given up): maybe someone else's.
		c.written = { ...c.written, unknown: c.after };
		addNote(c, unknownText(c));
		c.status = 'unchanged';
		return;
	}
	let answer: WriteResult | undefined;
	// Written only while still ours, as the write itself reads it (apply.mts WriteHooks.expect, as hold-the-line's
	// re-apply): a person's value set since our read (a workflow task, the activity's scheduling, a retry after a kill)
	// is theirs (interleave seeds 462, 477).
	if (is === 'after') await applyChange(ctx.revertActs, c, 1, to, { expect: c.after, onWritten: (w) => (answer = w) });
	const theirs = answer && 'theirs' in answer;
	if (is === 'other' || theirs) keepTheirs(c, theirs ? answer?.theirs : value);
	c.status = theirs || is === 'other' ? 'conflict' : is === 'after' ? 'restored' : 'unchanged';
}
