import type { Change, WriteResult } from '../../api/runbook/contract.ts';
import { applyChange } from './apply.mts';
import type { PlanContext, Runbook } from './context.mts';
import { compare, presentEntries, type Settings } from './live.mts';
import { errText } from './settings.mts';
import {
	addNote,
	isExact,
	keepTheirs,
	notOursText,
	ownedEntries,
	recordWrite,
	restoreValue,
	unknownText,
} from './written.mts';

/**
 * Since `reapply-while-seen` a re-apply is written like the revert's restore (apply.mts WriteHooks.expect): only
 * while the setting is still at the value the poll saw, as the write activity itself reads it; found at anything else
 * (a person's value set since the poll: a workflow task, the activity's scheduling, a retry after a kill), nothing is
 * sent and it is theirs — a conflict with both values. Before it, the re-apply wrote whatever it found (issue 37).
 */
export const REAPPLY_WHILE_SEEN_PATCH = 'reapply-while-seen';

/**
 * Hold the line (during the wait and the cooldown): every applied change is compared with the live settings read
 * in the same round as the poll.
 *  - still the runbook's value → nothing;
 *  - back at the value the runbook replaced (its write undone: a person, a script, a console reset, the service
 *    itself — the API names no author, so all of these are one case), or a blacklist entry of ours gone: with
 *    plan.holdTheLine `yield` (default since `exact-ownership`) the person wins — theirs from now on, reported as a
 *    conflict, never written again nor reverted (an entry they put back later stays theirs); with `reapply` (and
 *    runbooks recorded before it) written again, audit `re-applied`, on the condition every write after a read of
 *    ours obeys: the setting still at the value the poll saw, the entry still absent (the add's own read);
 *  - any other value → someone decided: kept, reported as a conflict, and no longer watched or reverted.
 * A failed re-apply is tried again at the next poll.
 */
export async function holdTheLine(rb: Runbook, ctx: PlanContext, applied: Change[], live: Settings): Promise<void> {
	const yieldTo = isExact(rb) && ctx.plan.holdTheLine !== 'reapply';
	for (const c of applied) {
		if (c.kind === 'blacklistAdd') {
			const owned = ownedEntries(rb, c);
			const present = presentEntries(owned, c, live);
			const missing = owned.filter((e) => !present.includes(e));
			if (!missing.length) continue;
			if (yieldTo) yieldEntries(rb, c, missing, owned.length);
			else await reapply(rb, ctx, c, missing, `${missing.length} blacklisted range(s) removed during the attack`);
			continue;
		}
		const seen = restoreValue(rb, c);
		const { value, is } = compare(c, live, seen);
		if (is === 'before' && !yieldTo) {
			const expect = rb.patches.reapplyWhileSeen ? { expect: seen } : {};
			await reapply(rb, ctx, c, c.after, 'the setting was back at its value before the attack', expect);
		} else if (is !== 'after') conflict(rb, c, value);
	}
}

/** Someone else's value after our write: kept, reported with both values, no longer watched or reverted. */
function conflict(rb: Runbook, c: Change, value: unknown): void {
	c.status = 'conflict';
	rb.obs.conflict(c);
	keepTheirs(c, value);
	rb.log(
		'waiting',
		c.what,
		'changed by someone else after our write: their value is kept, not re-applied and not reverted',
		{
			before: c.after,
			after: value,
			result: 'conflict',
		},
	);
}

/** Entries of ours someone removed: theirs from now on (`live`), never re-added nor removed by this runbook. */
function yieldEntries(rb: Runbook, c: Change, missing: string[], owned: number): void {
	const theirs = [...(Array.isArray(c.live) ? (c.live as string[]) : []), ...missing];
	c.live = theirs;
	addNote(c, `removed by someone else after our write: ${theirs.join(', ')} (left as they set it)`);
	if (missing.length === owned) {
		c.status = 'conflict';
		rb.obs.conflict(c);
	}
	rb.log(
		'waiting',
		`${c.what}: ${missing.join(', ')}`,
		'removed by someone else after our write: left as they set it, not re-added and not removed at the revert',
		{
			before: missing,
			after: [],
			result: 'conflict',
		},
	);
}

async function reapply(
	rb: Runbook,
	ctx: PlanContext,
	c: Change,
	value: unknown,
	why: string,
	when: { expect?: unknown } = {},
): Promise<void> {
	try {
		let theirs: WriteResult | undefined;
		// A re-add that finds the entry listed again: someone put it back after removing it; theirs from now on.
		await applyChange(ctx.acts, c, ctx.plan.execution.blacklistConcurrency, value, {
			...when,
			onWritten: (w, v) => {
				if (w && 'theirs' in w) theirs = w;
				else if (isExact(rb)) recordWrite(c, w, v);
			},
		});
		if (theirs && 'theirs' in theirs) return conflict(rb, c, theirs.theirs);
		addNote(c, notOursText(c));
		addNote(c, unknownText(c));
		c.reapplied = (c.reapplied ?? 0) + 1;
		rb.state.reapplied++;
		rb.obs.reapplied(c);
		rb.log('waiting', c.what, `${why}: re-applied`, { before: c.before, after: value, result: 're-applied' });
	} catch (e) {
		rb.log('waiting', c.what, `${why}: re-apply failed (${errText(e)}); tried again at the next poll`, {
			result: 're-apply failed',
		});
	}
}
