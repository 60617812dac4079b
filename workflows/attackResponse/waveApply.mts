import type { Change } from '../../api/runbook/contract.ts';
import { claim } from '../coordinator/claims.mts';
import { applyChange } from './apply.mts';
import { recordApplied, skipRefused } from './written.mts';
import { iso, type PlanContext, type Runbook } from './context.mts';
import { entryKey, registerExpiringBlocks, ttlOf } from './ownership.mts';
import { withPatience } from './patience.mts';
import { errText } from './settings.mts';
import { isExact, ownedEntries, recordWrite, stillToWrite } from './written.mts';

/**
 * A wave's blacklist changes (waves.mts) go the first wave's way: their entries HELD at the site's coordinator
 * (another owner's entry is left alone and reported), each write through the same write activity (exactWrites: a
 * listed entry is "already present, not ours", nothing sent), `written` recorded, registered as expiring blocks when
 * the plan says so. Appended to the runbook's changes, so hold-the-line, the hand-over and the revert see them.
 * Returns the number of entries the runbook now owns from this wave.
 */
export async function applyWave(rb: Runbook, ctx: PlanContext, changes: Change[], n: number): Promise<number> {
	const keys = changes.flatMap((c) => (c.after as string[]).map((e) => entryKey(c.target.domain_port_id, e)));
	rb.state.holding ??= 0;
	const r = await claim(
		ctx.site,
		{
			keys,
			mode: 'hold',
			reason: `attack response: blacklisted attack source (wave ${n})`,
			ttlSeconds: ttlOf(ctx),
		},
		rb.patches.inFlightEndsFirst,
	);
	rb.state.holding += r.granted.length;
	const held = new Map(r.held.map((h) => [h.key, h]));
	const keep: Change[] = [];
	for (const c of changes) {
		c.after = (c.after as string[]).filter((e) => {
			const h = held.get(entryKey(c.target.domain_port_id, e));
			if (!h) return true;
			rb.heldByOthers.push(h);
			rb.log('waiting', `${c.what}: ${e}`, `held by ${h.owner} since ${h.since} (${h.reason}); left alone`);
			return false;
		});
		if ((c.after as string[]).length) keep.push(c);
	}
	rb.phase('blacklisting');
	for (const c of keep) {
		c.status = 'pending';
		rb.changes.push(c); // recorded before its writes are sent: a revert after a failure sees it
	}
	const exact = isExact(rb);
	await Promise.all(keep.map((c) => writeWave(rb, ctx, c, exact)));
	await registerExpiringBlocks(rb, ctx, keep);
	rb.phase('waiting');
	return keep.filter((c) => c.status === 'applied').reduce((s, c) => s + ownedEntries(rb, c).length, 0);
}

async function writeWave(rb: Runbook, ctx: PlanContext, c: Change, exact: boolean): Promise<void> {
	try {
		await withPatience(
			rb,
			ctx,
			c.what,
			async () => {
				const value = stillToWrite(rb, c); // a repeat: only what no answer named (written.mts)
				if (value === undefined) return;
				await applyChange(ctx.acts, c, ctx.plan.execution.blacklistConcurrency, value, {
					onRefused: (e, why) => skipRefused(rb, c, e, why),
					onWritten: exact ? (w, v) => recordWrite(c, w, v) : undefined,
				});
			},
			() => rb.state.aborted,
		);
		recordApplied(rb, c, iso(Date.now()));
	} catch (e) {
		// Left `pending`: the revert removes what of it a write answered it wrote; the rest is outcome unknown.
		rb.log('waiting', c.what, `wave write failed (${errText(e)}); the revert removes what of it was written`, {
			result: 'failed',
		});
	}
}
