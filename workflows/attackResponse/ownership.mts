import { settingKey, type ClaimRequest, type ClaimResult, type Hold } from '../coordinator/coordination.mts';
import { patched, proxyActivities } from '@temporalio/workflow';
import { claim, claimBeside, handover, release } from '../coordinator/claims.mts';
import { BLOCKS_ACTIVITY } from '../blocks/shared.mts';
import type { Change } from '../../api/runbook/contract.ts';
import { formatRange, parseEntry } from '../pure/ranges.mts';
import type { PlanContext, Runbook } from './context.mts';
import { ownedEntries } from './written.mts';

/**
 * One owner per setting (workflows/README.md): before the snapshot the runbook HOLDS, at the site's coordinator,
 * every setting its plan may change (a drift enforce that started just before waits for nothing: the claim waits
 * for its lease to end, and the snapshot is taken after it); after planning it holds the blacklist entries it will
 * add. Settings another owner holds are left alone and reported. Everything is released after the revert.
 */

/** The keys of the settings a plan may change (blacklist entries are claimed once planned). */
export function planKeys(ctx: PlanContext): string[] {
	const { plan } = ctx;
	const keys: string[] = [];
	if (plan.detection.rapidMode) keys.push(settingKey.detectionMode());
	for (const t of plan.detection.thresholds) keys.push(settingKey.detectionItem(t.name));
	for (const dp of plan.domain_ports) {
		if (plan.ipAuth) keys.push(settingKey.ipAuth(dp));
		for (const sw of plan.switches) keys.push(settingKey.switch(dp, sw.name));
	}
	return keys;
}

/** The key of a change's setting (blacklist changes: one key per entry, see entryKeys). */
export function changeKey(c: Change): string | undefined {
	const t = c.target;
	switch (c.kind) {
		case 'detectionMode':
			return settingKey.detectionMode();
		case 'detectionPolicy':
			return settingKey.detectionItem(t.name);
		case 'ipAuth':
			return settingKey.ipAuth(t.domain_port_id);
		case 'switch':
			return settingKey.switch(t.domain_port_id, t.name);
		default:
			return undefined;
	}
}

export const entryKey = (dp: string, entry: string) => {
	const r = parseEntry(entry);
	return settingKey.blacklistEntry(dp, r ? formatRange(r) : entry);
};

export const ttlOf = (ctx: PlanContext) =>
	ctx.plan.maxDurationSeconds + (ctx.plan.approval.required ? ctx.plan.approval.timeoutSeconds : 0) + 6 * 3600;

/**
 * Holds the plan's settings before the snapshot — or, with `since` (HOLD_BESIDE_SNAPSHOT_PATCH), beside the snapshot's
 * reads sent at `since`. Returns the keys held by someone else (left alone) and whether the reads may be stale: another
 * owner's grant of one of the keys ended after they went out (a drift enforce's write may have landed after them), or
 * the coordinator could not tell; the caller then reads again before it plans.
 */
export async function holdPlanSettings(
	rb: Runbook,
	ctx: PlanContext,
	since?: string,
): Promise<{ held: Hold[]; stale: boolean }> {
	const keys = planKeys(ctx);
	if (!keys.length) return { held: [], stale: false };
	rb.state.holding = 0; // from here on a claim may have been granted: releaseAll asks the coordinator
	const req = { keys, mode: 'hold' as const, reason: 'attack response: mitigation in place until the revert' };
	const full = { ...req, ttlSeconds: ttlOf(ctx), ...(since ? { since } : {}) };
	const ends = rb.patches.inFlightEndsFirst;
	const r = await (since ? holdBeside(ctx.site, full, ends) : claim(ctx.site, full, ends));
	rb.state.holding = r.granted.length;
	rb.log(
		'snapshot',
		`holding ${r.granted.length} setting(s) of site ${ctx.site}`,
		'one owner per setting: other playbooks leave them alone until the revert',
	);
	return { held: r.held, stale: since !== undefined && r.changedSince !== false };
}

/**
 * Patch (issue 42): the plan settings' hold is asked beside the snapshot's reads instead of before them; the
 * coordinator answers whether another owner's grant of a key ended after the reads went out, and only then are they
 * read again (after the hold). Runbooks recorded before it held first, then read.
 */
export const HOLD_BESIDE_SNAPSHOT_PATCH = 'hold-beside-snapshot';

/**
 * Patch: without an approval gate the entries' hold overlaps the detection writes (issue 42). Runbooks recorded
 * before it asked for it before their first write.
 */
export const ENTRIES_HOLD_OVERLAP = 'entries-hold-overlaps-writes';

/** After planning: holds the blacklist entries to add; drops changes (and entries) that someone else holds. */
export async function holdPlannedChanges(rb: Runbook, ctx: PlanContext, heldBefore: Hold[]): Promise<void> {
	dropHeld(rb, heldBefore);
	await holdEntries(rb, ctx);
}

