import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HoldTable } from '../../workflows/coordinator/holdTable.mts';

const iso = (ms: number) => new Date(ms).toISOString();
const lease = (owner: string, key: string) => ({ owner, keys: [key], mode: 'lease' as const, reason: 'drift' });

test('a hold asked beside reads: another owner’s grant that ended after the reads makes them stale', () => {
	const t = new HoldTable([], [], Date.now() - 5000);
	const reads = Date.now();
	assert.equal(t.changedSince('rb', ['detection.mode'], iso(reads)), false, 'nothing ended: the reads stand');
	t.grantNow(lease('drift', 'detection.mode'));
	t.release({ owner: 'drift' });
	assert.equal(t.changedSince('rb', ['detection.mode'], iso(reads)), true, 'the lease ended after the reads');
	assert.equal(t.changedSince('rb', ['x/ipAuth'], iso(reads)), false, 'another key: unaffected');
	assert.equal(t.changedSince('drift', ['detection.mode'], iso(reads)), false, 'its own grant ending is no change');
	assert.ok(t.lastLeaseEnd >= reads, 'a lease end is noted (the coordinator lingers after it)');
	assert.equal(t.changedSince('rb', ['detection.mode'], iso(Date.now() + 60_000)), false, 'reads sent later stand');
});

test('a hold asked beside reads: a run that cannot tell answers stale', () => {
	const reads = Date.now();
	const fresh = new HoldTable([], [], reads + 10_000); // started too late to know what ended around the reads
	assert.equal(fresh.changedSince('rb', ['detection.mode'], iso(reads)), true);
	const untracked = new HoldTable([], []); // a run without `coordinator-lease-ends`
	assert.equal(untracked.changedSince('rb', ['detection.mode'], iso(reads)), true);
	untracked.grantNow(lease('drift', 'detection.mode'));
	untracked.release({ owner: 'drift' });
	assert.equal(untracked.lastLeaseEnd, -Infinity, 'ends are not tracked without the patch');
});
