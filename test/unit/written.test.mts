/** Ownership from what was written (workflows/attackResponse/written.mts): the pure rules, one kind after another. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Change } from '../../api/runbook/contract.ts';
import type { Runbook } from '../../workflows/attackResponse/context.mts';
import {
	addNote,
	nothingOurs,
	notOursText,
	ownedEntries,
	recordWrite,
	restoreValue,
	stillToWrite,
} from '../../workflows/attackResponse/written.mts';

const rb = (exact: boolean) => ({ state: { exact } }) as unknown as Runbook;
const change = (kind: Change['kind'], before: unknown, after: unknown): Change => ({
	id: kind,
	kind,
	what: kind,
	target: {},
	before,
	after,
	why: 'test',
	status: 'pending',
});

test('a blacklist change owns what it POSTed; an entry found listed is not ours, also when a re-add finds it back', () => {
	const c = change('blacklistAdd', [], ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
	recordWrite(c, { wrote: ['192.0.2.1'], notOurs: [] }, ['192.0.2.1']);
	recordWrite(c, { wrote: [], notOurs: ['192.0.2.2'] }, ['192.0.2.2']);
	// 192.0.2.3 never answered (the runbook failed mid-write): counted as ours, the revert looks for it.
	assert.deepEqual(ownedEntries(rb(true), c), ['192.0.2.1', '192.0.2.3']);
	assert.equal(notOursText(c), 'already present, not ours: 192.0.2.2');
	// A re-add (hold the line, reapply) that finds 192.0.2.1 listed again: someone put it back, theirs now.
	recordWrite(c, { wrote: [], notOurs: ['192.0.2.1'] }, ['192.0.2.1']);
	assert.deepEqual(c.written, { wrote: [], notOurs: ['192.0.2.2', '192.0.2.1'] });
	// Entries someone removed after our write (`live`) are not ours either.
	c.live = ['192.0.2.3'];
	assert.deepEqual(ownedEntries(rb(true), c), []);
	assert.equal(nothingOurs(rb(true), c), true);
	// A runbook recorded before exact ownership owns what it planned.
	assert.deepEqual(ownedEntries(rb(false), c), ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
});

test('a setting restores what its write replaced; already at the target is not ours; the first write decides', () => {
	const s = change('switch', 0, 1);
	recordWrite(s, { wrote: 1, replaced: 2 }, 1);
	assert.equal(restoreValue(rb(true), s), 2, 'what our write replaced, not the snapshot');
	assert.equal(restoreValue(rb(false), s), 0, 'before exact ownership: the snapshot');
	recordWrite(s, { notOurs: 1 }, 1); // a later re-apply that raced a person: the first write's answer stays
	assert.deepEqual(s.written, { wrote: 1, replaced: 2 });
	assert.equal(nothingOurs(rb(true), s), false);
	const m = change('detectionMode', 0, 1);
	recordWrite(m, { notOurs: 1 }, 1);
	assert.equal(nothingOurs(rb(true), m), true);
	assert.equal(notOursText(m), 'already present, not ours: 1');
	assert.equal(restoreValue(rb(true), m), 0);
	const old = change('ipAuth', { a: 1 }, { a: 2 });
	recordWrite(old, undefined, { a: 2 }); // an answer without the shape: written, what it replaced unknown
	assert.deepEqual([old.written, restoreValue(rb(true), old)], [{ wrote: { a: 2 } }, { a: 1 }]);
});

test("notes: a note with the same label takes the earlier one's place", () => {
	const c = change('blacklistAdd', [], []);
	addNote(c, 'already present, not ours: a');
	addNote(c, 'removed by someone else after our write: b (left as they set it)');
	addNote(c, 'already present, not ours: a, c');
	assert.equal(
		c.note,
		'removed by someone else after our write: b (left as they set it); already present, not ours: a, c',
	);
	addNote(c, undefined);
	assert.match(c.note ?? '', /a, c$/);
});

test('a blacklist change repeated after a transient failure asks only about entries no answer named', () => {
	const c = change('blacklistAdd', [], ['192.0.2.1', '192.0.2.2', '192.0.2.3']);
	const patched = { state: { exact: true, answered: true }, patches: { repeatUnanswered: true } } as unknown as Runbook;
	const before = { state: { exact: true, answered: true }, patches: { repeatUnanswered: false } } as unknown as Runbook;
	assert.deepEqual(stillToWrite(patched, c), c.after, 'the first try asks about every entry');
	// The first try: .1 written, .2 found listed (not ours), .3's POST failed (API down), so withPatience repeats.
	recordWrite(c, { wrote: ['192.0.2.1'], notOurs: [] }, ['192.0.2.1']);
	recordWrite(c, { wrote: [], notOurs: ['192.0.2.2'] }, ['192.0.2.2']);
	assert.deepEqual(stillToWrite(patched, c), ['192.0.2.3']);
	// Runs recorded before the patch repeat the whole change, and the repeat's answer about .1 took it from the runbook
	// (the defect: its own block left at the revert).
	assert.deepEqual(stillToWrite(before, c), c.after);
	const old = structuredClone(c);
	recordWrite(old, { wrote: [], notOurs: ['192.0.2.1'] }, ['192.0.2.1']);
	assert.deepEqual(ownedEntries(before, old), [], '.1 is no longer the runbook’s (.3 never answered)');
	// With the patch the repeat asks only about .3; once it answers, nothing is left to ask and .1 stays ours.
	recordWrite(c, { wrote: ['192.0.2.3'], notOurs: [] }, ['192.0.2.3']);
	assert.equal(stillToWrite(patched, c), undefined);
	assert.deepEqual(ownedEntries(patched, c), ['192.0.2.1', '192.0.2.3']);
	// A setting is asked again whole (its write reads first and answers "already at target" itself).
	const s = change('switch', 0, 1);
	assert.equal(stillToWrite(patched, s), 1);
});