/**
 * Patch (issue 39 item 6): a re-arm (rearm.mts REARM_FAST_PATCH) asks for its entries' hold as a local activity, in
 * the workflow task that planned them, instead of a regular activity: its writes are scheduled when that task
 * completes, not one activity round trip and one more workflow task later (the hold is on a return's critical path:
 * its writes are at once). One that must wait (another owner's lease) waits as a regular activity, as the settings'
 * hold does. Runbooks recorded before it held their entries with a regular activity.
 */
export const REARM_ENTRIES_LOCAL_PATCH = 'rearm-entries-hold-local';

/**
 * Patch (issue 39 item 6): a re-arm's blacklist entries are held by its write activity itself, beside their list reads
 * (writeSteps.mts, worker/src/activities/entriesHold.mts), not by a local activity before the write is scheduled: an
 * entry is sent only once held by this runbook, and read again when the coordinator cannot vouch for its read (as the
 * settings' hold beside the snapshot); what someone else holds is dropped from the answer's `hold`; when the hold must
 * wait (another owner's lease) nothing of the entries is sent and they are held as before (holdEntries) and written
 * after. Runbooks recorded before it held them with a local activity in the task that planned them.
 */
export const ENTRIES_HOLD_IN_WRITE_PATCH = 'rearm-entries-hold-in-write';

/**
 * Patch: a cancelled runbook waits for its claim activity and its write activities (writeSteps.mts; context.mts
 * `acts`: waves, hold-the-line's re-applies) still in flight to end (WAIT_CANCELLATION_COMPLETED) before it reverts
 * and releases: a claim's last ask may still be waiting at the coordinator (up to CLAIM_WAIT_SECONDS) and is granted
 * when another owner's lease ends — after the release it held the keys in the dead runbook's name until their `until`
 * (hours); a write's POSTs still under way landed after the revert read the list, unowned and never removed
 * (test/temporal/cancelInFlight.test.mts). Now the grant is released and the writes' answers are owned and reverted.
 * Runbooks recorded before it went on at once (TRY_CANCEL).
 */
export const IN_FLIGHT_ENDS_FIRST_PATCH = 'runbook-in-flight-ends-first';

type HoldRequest = Omit<ClaimRequest, 'owner'>;

/**
 * Hold beside, else wait: a hold asked once beside other work, as a local activity that never waits; one that must
 * wait (another owner's lease) is asked again as a regular activity that waits, so no workflow task is held open
 * meanwhile (queries and signals are answered). The write activity's own hold falls back the same way (writeSteps.mts).
 */
export async function holdBeside(site: string, req: HoldRequest, endsFirst = false): Promise<ClaimResult> {
	const r = await claimBeside(site, { ...req, waitSeconds: 0 });
	return r.waiting ? claim(site, req, endsFirst) : r;
}

/** The hold of blacklist entries (their setting keys). */
export const entriesRequest = (ctx: PlanContext, keys: string[]) => ({
	keys,
	mode: 'hold' as const,
	reason: 'attack response: blacklisted attack source',
	ttlSeconds: ttlOf(ctx),
});

/** Counts a granted hold of entries and drops the changes (and entries) someone else holds. */
export function tookEntries(rb: Runbook, r: ClaimResult): void {
	rb.state.holding = (rb.state.holding ?? 0) + r.granted.length;
	dropHeld(rb, r.held);
}

/**
 * Holds the planned blacklist entries; drops those someone else holds. Without an approval gate the runbook asks for
 * this hold while it writes its detection groups and waits for it before the blacklist group (apply.mts): no entry
 * is written before it is held, and the other changes' settings were held before the snapshot. `local`: asked once
 * as a local activity first (REARM_ENTRIES_LOCAL_PATCH).
 */
export async function holdEntries(rb: Runbook, ctx: PlanContext, local = false): Promise<void> {
	const entryKeys = rb.changes
		.filter((c) => c.kind === 'blacklistAdd')
		.flatMap((c) => (c.after as string[]).map((e) => entryKey(c.target.domain_port_id, e)));
	if (!entryKeys.length) return;
	rb.state.holding ??= 0;
	const req = entriesRequest(ctx, entryKeys);
	const ends = rb.patches.inFlightEndsFirst;
	tookEntries(rb, await (local ? holdBeside(ctx.site, req, ends) : claim(ctx.site, req, ends)));
}

