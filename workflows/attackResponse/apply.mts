import type { Change, WriteResult } from '../../api/runbook/contract.ts';
import type { WriteCondition } from '../pure/activityTypes.mts';
import { iso, type Acts, type PlanContext, type Runbook } from './context.mts';
import { withPatience } from './patience.mts';
import { REARM_BLACKLIST_CONCURRENCY } from './rearm.mts';
import { dpOf, SETTING_OPS, settingParams, settleAll, type Params } from './settings.mts';
import { holdEntries, registerExpiringBlocks } from './ownership.mts';
import { addEachIn, refusalText, type AddEach } from './addEach.mts';
import { decideExact, recordApplied, recordWrite, skipRefused, stillToWrite } from './written.mts';
import { applyAtOnce, applyRun, runsOf } from './writeSteps.mts';

/**
 * Step 4 — apply: writes in groups, in the plan's order: detection mode → detection items → blacklists → IP
 * authentication → switches. A group's writes are independent (different settings) and go out at once when
 * plan.execution.parallel; the next group starts when every write of the group has finished. Statuses and the audit
 * are recorded in the changes' order, whatever order the writes finish in. `entriesHeld` 'in-write': a re-arm's write
 * task holds its entries itself (ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH); a plan not written in one task holds
 * them beside, as before.
 */
export async function applyChanges(
	rb: Runbook,
	ctx: PlanContext,
	entriesHeld?: Promise<void> | 'in-write',
): Promise<void> {
	const exact = decideExact(rb);
	let firstGroup = true;
	const atOnce = rb.state.rearm !== undefined && rb.patches.rearmFast; // rearm.mts REARM_FAST_PATCH
	const p = rb.patches;
	// writeSteps.mts WRITE_STEPS_PATCH: the groups up to the blacklist's in one task, the rest in another
	const runs = exact && p.addEach && p.repeatUnanswered && p.writeSteps && ctx.plan.execution.parallel;
	const inWrite = entriesHeld === 'in-write' && runs && atOnce;
	let waiting =
		entriesHeld === 'in-write' ? (inWrite ? undefined : heldLater(holdEntries(rb, ctx, true))) : entriesHeld;
	try {
		const groups = writeGroups(rb.changes, ctx.plan.execution.parallel, atOnce);
		if (runs && atOnce && !rb.state.aborted)
			await applyAtOnce(rb, ctx, groups[0] ?? [], inWrite ? 'in-write' : waiting);
		for (const run of runs && !atOnce ? runsOf(groups, waiting !== undefined) : []) {
			if (rb.state.aborted) break;
			if (waiting && run.some((g) => g.some((c) => c.kind === 'blacklistAdd'))) {
				await waiting; // no entry is written before it is held: the hold drops what someone else holds
				waiting = undefined;
			}
			await applyRun(
				rb,
				ctx,
				run.map((g) => g.filter((c) => rb.changes.includes(c))).filter((g) => g.length),
			);
		}
		for (const planned of runs ? [] : groups) {
			if (rb.state.aborted) break;
			let group = planned;
			if (waiting && !atOnce && planned.some((c) => c.kind === 'blacklistAdd')) {
				// No entry is written before it is held: the hold drops the entries (and changes) someone else holds.
				await waiting;
				waiting = undefined;
				group = planned.filter((c) => rb.changes.includes(c));
				if (!group.length) continue;
			}
			// Every write is a regular activity since exact ownership (written.mts): one whose answer a killed worker lost
			// is retried as attempt 2 (which takes a value at its target as its own), never re-run as a fresh local attempt
			// 1 that would find its own write and call it someone else's (never reverted). Runbooks recorded before it ran
			// the groups after the first as local activities (plan.execution.localActivities 'all'); the first group was
			// regular even then, so the snapshot's local-activity markers are in history before any write is sent.
			const acts = firstGroup || exact ? ctx.acts : ctx.laterWrites;
			// At once: the entries' hold is awaited by the blacklist changes alone, the other writes go out meanwhile.
			await applyGroup(rb, ctx, group, acts, exact, atOnce ? { entriesHeld: waiting } : undefined);
			firstGroup = false;
		}
	} finally {
		// A hold still under way (no blacklist group, an abort, a failed write) ends first: releaseAll must follow it.
		await waiting?.catch(() => undefined);
	}
	rb.state.mitigatedAt = iso(Date.now());
}

/** A hold awaited later: its failure is thrown where it is awaited, not an unhandled rejection meanwhile. */
function heldLater(p: Promise<void>): Promise<void> {
	p.catch(() => undefined);
	return p;
}

