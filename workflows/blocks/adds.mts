import { workflowInfo } from '@temporalio/workflow';
import { claim, release } from '../coordinator/claims.mts';
import type { ClaimResult } from '../coordinator/coordination.mts';
import { BLOCKS_ACTIVITY, blockKey, notOursRule, type AddManyOutcome } from './shared.mts';
import { entryRangeKey, listedByKey, type ListEntry } from '../pure/ranges.mts';
import { adds, errText, reads, refuse, writes, type BlocksRun, type Pending } from './context.mts';

/**
 * Adding a batch of blocks (the adds that arrived together). Each entry's key is HELD at the site's coordinator from
 * its add to its removal; an entry a runbook holds is not written: the block queues as the key's successor and takes
 * the entry over at the runbook's revert. An entry already on the list that no block wrote is refused (unless
 * `adopt`). Every outcome is recorded on the block; refusals name the field and the rule.
 */

/**
 * An add whose outcome is unknown (activitiesAddMany.mts): the block ends at once, owning nothing, so its expiry
 * removes nothing; its state and note say so (`secsvc block list`), its caller gets it as recorded.
 */
function endUnknown(run: BlocksRun, p: Pending): void {
	p.done = true;
	run.end(
		p.block,
		'unknown',
		`outcome unknown, left as it is: ${p.block.range} was on the blacklist of ${run.dp} when a retry of this block's add looked (the earlier attempt's answer was lost) — that POST or someone else's add, nothing tells: this block does not own it and never removes it (check it; remove it by hand if it is not wanted)`,
	);
}

/** An add that did not happen: its caller gets the refusal, the block is forgotten. */
function failAdd(run: BlocksRun, p: Pending, e: Error): void {
	p.error = e;
	p.done = true;
	if (run.byRange.get(p.block.range) === p.block) run.byRange.delete(p.block.range);
}

/** The adds the claim granted; the others wait behind a holder (queued), or are refused when a successor already waits. */
function grantedOf(run: BlocksRun, batch: Pending[], c: ClaimResult): Pending[] {
	const heldBy = new Map(c.held.map((h) => [h.key, h]));
	const queued = new Set(c.queued ?? []);
	const granted: Pending[] = [];
	for (const p of batch) {
		const key = blockKey(run.dp, p.block.range);
		const h = heldBy.get(key);
		if (!h) granted.push(p);
		else if (queued.has(key)) {
			p.block.state = run.handed.delete(key) ? 'active' : 'queued';
			p.block.note = `the entry is held by ${h.owner} (${h.reason}): it passes to this block at its revert; removed at the expiry once it has`;
			p.done = true;
		} else
			failAdd(run, p, refuse('entry', `${p.block.range} is held by ${h.owner} and another block already waits for it`));
	}
	return granted;
}

/** Before bulk adds: claim, one list read, one activity per POST, then the give-back (kept for runs that started on it). */
export async function addBatch(run: BlocksRun, batch: Pending[]): Promise<void> {
	const { site, dp } = run;
	const fail = (p: Pending, e: Error) => failAdd(run, p, e);
	const keys = batch.map((p) => blockKey(dp, p.block.range));
	const ttl = Math.max(...batch.map((p) => run.ttlFor(p.block)));
	let c;
	try {
		c = await claim(site, {
			keys,
			mode: 'hold',
			queue: true,
			reason: `expiring blocks of ${dp} (${workflowInfo().workflowId})`,
			ttlSeconds: ttl,
		});
	} catch (e) {
		for (const p of batch) fail(p, refuse('block', `the site's coordinator refused: ${errText(e)}`));
		return;
	}
	const granted = grantedOf(run, batch, c);
	const giveBack: string[] = [];
	if (!granted.length) return;
	let listed: Map<string, string>;
	try {
		const list = await reads['applicationProtection.ipBlacklist.get']({ site_id: site, domain_port_id: dp });
		// The catalog leaves this result's shape open (unknown): the entries are read defensively.
		const shown = list as { p_info?: { ipv4?: { black_soc?: ListEntry[] } } } | undefined;
		listed = listedByKey(shown?.p_info?.ipv4?.black_soc ?? []);
	} catch (e) {
		for (const p of granted)
			fail(
				p,
				refuse(
					'domain_port_id',
					`${dp} of site ${site}: the blacklist cannot be read (${errText(e)}); nothing was sent`,
				),
			);
		await release(
			site,
			granted.map((p) => blockKey(dp, p.block.range)),
		);
		return;
	}
	await Promise.all(
		granted.map(async (p) => {
			const present = listed.has(entryRangeKey(p.block.range) ?? p.block.range);
			if (present && !p.req.adopt) {
				giveBack.push(blockKey(dp, p.block.range));
				return fail(p, refuse('entry', notOursRule(p.block.range, dp)));
			}
			if (!present) {
				let r;
				try {
					r = await writes[BLOCKS_ACTIVITY.add]({ site_id: site, domain_port_id: dp, entry: p.block.range });
				} catch (e) {
					giveBack.push(blockKey(dp, p.block.range));
					return fail(p, refuse('entry', `the service refused to add ${p.block.range}: ${errText(e)}`));
				}
				// Answers recorded before the unknown rule carry neither (their runs replay as they ran).
				if (r.unknown || r.notOurs) giveBack.push(blockKey(dp, p.block.range));
				if (r.unknown) return endUnknown(run, p);
				if (r.notOurs) return fail(p, refuse('entry', notOursRule(p.block.range, dp)));
			}
			p.block.state = 'active';
			p.done = true;
		}),
	);
	if (giveBack.length) await release(site, giveBack);
}

