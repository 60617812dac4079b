import { proxyActivities } from '@temporalio/workflow';
import type { Change, WriteResult } from '../../api/runbook/contract.ts';
import {
	WRITE_STEPS_ACTIVITY,
	WRITE_STEPS_HELD_ACTIVITY,
	type WriteStep,
	type WriteStepsInput,
	type WriteStepsResult,
} from '../pure/activityNames.mts';
import { answersOf, refusalText } from './addEach.mts';
import { iso, type PlanContext, type Runbook } from './context.mts';
import type { ClaimResult } from '../coordinator/coordination.mts';
import { claim, endsFirstOption } from '../coordinator/claims.mts';
import { entriesRequest, entryKey, registerExpiringBlocks, tookEntries } from './ownership.mts';
import { withPatience } from './patience.mts';
import { REARM_BLACKLIST_CONCURRENCY } from './rearm.mts';
import { SETTING_OPS, settingParams, type SettingKind } from './settings.mts';
import { recordApplied, recordWrite, skipRefused, stillToWrite } from './written.mts';

/**
 * Patch (issue 42): a first plan's write groups run in one activity per run of groups (worker/src/activities/
 * exactBatch.mts `exactWriteSteps`), not one activity per group — the detection groups in one, the blacklist group
 * and the groups after it in another (the entries' hold is awaited between them), or all in one when the entries
 * were held before the writes. The groups keep their order and each write its read, record and exact answer; what
 * goes is the Temporal task round trip between one group's last answer and the next group's first read (three per
 * bench 3 runbook). A re-arm's plan at once (rearm.mts) is one activity too, or two when its entries' hold is still
 * under way (the settings meanwhile, the entries once held), not one per change. Runbooks recorded before it ran one
 * activity per group (a re-arm: one per change).
 */
export const WRITE_STEPS_PATCH = 'write-groups-one-task';

/** A change with what it still writes: a setting's value, or the blacklist entries no answer named yet. */
export interface RunWrite {
	c: Change;
	value: unknown;
}

export interface RunAnswers {
	written(c: Change, w: WriteResult | undefined, value: unknown): void;
	refused(c: Change, entry: string, why: string): void;
	/** The activity held the entries itself (`holdIn`): the coordinator's answer, before the entries' answers. */
	held?(r: ClaimResult): void;
}

/**
 * Writes `groups` in order in ONE activity (a group's writes at once); each answer handed over as it would be by
 * the write's own activity (a blacklist change: one per entry). A failure still hands over the answers before and
 * beside it (its details, or the record of a timed-out attempt), then is thrown. `holdIn`: the activity holds the
 * blacklist entries itself, beside their reads (ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH). `endsFirst`: a cancelled
 * runbook waits for the activity's end and its answers before it reverts (ownership.mts IN_FLIGHT_ENDS_FIRST_PATCH).
 */
