import type { Change, WriteResult } from '../../api/runbook/contract.ts';
import type { Runbook } from './context.mts';

/**
 * Ownership from what was written (issue 37): each write activity answers with what it actually changed
 * (WriteResult: worker/src/activities/exactWrites.mts) and the change records it in `written`. The runbook owns only
 * that: the revert restores the value a write replaced (not the snapshot's, when someone changed the setting between
 * the snapshot and the write) and removes only the entries it POSTed; what was already there is "not ours" and left
 * as it is. One rule for every kind of change. Runbooks recorded before `exact-ownership` own what they planned.
 */
export const EXACT_PATCH = 'exact-ownership';
/**
 * Since `owned-from-answers` the runbook owns only what a write ANSWERED that it wrote: an entry or a setting whose
 * write never answered (failed for good, the run gave up or was aborted) or answered `unknown` (a retry found it at
 * the target after an earlier attempt recorded it was about to write: its lost answer or someone else's write) is
 * outcome unknown — never reverted (it may be someone else's), reported. Before it, a planned entry without an answer
 * counted as ours and a retry took a listed entry for its own (interleave seed 19: n8n's entry DELETEd).
 */
export const ANSWERED_PATCH = 'owned-from-answers';

/** Decided once, before the first write (the carried state keeps it across continue-as-new). */
export function decideExact(rb: Runbook): boolean {
	rb.state.exact ??= rb.patches.exact;
	if (rb.state.exact) rb.state.answered ??= rb.patches.answered;
	return rb.state.exact;
}

export const isExact = (rb: Runbook) => rb.state.exact === true;
const isAnswered = (rb: Runbook) => rb.state.answered === true;

const asList = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);

/**
 * Since `repeat-asks-unanswered` a blacklist change repeated after a transient failure (patience.mts) asks only about
 * the entries no answer named yet. Before it, the repeat found the entries its first try had written already listed,
 * answered "not ours", and the newest answer took them from the runbook: its own blocks stayed after the revert.
 */
export const REPEAT_UNANSWERED_PATCH = 'repeat-asks-unanswered';

/** What a (repeated) write of `c` still asks: undefined when every entry of a blacklist change has its answer. */
export function stillToWrite(rb: Runbook, c: Change): unknown {
	if (!rb.patches.repeatUnanswered || c.kind !== 'blacklistAdd') return c.after;
	const w = c.written;
	const known = [...asList(w?.wrote), ...asList(w?.notOurs), ...asList(w?.unknown)];
	const left = asList(c.after).filter((e) => !known.includes(e));
	return left.length ? left : undefined;
}

/**
 * Records one write's answer on its change. A blacklist change accumulates per entry (the last answer about an entry
 * wins: an entry re-added by hold-the-line and found present was put back by someone else and is theirs now); a
 * setting keeps what its first write replaced (a re-apply writes over the value it restores at the revert anyway).
 */
export function recordWrite(c: Change, w: WriteResult | undefined, value: unknown): void {
	if (c.kind === 'blacklistAdd') {
		const mine = asList(w && ('wrote' in w || 'unknown' in w) ? w.wrote : value);
		const theirs = asList(w?.notOurs);
		const unsure = asList(w?.unknown);
		const prev = c.written ?? { wrote: [], notOurs: [] };
		// Each entry in one list: the latest answer about it moves it there.
		const keep = (l: unknown, ...not: string[][]) => asList(l).filter((e) => !not.some((n) => n.includes(e)));
		const join = (a: string[], b: string[]) => [...a, ...b.filter((e) => !a.includes(e))];
		const unknown = join(keep(prev.unknown, mine, theirs), unsure);
		c.written = {
			wrote: join(keep(prev.wrote, theirs, unsure), mine),
			notOurs: join(keep(prev.notOurs, mine, unsure), theirs),
			...(unknown.length ? { unknown } : {}),
		};
		return;
	}
	// An answer without the shape (a worker of before): the value was written, what it replaced is unknown.
	const next: WriteResult = w && ('wrote' in w || 'notOurs' in w || 'unknown' in w) ? w : { wrote: value };
	if (c.written && 'wrote' in c.written) return;
	c.written = next;
}

/**
 * The blacklist entries this change owns: what it planned minus what was found already there and minus what someone
 * removed after our write (`live`: theirs since); since `owned-from-answers` only those a write answered it wrote
 * (before it, an entry whose write never answered counted as ours).
 */
export function ownedEntries(rb: Runbook, c: Change): string[] {
	const notOurs = isExact(rb) ? [...asList(c.written?.notOurs), ...asList(c.live)] : [];
	const wrote = asList(c.written?.wrote);
	return asList(c.after).filter((e) => !notOurs.includes(e) && (!isAnswered(rb) || wrote.includes(e)));
}