/** Drops the changes (and blacklist entries) whose settings someone else holds, each noted as held by them. */
export function dropHeld(rb: Runbook, held: Hold[]): void {
	if (!held.length) return;
	const heldKeys = new Map(held.map((h) => [h.key, h]));
	const note = (what: string, h: Hold) => {
		rb.heldByOthers.push(h);
		rb.log('planning', what, `held by ${h.owner} since ${h.since} (${h.reason}); left alone`);
	};
	for (const c of [...rb.changes]) {
		if (c.kind === 'blacklistAdd') {
			const keep = (c.after as string[]).filter((e) => {
				const h = heldKeys.get(entryKey(c.target.domain_port_id, e));
				if (h) note(`${c.what}: ${e}`, h);
				return !h;
			});
			c.after = keep;
			if (keep.length) continue;
		} else {
			const h = heldKeys.get(changeKey(c) ?? '');
			if (!h) continue;
			note(c.what, h);
		}
		rb.changes.splice(rb.changes.indexOf(c), 1);
	}
}

/** Releases every setting this runbook holds (after the revert, or when it ends without writing). */
export async function releaseAll(rb: Runbook, ctx: PlanContext): Promise<void> {
	if (rb.state.holding === undefined) return;
	try {
		const r = await release(ctx.site);
		rb.log('done', `released ${r.released} setting(s)`, 'the revert is done: other playbooks may write them again');
	} catch (e) {
		rb.log(
			'done',
			'could not release the held settings',
			`they are let go by the coordinator at their expiry (${String((e as Error)?.message ?? e)})`,
		);
	}
	rb.state.holding = undefined;
}

/**
 * plan.blacklist.expireAfterSeconds: the entries this runbook added are registered as expiring blocks (adopted: they
 * queue behind this runbook's hold and take the entries over at its revert, or when the hold of a runbook that died
 * ends). Best effort: a block that cannot be registered is noted; the revert then removes the entry as before.
 */
const blockActs = proxyActivities<Record<string, (input: Record<string, unknown>) => Promise<unknown>>>({
	startToCloseTimeout: '2m',
	retry: {
		initialInterval: '1s',
		maximumInterval: '10s',
		maximumAttempts: 5,
		nonRetryableErrorTypes: ['BlockRefused', 'ValidationError'],
	},
});

export async function registerExpiringBlocks(rb: Runbook, ctx: PlanContext, only = rb.changes): Promise<void> {
	const seconds = ctx.plan.blacklist.expireAfterSeconds;
	if (!seconds) return;
	const entries = only
		.filter((c) => c.kind === 'blacklistAdd' && c.status === 'applied')
		.flatMap((c) => ownedEntries(rb, c).map((e) => ({ dp: c.target.domain_port_id, e })));
	await Promise.all(
		entries.map(async ({ dp, e }) => {
			try {
				const b = (await blockActs[BLOCKS_ACTIVITY.register]({
					site_id: ctx.site,
					customer_id: ctx.plan.customer_id,
					domain_port_id: dp,
					entry: e,
					seconds,
					by: `attack-response-${ctx.site}`,
					reason: 'attack source blacklisted by the attack response',
					via: 'runbook',
					adopt: true,
				})) as { reason?: string; expiresAt?: string } | undefined;
				// A repeat offender's block is longer (worker/src/temporal/offenders.mts): its reason says why.
				const longer = / — (repeat offender: .*)$/.exec(b?.reason ?? '')?.[1];
				rb.log(
					'blacklisting',
					`expiring block registered: ${e} (${dp})${b?.expiresAt ? `, until ${b.expiresAt}` : ''}`,
					`plan.blacklist.expireAfterSeconds = ${seconds}${longer ? `; ${longer}` : ''}: removed by its block at the latest after the runbook lets go`,
				);
			} catch (err) {
				rb.log(
					'blacklisting',
					`expiring block not registered: ${e} (${dp})`,
					String((err as { cause?: Error })?.cause?.message ?? (err as Error)?.message ?? err),
				);
			}
		}),
	);
}

/**
 * Revert hook: blacklist entries of this runbook that an expiring block waits for (its successor at the coordinator)
 * pass to that block now; the revert must not remove them. Returns entry key → new owner.
 */
export async function handOverEntries(rb: Runbook, ctx: PlanContext): Promise<Map<string, string>> {
	if (rb.state.holding === undefined || !patched('expiring-blocks-handover')) return new Map();
	const keys = rb.changes
		.filter((c) => c.kind === 'blacklistAdd' && (c.status === 'applied' || c.status === 'pending'))
		.flatMap((c) => ownedEntries(rb, c).map((e) => entryKey(c.target.domain_port_id, e)));
	if (!keys.length) return new Map();
	try {
		const r = await handover(ctx.site, keys);
		return new Map(r.handedOver.map((h) => [h.key, h.to]));
	} catch (e) {
		rb.log(
			'reverting',
			'could not ask the coordinator about expiring blocks',
			`entries are removed as usual (${String((e as Error)?.message ?? e)})`,
		);
		return new Map();
	}
}
