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