export async function writeRun(
	ctx: PlanContext,
	groups: RunWrite[][],
	concurrency: number,
	on: RunAnswers,
	{ holdIn = false, endsFirst = false } = {},
): Promise<void> {
	const all = groups.flat();
	if (!all.length) return;
	const key = (w: RunWrite) => `c${all.indexOf(w)}`;
	const input: WriteStepsInput = {
		groups: groups.map((g) => g.map((w): WriteStep => stepOf(ctx, w, key(w), concurrency))),
	};
	const entries = all.flatMap((w) =>
		w.c.kind === 'blacklistAdd'
			? (w.value as string[]).map((e) => [`${key(w)} ${e}`, entryKey(w.c.target.domain_port_id, e)])
			: [],
	);
	if (holdIn && entries.length) {
		const { reason, ttlSeconds } = entriesRequest(ctx, []);
		input.hold = { site_id: ctx.site, reason, ttlSeconds, keys: Object.fromEntries(entries) };
	}
	const rounds = groups.reduce(
		(n, g) => n + Math.max(1, ...g.map((w) => (w.c.kind === 'blacklistAdd' ? roundsOf(w, concurrency) : 1))),
		0,
	);
	const seconds = ctx.plan.activityTimeoutSeconds * rounds;
	type Steps = (i: WriteStepsInput) => Promise<WriteStepsResult<ClaimResult>>;
	const act = proxyActivities<Record<typeof WRITE_STEPS_ACTIVITY | typeof WRITE_STEPS_HELD_ACTIVITY, Steps>>({
		startToCloseTimeout: `${seconds}s`,
		// as the blacklist group's activity (addEach.mts): a killed worker's attempt is retried within 60 s
		...(seconds > 60 ? { heartbeatTimeout: '60s' } : {}),
		retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 8 },
		...endsFirstOption(endsFirst),
	});
	let failure: unknown;
	let answers: WriteStepsResult['answers'];
	try {
		const r = await act[input.hold ? WRITE_STEPS_HELD_ACTIVITY : WRITE_STEPS_ACTIVITY](input);
		if (r.hold) on.held?.(r.hold);
		answers = r.answers;
	} catch (e) {
		failure = e;
		answers = answersOf(e, 'key') as unknown as WriteStepsResult['answers'];
	}
	const byKey = new Map(answers.map((a) => [a.key, a]));
	for (const w of all) {
		const k = key(w);
		if (w.c.kind !== 'blacklistAdd') {
			const a = byKey.get(k);
			if (a && 'answer' in a) on.written(w.c, a.answer as WriteResult | undefined, w.value);
			continue;
		}
		for (const entry of w.value as string[]) {
			const a = byKey.get(`${k} ${entry}`);
			if (!a) continue;
			if ('refused' in a) on.refused(w.c, entry, refusalText(a.refused));
			else on.written(w.c, a.answer as WriteResult | undefined, [entry]);
		}
	}
	if (failure) throw failure;
}

const roundsOf = (w: RunWrite, concurrency: number) =>
	Math.ceil((w.value as string[]).length / Math.max(1, concurrency));

function stepOf(ctx: PlanContext, w: RunWrite, key: string, concurrency: number): WriteStep {
	const c = w.c;
	if (c.kind === 'blacklistAdd')
		return { key, add: { ...ctx.dpParams(c.target.domain_port_id), entries: w.value as string[], concurrency } };
	return { key, op: SETTING_OPS[c.kind as SettingKind], params: settingParams(c, w.value) };
}

/**
 * A re-arm's plan at once (rearm.mts REARM_FAST_PATCH) in one task, or two when the entries' hold is still under way:
 * the settings at once meanwhile, the blacklist entries once held. `entriesHeld` 'in-write': the one task holds the
 * entries itself (ownership.mts ENTRIES_HOLD_IN_WRITE_PATCH); when that hold must wait, it is waited for here and the
 * entries are written in a second task.
 */