/**
 * Bulk mode: the whole add batch in ONE activity (blocks.addMany: coordinator claim, one read, one POST per entry
 * not yet listed, release of what was not written) instead of claim + read + one activity per POST.
 */
export async function addBatchBulk(run: BlocksRun, batch: Pending[]): Promise<void> {
	const { site, dp, byRange } = run;
	const fail = (p: Pending, field: string, rule: string, present?: boolean) => {
		if (p.recheck) return endRecheck(run, p, field, rule, present);
		p.refusal = { entry: p.block.entry, field, rule };
		p.error = refuse(field, rule);
		p.done = true;
		if (byRange.get(p.block.range) === p.block) byRange.delete(p.block.range);
	};
	const ttl = Math.max(...batch.map((p) => run.ttlFor(p.block)));
	let r: { results: AddManyOutcome[] };
	try {
		r = await adds[BLOCKS_ACTIVITY.addMany]({
			site_id: site,
			domain_port_id: dp,
			entries: batch.map((p) => ({ range: p.block.range, ...(p.req.adopt ? { adopt: true } : {}) })),
			ttlSeconds: ttl,
			reason: `expiring blocks of ${dp} (${workflowInfo().workflowId})`,
		});
	} catch (e) {
		for (const p of batch) fail(p, 'block', `the add failed: ${errText(e)}`);
		return;
	}
	const byRangeResult = new Map(r.results.map((x) => [x.range, x]));
	for (const p of batch) {
		const x = byRangeResult.get(p.block.range);
		const key = blockKey(dp, p.block.range);
		if (!x) fail(p, 'block', 'no answer for this entry');
		else if (x.outcome === 'refused') fail(p, x.field, x.rule, x.present);
		else if (x.outcome === 'unknown') endUnknown(run, p);
		else if (x.outcome === 'queued') {
			p.block.state = run.handed.delete(key) ? 'active' : 'queued';
			p.block.note = `the entry is held by ${x.holder.owner} (${x.holder.reason}): it passes to this block at its revert; removed at the expiry once it has`;
			p.done = true;
			if (run.released.delete(key)) run.recheck(p.block); // released before this answer came
		} else {
			p.block.state = 'active';
			p.done = true;
		}
	}
}

/**
 * A recheck (BlocksRun.recheck) the fresh add refused: the block ends taken-over, nothing written and nothing removed
 * at its expiry. The activity released the refused key; after a failure of the whole add it is released here.
 */
function endRecheck(run: BlocksRun, p: Pending, field: string, rule: string, present?: boolean): void {
	const b = p.block;
	p.done = true;
	run.end(
		b,
		'taken-over',
		present
			? `already present, not ours: ${b.range} was on the blacklist of ${run.dp} when its holder let it go without handing it over, and no block wrote it: it stays as it is (nothing removed at expiry)`
			: `its holder let it go without handing it over, and the add that followed was refused (${field}: ${rule}): nothing removed at expiry`,
	);
	if (field === 'block') {
		const key = blockKey(run.dp, b.range);
		if (run.modes.local) run.queueRelease(key);
		else run.toRelease.push(key);
	}
}