/** Planned entries whose outcome is unknown (no write answered it wrote them, nor found them there): never removed. */
export function unknownEntries(rb: Runbook, c: Change): string[] {
	if (!isAnswered(rb)) return [];
	const w = c.written;
	const known = [...asList(w?.wrote), ...asList(w?.notOurs), ...asList(c.live)];
	return asList(c.after).filter((e) => !known.includes(e));
}

/** A setting's change the runbook owns: since `owned-from-answers`, only one whose write answered that it wrote. */
export const ownsSetting = (rb: Runbook, c: Change) => !isAnswered(rb) || (!!c.written && 'wrote' in c.written);

/** A setting's value the revert restores: what the runbook's write replaced, else the snapshot's. */
export function restoreValue(rb: Runbook, c: Change): unknown {
	return isExact(rb) && c.written && 'replaced' in c.written ? c.written.replaced : c.before;
}

/** Nothing of this change was written by the runbook: it was all there already. */
export function nothingOurs(rb: Runbook, c: Change): boolean {
	if (!isExact(rb) || !c.written) return false;
	return c.kind === 'blacklistAdd' ? ownedEntries(rb, c).length === 0 : !('wrote' in c.written);
}

const shown = (v: unknown) => (v === undefined || (Array.isArray(v) && !v.length) ? undefined : v);
const text = (v: unknown) => (Array.isArray(v) ? v.join(', ') : JSON.stringify(v));

/** "already present, not ours: …" for the timeline, `secsvc inspect` and the report; undefined when all was ours. */
export function notOursText(c: { written?: WriteResult }): string | undefined {
	const n = shown(c.written?.notOurs);
	return n === undefined ? undefined : `already present, not ours: ${text(n)}`;
}

/** The report of what a write's outcome leaves unknown (`values`: default the write's `unknown` answer). */
export function unknownText(c: { written?: WriteResult }, values: unknown = c.written?.unknown): string | undefined {
	const u = shown(values);
	if (u === undefined) return undefined;
	return `outcome unknown, left as it is: ${text(u)} (our write's answer was lost and it may be someone else's: check it)`;
}

/** Someone else's value after our write (`theirs`): kept as theirs, noted with both values. */
export function keepTheirs(c: Change, theirs: unknown): void {
	c.live = theirs;
	addNote(c, `changed after our write: ours ${JSON.stringify(c.after)}, theirs ${JSON.stringify(theirs)} (kept)`);
}

/**
 * Adds a note to a change's note (notes are joined with "; "); a note with the same label (its text up to the first
 * ":") takes the earlier one's place, so a list that grows is shown once, whole.
 */
export function addNote(c: Change, note: string | undefined): void {
	if (!note) return;
	const label = note.slice(0, note.indexOf(':') + 1);
	const rest = (c.note ? c.note.split('; ') : []).filter((n) => !(label && n.startsWith(label)));
	c.note = [...rest, note].join('; ');
}

/**
 * A change's writes are done: applied, with what they replaced and wrote; or, when everything was already there,
 * unchanged and not the runbook's (nothing to watch, nothing to revert).
 */
export function recordApplied(rb: Runbook, c: Change, at: string): void {
	const notOurs = notOursText(c);
	const unknown = unknownText(c);
	addNote(c, notOurs);
	addNote(c, unknown);
	const says = [notOurs, unknown].filter(Boolean).join('; ');
	if (nothingOurs(rb, c)) {
		c.status = 'unchanged';
		rb.log(rb.state.phase, c.what, says || c.why, {
			result: notOurs || !unknown ? 'not ours: nothing sent' : 'outcome unknown: left as it is',
		});
		return;
	}
	c.status = 'applied';
	c.appliedAt = at;
	rb.obs.applied(c);
	const w = rb.state.exact ? c.written : undefined;
	rb.log(rb.state.phase, c.what, says ? `${c.why}; ${says}` : c.why, {
		before: w && 'replaced' in w ? w.replaced : c.before,
		after: w && 'wrote' in w ? w.wrote : c.after,
		result: 'applied',
	});
}

/**
 * A blacklist entry the worker's blast-radius guard refused (nothing was sent): skipped with the guard's reason and
 * taken out of the change, so hold-the-line and the revert never touch it.
 */
export function skipRefused(rb: Runbook, c: Change, entry: string, why: string): void {
	rb.skipped.push({
		source: `${c.target.domain_port_id}:${entry}`,
		reason: `refused by the blast-radius guard: ${why}`,
	});
	c.after = (c.after as string[]).filter((e) => e !== entry);
	rb.log(rb.state.phase, `${c.what}: ${entry} not blocked`, why, { result: 'skipped' });
}