/** One group's writes at once; statuses and the audit recorded in the changes' order, whatever order they finish in. */
async function applyGroup(
	rb: Runbook,
	ctx: PlanContext,
	group: Change[],
	writeActs: Acts,
	exact: boolean,
	atOnce?: { entriesHeld?: Promise<void> },
) {
	const ex = ctx.plan.execution;
	const entriesHeld = atOnce?.entriesHeld;
	const concurrency = atOnce ? Math.max(ex.blacklistConcurrency, REARM_BLACKLIST_CONCURRENCY) : ex.blacklistConcurrency;
	const k = group[0].kind;
	rb.phase(
		k === 'detectionMode' || k === 'detectionPolicy'
			? 'tightening'
			: k === 'blacklistAdd'
				? 'blacklisting'
				: 'rate-limiting',
	);
	for (const c of group) c.status = 'pending';
	const done: boolean[] = group.map(() => false);
	const at: string[] = [];
	const settled = await Promise.allSettled(
		group.map(async (c, i) => {
			if (entriesHeld && c.kind === 'blacklistAdd') {
				await entriesHeld; // no entry is written before it is held; the hold drops what someone else holds
				if (!rb.changes.includes(c)) return;
			}
			// An API outage is waited out (patience.mts): not knowing is no reason to give up the mitigation.
			await withPatience(
				rb,
				ctx,
				c.what,
				async () => {
					const value = stillToWrite(rb, c); // a repeat: only what no answer named (written.mts)
					if (value === undefined) return;
					await applyChange(writeActs, c, concurrency, value, {
						onRefused: (e, why) => skipRefused(rb, c, e, why),
						onWritten: exact ? (w, v) => recordWrite(c, w, v) : undefined,
						addEach: exact && rb.patches.addEach ? addEachIn(ctx) : undefined, // addEach.mts ADD_EACH_PATCH
					});
				},
				() => rb.state.aborted,
			);
			done[i] = true;
			at[i] = iso(Date.now());
		}),
	);
	group.forEach((c, i) => {
		if (done[i]) recordApplied(rb, c, at[i]);
	});
	const failed = settled.find((r) => r.status === 'rejected');
	if (failed) throw (failed as PromiseRejectedResult).reason;
	// plan.blacklist.expireAfterSeconds (ownership.mts)
	if (group.some((c) => c.kind === 'blacklistAdd')) await registerExpiringBlocks(rb, ctx);
}

const KIND_ORDER: Change['kind'][] = ['detectionMode', 'detectionPolicy', 'blacklistAdd', 'ipAuth', 'switch'];

/**
 * Parallel: one group per kind (in KIND_ORDER, each in the changes' order), or all in one (`atOnce`: a re-arm);
 * otherwise one change per group.
 */
function writeGroups(changes: Change[], parallel: boolean, atOnce = false): Change[][] {
	if (!parallel) return changes.map((c) => [c]);
	if (atOnce) return changes.length ? [changes] : [];
	return KIND_ORDER.map((k) => changes.filter((c) => c.kind === k)).filter((g) => g.length > 0);
}

/** The guard's refusal inside an activity failure (ApplicationFailure type 'BlastRadius', worker/src/activities.mts). */
function guardRefusal(err: unknown): string | undefined {
	for (
		let e = err as { type?: string; message?: string; cause?: unknown } | undefined, d = 0;
		e && d < 4;
		e = e.cause as typeof e, d++
	)
		if (e.type === 'BlastRadius') return refusalText(e.message);
	return undefined;
}

export interface WriteHooks {
	/** A blacklist entry the blast-radius guard refuses is handed over instead of failing the write. */
	onRefused?: (entry: string, why: string) => void;
	/** Each write's answer (a blacklist change: one per entry) with the value it was asked to write. */
	onWritten?: (w: WriteResult | undefined, value: unknown) => void;
	/**
	 * A setting's write that follows a read of the runbook's (the revert's restore: our value; hold-the-line's re-apply:
	 * the value the poll saw) is sent only while the setting is live at this value, checked by the write activity on
	 * its own read (WriteCondition); found at another, nothing is sent and the answer is `theirs` (the person wins).
	 */
	expect?: unknown;
	/** A blacklist change's entries in one activity (addEach.mts), not one activity per entry. */
	addEach?: AddEach;
}

/**
 * Writes a change's `after` value (or, with `value`, that value: the revert writes what it restores the same way).
 */
export async function applyChange(
	acts: Acts,
	c: Change,
	blacklistConcurrency: number,
	value: unknown = c.after,
	hooks: WriteHooks = {},
): Promise<void> {
	const done = (w: unknown, v: unknown = value) => hooks.onWritten?.(w as WriteResult | undefined, v);
	if (c.kind !== 'blacklistAdd') {
		const write = acts[SETTING_OPS[c.kind]] as (p: Params, when?: WriteCondition) => Promise<unknown>;
		const params = settingParams(c, value);
		// One argument unless there is a condition: the apply's activity inputs stay as they were recorded.
		return done(
			await (hooks.expect === undefined ? write(params) : write(params, { expect: settingParams(c, hooks.expect) })),
		);
	}
	if (hooks.addEach)
		return hooks.addEach(c.target.domain_port_id, value as string[], blacklistConcurrency, {
			written: (w, e) => done(w, [e]),
			refused: hooks.onRefused,
		});
	return settleAll(
		(value as string[]).map((e) => async () => {
			try {
				done(await acts['applicationProtection.ipBlacklist.add']({ ...dpOf(c.target), ip_black_list: e }), [e]);
			} catch (err) {
				const why = hooks.onRefused && guardRefusal(err);
				if (!why) throw err;
				hooks.onRefused?.(e, why);
			}
		}),
		blacklistConcurrency,
	);
}
