import { workflowInfo } from '@temporalio/workflow';
import { release } from '../coordinator/claims.mts';
import { blockKey, type Block } from './shared.mts';
import { addBatch, addBatchBulk } from './adds.mts';
import { MAX_REMOVE_BATCH, RELEASE_CARRY_MS, REMOVAL_CADENCE_MS, type BlocksRun } from './context.mts';
import { removeBatch, removeDue, removeMany, signalRelease } from './removals.mts';

/**
 * One turn of the main loop (blocks.mts): start what is due now — the adds that arrived, the removal of the entries
 * that expired, the release of the holds of removed entries — as work in flight (`run.flag` / `run.spawn`), without
 * waiting for it; its end wakes the loop. Each recorded code path keeps its own way (`Modes`).
 */
export function startDueWork(run: BlocksRun, wantNewRun: boolean): void {
	const { dp, byRange } = run;
	const now = Date.now();
	let due: Block[];
	if (run.modes.local) {
		// Local removals: a removal starts at the expiry when none is in flight (one local activity: one task round
		// trip); entries due meanwhile go together in the next. An add waits while a release of its key is in flight.
		if (
			run.pending.length &&
			!run.adding &&
			!run.pending.some((p) => run.releasingKeys.has(blockKey(dp, p.block.range)))
		) {
			const batch = run.pending;
			run.pending = [];
			run.flag((v) => (run.adding = v), addBatchBulk(run, batch));
		}
		// Entries due within `lead` go now: the removal waits for each one's expiry (never removed before it).
		due = run.removing
			? []
			: [...byRange.values()]
					.filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now + run.lead)
					.slice(0, MAX_REMOVE_BATCH);
		if (due.length) {
			// Keys queued in an earlier workflow task are recorded as removed: this removal releases them first.
			const carry =
				run.queuedAtHistory < workflowInfo().historyLength && now - run.releaseSince >= RELEASE_CARRY_MS
					? run.toRelease.splice(0)
					: [];
			run.flag((v) => (run.removing = v), removeDue(run, due, carry));
		}
		if (run.toRelease.length && !run.releasing && !run.removing) {
			const nextDue = Math.min(
				...[...byRange.values()].filter((b) => b.state === 'active').map((b) => Date.parse(b.expiresAt)),
			);
			if (wantNewRun || nextDue > now + RELEASE_CARRY_MS || now - run.releaseSince >= 2 * RELEASE_CARRY_MS) {
				const keys = run.toRelease.splice(0);
				for (const k of keys) run.releasingKeys.add(k);
				run.flag(
					(v) => (run.releasing = v),
					signalRelease(run, keys).finally(() => keys.forEach((k) => run.releasingKeys.delete(k))),
				);
			}
		}
	} else if (run.modes.batched) {
		// Group commit: while a batch is in flight, new adds / due entries / releases gather for the next one, so
		// under load the batches grow instead of the activities.
		const bulk = run.modes.bulk;
		if (run.pending.length && !run.adding) {
			const batch = run.pending;
			run.pending = [];
			run.flag((v) => (run.adding = v), bulk ? addBatchBulk(run, batch) : addBatch(run, batch));
		}
		const cadenceOk = !bulk || now >= run.lastRemovalAt + REMOVAL_CADENCE_MS;
		due =
			run.removing || !cadenceOk
				? []
				: [...byRange.values()]
						.filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now)
						.slice(0, MAX_REMOVE_BATCH);
		if (due.length) {
			run.lastRemovalAt = now;
			run.flag((v) => (run.removing = v), removeMany(run, due));
		}
		if (run.toRelease.length && !run.releasing)
			run.flag(
				(v) => (run.releasing = v),
				bulk ? signalRelease(run, run.toRelease.splice(0)) : release(run.site, run.toRelease.splice(0)),
			);
	} else {
		if (run.pending.length) {
			const batch = run.pending;
			run.pending = [];
			run.spawn(addBatch(run, batch));
		}
		due = [...byRange.values()].filter((b) => b.state === 'active' && Date.parse(b.expiresAt) <= now);
		if (due.length) run.spawn(removeBatch(run, due));
		if (run.toRelease.length) run.spawn(release(run.site, run.toRelease.splice(0)).then(() => undefined));
	}
}