export async function applyAtOnce(
	rb: Runbook,
	ctx: PlanContext,
	changes: Change[],
	entriesHeld?: Promise<void> | 'in-write',
) {
	const concurrency = Math.max(ctx.plan.execution.blacklistConcurrency, REARM_BLACKLIST_CONCURRENCY);
	if (entriesHeld === 'in-write') return applyHoldingEntries(rb, ctx, changes, concurrency);
	if (!entriesHeld) return applyRun(rb, ctx, changes.length ? [changes] : [], concurrency);
	const settings = changes.filter((c) => c.kind !== 'blacklistAdd');
	const adds = async () => {
		if (!changes.some((c) => c.kind === 'blacklistAdd')) return;
		await entriesHeld; // no entry is written before it is held: the hold drops what someone else holds
		const held = changes.filter((c) => c.kind === 'blacklistAdd' && rb.changes.includes(c));
		await applyRun(rb, ctx, held.length ? [held] : [], concurrency);
	};
	const rs = await Promise.allSettled([applyRun(rb, ctx, settings.length ? [settings] : [], concurrency), adds()]);
	const failed = rs.find((r) => r.status === 'rejected');
	if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** One task that holds its entries beside their reads; a hold that must wait is waited out, then the entries written. */
async function applyHoldingEntries(rb: Runbook, ctx: PlanContext, changes: Change[], concurrency: number) {
	rb.state.holding ??= 0;
	let waited = false;
	const held = (r: ClaimResult) => (r.waiting ? void (waited = true) : tookEntries(rb, r));
	await applyRun(rb, ctx, changes.length ? [changes] : [], concurrency, held);
	if (!waited) return;
	const adds = changes.filter((c) => c.kind === 'blacklistAdd' && rb.changes.includes(c));
	const keys = adds.flatMap((c) => (c.after as string[]).map((e) => entryKey(c.target.domain_port_id, e)));
	tookEntries(rb, await claim(ctx.site, entriesRequest(ctx, keys), rb.patches.inFlightEndsFirst));
	const left = adds.filter((c) => rb.changes.includes(c));
	await applyRun(rb, ctx, left.length ? [left] : [], concurrency);
}

/** The groups in runs of one task each: split before the blacklist group when its entries' hold is still under way. */
export function runsOf(groups: Change[][], splitAtBlacklist: boolean): Change[][][] {
	const at = splitAtBlacklist ? groups.findIndex((g) => g.some((c) => c.kind === 'blacklistAdd')) : -1;
	return (at > 0 ? [groups.slice(0, at), groups.slice(at)] : [groups]).filter((r) => r.length);
}

const phaseOf = (k: Change['kind']) =>
	k === 'detectionMode' || k === 'detectionPolicy'
		? 'tightening'
		: k === 'blacklistAdd'
			? 'blacklisting'
			: 'rate-limiting';

/**
 * A run of groups in one activity (writeSteps.mts), repeated for what no answer named while the API fails
 * transiently (patience.mts); statuses and the audit recorded group by group in the changes' order, as applyGroup
 * records them.
 */
export async function applyRun(
	rb: Runbook,
	ctx: PlanContext,
	run: Change[][],
	concurrency = ctx.plan.execution.blacklistConcurrency,
	held?: (r: ClaimResult) => void,
): Promise<void> {
	if (!run.length) return;
	const all = run.flat();
	for (const c of all) c.status = 'pending';
	rb.phase(phaseOf(run[0][0].kind));
	const hooks = {
		written: recordWrite,
		refused: (c: Change, e: string, why: string) => skipRefused(rb, c, e, why),
		held,
	};
	const left = (c: Change) => (c.kind === 'blacklistAdd' ? stillToWrite(rb, c) : c.written ? undefined : c.after);
	let failure: unknown;
	try {
		await withPatience(
			rb,
			ctx,
			all[0].what,
			() =>
				writeRun(
					ctx,
					run
						.map((g) => g.flatMap((c) => (left(c) === undefined ? [] : [{ c, value: left(c) }])))
						.filter((g) => g.length),
					concurrency,
					hooks,
					{ holdIn: held !== undefined, endsFirst: rb.patches.inFlightEndsFirst },
				),
			() => rb.state.aborted,
		);
	} catch (e) {
		failure = e;
	}
	const at = iso(Date.now());
	for (const g of run) {
		rb.phase(phaseOf(g[0].kind));
		for (const c of g) if (rb.changes.includes(c) && left(c) === undefined) recordApplied(rb, c, at);
	}
	// A failed run never started the groups after the one that failed: they are still only planned (never reverted).
	const failedAt = failure ? run.findIndex((g) => g.some((c) => rb.changes.includes(c) && left(c) !== undefined)) : -1;
	for (const g of failedAt >= 0 ? run.slice(failedAt + 1) : [])
		for (const c of g) if (c.status === 'pending') c.status = 'planned';
	const adds = all.filter((c) => c.kind === 'blacklistAdd');
	if (adds.length && adds.every((c) => left(c) === undefined)) await registerExpiringBlocks(rb, ctx);
	if (failure) throw failure;
}
