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

/** Decided once, before the first write (the carried state keeps it across continue-as-new). */
export function decideExact(rb: Runbook): boolean {
	rb.state.exact ??= rb.patches.exact;
	return rb.state.exact;
}

export const isExact = (rb: Runbook) => rb.state.exact === true;

const asList = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);

/**
 * Records one write's answer on its change. A blacklist change accumulates per entry (the last answer about an entry
 * wins: an entry re-added by hold-the-line and found present was put back by someone else and is theirs now); a
 * setting keeps what its first write replaced (a re-apply writes over the value it restores at the revert anyway).
 */
export function recordWrite(c: Change, w: WriteResult | undefined, value: unknown): void {
	if (c.kind === 'blacklistAdd') {
		const mine = asList(w && 'wrote' in w ? w.wrote : value);
		const theirs = asList(w?.notOurs);
		const prev = c.written ?? { wrote: [], notOurs: [] };
		const wrote = asList(prev.wrote).filter((e) => !theirs.includes(e));
		const notOurs = asList(prev.notOurs).filter((e) => !mine.includes(e));
		c.written = { wrote: [...wrote, ...mine.filter((e) => !wrote.includes(e))], notOurs: [...notOurs, ...theirs] };
		return;
	}
	// An answer without the shape (a worker of before): the value was written, what it replaced is unknown.
	const next: WriteResult = w && ('wrote' in w || 'notOurs' in w) ? w : { wrote: value };
	if (c.written && 'wrote' in c.written) return;
	c.written = next;
}

/**
 * The blacklist entries this change owns: what it planned minus what was found already there (an entry whose write
 * never answered counts as ours) and minus what someone removed after our write (`live`: theirs since).
 */
export function ownedEntries(rb: Runbook, c: Change): string[] {
	const notOurs = isExact(rb) ? [...asList(c.written?.notOurs), ...asList(c.live)] : [];
	return asList(c.after).filter((e) => !notOurs.includes(e));
}

/** A setting's value the revert restores: what the runbook's write replaced, else the snapshot's. */
export function restoreValue(rb: Runbook, c: Change): unknown {
	return isExact(rb) && c.written && 'replaced' in c.written ? c.written.replaced : c.before;
}

/** Nothing of this change was written by the runbook: it was all there already. */
export function nothingOurs(rb: Runbook, c: Change): boolean {
	if (!isExact(rb) || !c.written) return false;
	return c.kind === 'blacklistAdd' ? ownedEntries(rb, c).length === 0 : !('wrote' in c.written);
}

/** "already present, not ours: …" for the timeline, `secsvc inspect` and the report; undefined when all was ours. */
export function notOursText(c: { written?: WriteResult }): string | undefined {
	const n = c.written?.notOurs;
	if (n === undefined || (Array.isArray(n) && !n.length)) return undefined;
	return `already present, not ours: ${Array.isArray(n) ? n.join(', ') : JSON.stringify(n)}`;
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
