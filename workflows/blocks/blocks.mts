import { allHandlersFinished, condition, continueAsNew, patched, workflowInfo } from '@temporalio/workflow';
import type { Block, BlocksInput } from './shared.mts';
import { BlocksRun, BULK_RUN_EVENTS, LOCAL_RUN_EVENTS } from './context.mts';
import { startDueWork } from './dueWork.mts';
import { registerBlocksHandlers } from './handlers.mts';
import { waitForNext } from './nextWake.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { blocksRules } from '../input/inputRules.mts';

/**
 * Expiring blocks of one domain-port (workflow id `blocks-<site>-<dp>`, started by Update-with-start): every block's
 * timer in one workflow — one timer, the earliest expiry; continued as new. Each block HOLDS its entry's key at the
 * site's coordinator (one owner per setting) from its add to its removal; an entry a runbook holds is not written:
 * the block queues as the key's successor and takes the entry over at the runbook's revert (workflows/README.md
 * "Expiring blocks"). At expiry exactly the entry is removed, only if it is still on the list as written; otherwise
 * nothing is written and the block is recorded `taken-over`.
 *
 * The steps, one file each in workflows/blocks/: context.mts (the run's state, activity proxies, limits),
 * handlers.mts (Updates, query, hand-over signal), dueWork.mts (start the adds, removals and releases that are due),
 * adds.mts, removals.mts, nextWake.mts (the timer: wait for the next thing to do).
 */
export async function blocks(input: BlocksInput): Promise<{ site_id: string; domain_port_id: string; ended: Block[] }> {
	// Before the patch markers: a valid input replays as before; a bad one fails the run, naming the field.
	failOn('blocks input', problems(input, blocksRules));
	// Runs started before batched removals (AUTO_UPGRADE moves them to this build) replay the old way: no marker.
	const batched = patched('blocks-batched-removals');
	// Runs started before bulk adds (one activity per add batch: claim + read + POSTs; releases by signal; removal
	// cadence; timers never cancelled; shorter runs) replay the batched way (test: fixtures/blocks-batched-run.json).
	const bulk = batched && patched('blocks-bulk-adds');
	// Runs started before local removals (the removal a local activity that also carries earlier releases; a removal
	// starts at the expiry when none is in flight, no cadence) replay the bulk way (test: fixtures/blocks-bulk-run.json).
	const local = bulk && patched('blocks-local-removals');
	const run = new BlocksRun(input, { batched, bulk, local });
	const { site, dp, byRange, ended } = run;
	registerBlocksHandlers(run);

	for (;;) {
		const wantNewRun =
			workflowInfo().continueAsNewSuggested ||
			workflowInfo().historyLength > (local ? LOCAL_RUN_EVENTS : bulk ? BULK_RUN_EVENTS : 3000);
		startDueWork(run, wantNewRun);
		const idle = run.inflight === 0 && (!batched || run.toRelease.length === 0);
		if (byRange.size === 0 && idle && allHandlersFinished()) return { site_id: site, domain_port_id: dp, ended };
		if (bulk && byRange.size === 0 && idle) {
			// The last handler finishes in the same activation as the batch that ended it: wait for it (nothing else
			// would wake this loop), then look again.
			run.dirty = false;
			await condition(() => allHandlersFinished() || run.pending.length > 0 || run.dirty);
			continue;
		}
		if (wantNewRun && idle && run.pending.length === 0) {
			await condition(() => allHandlersFinished() && run.inflight === 0);
			if (!run.pending.length && (!batched || !run.toRelease.length))
				await continueAsNew<typeof blocks>({
					site_id: site,
					domain_port_id: dp,
					maxPrefix: input.maxPrefix,
					blocks: [...byRange.values()],
					ended: ended.slice(-100),
				});
		}
		await waitForNext(run);
	}
}
