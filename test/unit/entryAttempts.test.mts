/**
 * One activity's records of several writes (worker/src/activities/writeRecord.mts `entryAttempts`): a write's record
 * resolves only once a store carrying it has been stored; records made while a store is under way share the next one
 * (a group's writes, recorded in the same turn, cost one store, not one each after another); a failed store fails
 * every record it carried (nothing may be sent for them).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryAttempts, type Details, type WriteAttempt } from '../../worker/src/activities/writeRecord.mts';

/** A durable attempt whose stores are answered by hand: `stores` holds each store's details and its answer. */
function fakeAttempt() {
	const stores: { d: Details; ok: () => void; fail: (e: Error) => void }[] = [];
	const a: WriteAttempt = {
		attempt: 1,
		durable: true,
		record: (d) =>
			new Promise<void>((ok, fail) => {
				stores.push({ d: structuredClone(d), ok, fail });
			}),
	};
	return { a, stores };
}
const turn = () => new Promise((r) => setImmediate(r));

test('records of one turn are stored together; a record made while a store is under way waits for the next', async () => {
	const { a, stores } = fakeAttempt();
	const e = entryAttempts(a);
	const done: string[] = [];
	const rec = (k: string) =>
		e
			.of(k)
			.record({ writing: true })
			.then(() => void done.push(k));
	const first = ['c0', 'c1', 'c2'].map(rec);
	await turn();
	assert.equal(stores.length, 1, 'one store for the three records of the same turn');
	assert.deepEqual(Object.keys(stores[0].d.entries as object).sort(), ['c0', 'c1', 'c2']);
	const later = [rec('c3'), rec('c4')];
	e.answered('c0', { wrote: ['x'] });
	await turn();
	assert.equal(stores.length, 1, 'the next store starts only after the one under way');
	assert.deepEqual(done, [], 'nothing resolves before its store is stored');
	stores[0].ok();
	await Promise.all(first);
	await turn();
	assert.deepEqual(done.sort(), ['c0', 'c1', 'c2']);
	assert.equal(stores.length, 2, 'the two later records share one store');
	assert.deepEqual(stores[1].d.entries, {
		c0: { answer: { wrote: ['x'] } },
		c1: { writing: true },
		c2: { writing: true },
		c3: { writing: true },
		c4: { writing: true },
	});
	stores[1].ok();
	await Promise.all(later);
	assert.deepEqual(done.sort(), ['c0', 'c1', 'c2', 'c3', 'c4']);
});

test('a failed store fails every record it carried; the next record is stored anew', async () => {
	const { a, stores } = fakeAttempt();
	const e = entryAttempts(a);
	const rs = ['c0', 'c1'].map((k) => e.of(k).record({ writing: true }));
	await turn();
	stores[0].fail(new Error('not stored'));
	for (const r of await Promise.allSettled(rs)) assert.equal(r.status, 'rejected');
	const again = e.flush();
	await turn();
	assert.equal(stores.length, 2);
	stores[1].ok();
	await again;
});
