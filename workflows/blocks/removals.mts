import { getExternalWorkflowHandle, workflowInfo } from '@temporalio/workflow';
import { release } from '../coordinator/claims.mts';
import { coordinatorIdFor, MAX_KEYS, releaseSignal } from '../coordinator/coordination.mts';
import { BLOCKS_ACTIVITY, blockKey, type Block, type RemoveDueResult } from './shared.mts';
import { iso, localWrites, writes, type BlocksRun } from './context.mts';

/**
 * Removing due entries: exactly the entry, only if it is still on the list as written; otherwise nothing is written
 * and the block is recorded `taken-over`. Then the entry's hold at the site's coordinator is released. Three
 * generations, one per recorded code path (blocks.mts `Modes`): one activity per entry, one activity per due batch,
 * one LOCAL activity per due batch (today's).
 */

const takenOver = (at = iso(Date.now())) =>
	`not on the list as written at ${at} (removed or changed by someone else): nothing written`;

/**
 * Batched: every due entry in one activity (one read, one DELETE naming them all); their holds are released by the
 * main loop, coalesced with other releases (a runbook waiting for such a key waits for that release too).
 */
export async function removeMany(run: BlocksRun, due: Block[]): Promise<void> {
	const { site, dp } = run;
	for (const b of due) b.state = 'removing';
	const r = await writes[BLOCKS_ACTIVITY.removeMany]({
		site_id: site,
		domain_port_id: dp,
		entries: due.map((b) => b.range),
	});
	const byEntry = new Map<string, { removed: boolean; note?: string }>(
		((r?.results ?? []) as { entry: string; removed: boolean; note?: string }[]).map((x) => [x.entry, x]),
	);
	for (const b of due) {
		const x = byEntry.get(b.range);
		if (x?.removed) run.end(b, 'removed', x.note ?? b.note);
		else run.end(b, 'taken-over', takenOver());
		run.toRelease.push(blockKey(dp, b.range));
	}
}

/**
 * Local removals: the due entries in ONE local activity (one read, one DELETE naming them all) that first releases
 * `carry`: keys whose removal an earlier workflow task recorded. Its own keys are released later the same way.
 */
export async function removeDue(run: BlocksRun, due: Block[], carry: string[]): Promise<void> {
	const { site, dp } = run;
	for (const b of due) b.state = 'removing';
	for (const k of carry) run.releasingKeys.add(k);
	run.inflightUntil = Math.max(...due.map((b) => Date.parse(b.expiresAt)));
	let r: RemoveDueResult;
	try {
		r = await localWrites[BLOCKS_ACTIVITY.removeDue]({
			site_id: site,
			domain_port_id: dp,
			entries: due.map((b) => ({ range: b.range, expiresAt: b.expiresAt })),
			...(carry.length ? { release: carry } : {}),
		});
	} catch (e) {
		run.toRelease.push(...carry);
		throw e;
	} finally {
		for (const k of carry) run.releasingKeys.delete(k);
	}
	const byEntry = new Map(r.results.map((x) => [x.entry, x]));
	for (const b of due) {
		// Ended when the removal saw the entry leave the list, not at this task's time: the task started up to the
		// timer's lead before the expiry the removal waited for.
		const x = byEntry.get(b.range);
		if (x?.removed) run.end(b, 'removed', x.note ?? b.note, x.at);
		else run.end(b, 'taken-over', takenOver(x?.at), x?.at);
		run.queueRelease(blockKey(dp, b.range));
	}
}

/** Before batched removals: one activity per entry, then one release (kept for runs that started on it). */
export async function removeBatch(run: BlocksRun, due: Block[]): Promise<void> {
	const { site, dp } = run;
	for (const b of due) b.state = 'removing';
	await Promise.all(
		due.map(async (b) => {
			const r = await writes[BLOCKS_ACTIVITY.remove]({ site_id: site, domain_port_id: dp, entry: b.range });
			if (r?.removed) run.end(b, 'removed', r.note ?? b.note);
			else run.end(b, 'taken-over', takenOver());
		}),
	);
	await release(
		site,
		due.map((b) => blockKey(dp, b.range)),
	);
}

/**
 * Bulk mode: the holds of removed entries end by a signal to the site's coordinator (no answer needed): no activity
 * slot waits for the coordinator meanwhile (an Update per release did: with 100 domain-ports the releases filled the
 * worker's 50 activity slots and the removals queued behind them). No coordinator running: nothing is held.
 */
export async function signalRelease(run: BlocksRun, keys: string[]): Promise<void> {
	for (let i = 0; i < keys.length; i += MAX_KEYS)
		await getExternalWorkflowHandle(coordinatorIdFor(run.site))
			.signal(releaseSignal, { owner: workflowInfo().workflowId, keys: keys.slice(i, i + MAX_KEYS) })
			.catch(() => undefined);
}
