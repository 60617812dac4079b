import { condition, sleep } from '@temporalio/workflow';
import { blockKey } from './shared.mts';
import { MAX_LEAD_MS, REMOVAL_CADENCE_MS, type BlocksRun } from './context.mts';

/**
 * The end of a turn of the main loop (blocks.mts): wait until something is to be done — the earliest expiry still
 * ahead (a timer), a new add, or the end of work in flight (`run.wake()`). Not `async` on purpose: it returns the
 * condition's own promise, so the loop resumes in the same microtask turn as when it awaited `condition` itself
 * (recorded histories replay with the same command order).
 */
export function waitForNext(run: BlocksRun): Promise<unknown> {
	const { dp, byRange } = run;
	const { batched, bulk, local } = run.modes;
	// The timer: the earliest expiry still ahead (entries already due wait for the removal in flight, which wakes us).
	const t = Date.now();
	let next = Math.min(
		...[...byRange.values()]
			.filter((b) => b.state === 'active' && (!batched || Date.parse(b.expiresAt) > t))
			.map((b) => Date.parse(b.expiresAt)),
	);
	// Local: aim `lead` early; a timer set while a removal runs starts when that removal's task completes, after it
	// waited for its entries: count from there.
	let from = t;
	if (local && Number.isFinite(next)) {
		next = Math.max(t, next - run.lead);
		if (run.removing) from = Math.max(t, run.inflightUntil);
	}
	// Bulk: entries already due but held back by the cadence wake us when it allows the next removal.
	if (
		bulk &&
		!local &&
		!run.removing &&
		[...byRange.values()].some((b) => b.state === 'active' && Date.parse(b.expiresAt) <= t)
	)
		next = Math.min(next, run.lastRemovalAt + REMOVAL_CADENCE_MS);
	run.dirty = false;
	// Batched: adds that arrive while a batch is in flight wait for it (its end wakes us), else this loop would spin.
	// Local: an add waiting for a release of its key is woken by that release's end.
	const addBlocked = () => local && run.pending.some((p) => run.releasingKeys.has(blockKey(dp, p.block.range)));
	const wakeUp = () => run.dirty || (run.pending.length > 0 && !(batched && run.adding) && !addBlocked());
	if (bulk) {
		// Bulk: a timer is started only when none already pending fires by `next`, and never cancelled (a stale one
		// fires and wakes the loop once): no cancel + restart per wake-up (removal done, release sent, add), which
		// was two commands and a cancelled scope kept by the run each time.
		// Local: what the removal in flight reaches before its task completes needs no timer (its end wakes us).
		const needed = Number.isFinite(next) && !(local && run.removing && next <= from);
		if (needed && !run.timers.some((at) => at <= next)) {
			const at = next;
			run.timers.push(at);
			void sleep(Math.max(1, at - (local ? from : Date.now()))).then(() => {
				run.timers.splice(run.timers.indexOf(at), 1);
				if (local) run.lead = Math.min(MAX_LEAD_MS, Math.max(0, run.lead + (Date.now() - at - run.lead) / 4));
				run.wake();
			});
		}
		return condition(wakeUp);
	}
	if (Number.isFinite(next)) return condition(wakeUp, Math.max(1, next - Date.now()));
	return condition(wakeUp);
}
