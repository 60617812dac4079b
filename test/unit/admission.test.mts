/**
 * Admission control's slot supplier (worker/src/process/admission.mts), on its own: what it lets through and when. The same
 * supplier on a real dev server with runbooks: test/temporal/admission.test.mts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdmissionSlots, coordinatorQueueFor } from '../../worker/src/process/admission.mts';
import { workerTuning } from '../../worker/src/process/sizing.mts';

const ctx = (isSticky: boolean) => ({
	slotType: 'workflow' as const,
	taskQueue: 'q',
	workerIdentity: 'w',
	workerBuildId: '',
	isSticky,
});
const settled = async (p: Promise<unknown>) => {
	let done = false;
	p.then(
		() => (done = true),
		() => (done = true),
	);
	await new Promise((r) => setTimeout(r, 30));
	return done;
};

test('at the limit of cached workflows a normal-queue poll waits; sticky polls go on; it resumes when the cache shrinks', async () => {
	let cached = 0;
	const s = new AdmissionSlots({ limit: 3, maxConcurrent: 10, stallMs: 60_000 });
	s.bind(() => cached);
	const a = await s.reserveSlot(ctx(false), new AbortController().signal);
	assert.deepEqual(a, { sticky: false });
	cached = 2; // + one normal slot reserved = 3: the limit
	const waiting = s.reserveSlot(ctx(false), new AbortController().signal);
	assert.equal(await settled(waiting), false, 'a normal poll beyond the limit waits');
	assert.equal(s.stats.held, 1);
	assert.deepEqual(
		await s.reserveSlot(ctx(true), new AbortController().signal),
		{ sticky: true },
		'sticky polls are not limited',
	);
	assert.equal(s.tryReserveSlot(ctx(false)), null, 'eager tasks are refused at the limit too');
	s.releaseSlot({ permit: a }); // the reserved normal slot brought nothing: 2 cached + 0 reserved < 3
	assert.deepEqual(await waiting, { sticky: false });
	cached = 3;
	const next = s.reserveSlot(ctx(false), new AbortController().signal);
	assert.equal(await settled(next), false);
	cached = 1; // a run ended and was evicted: no slot released, seen by the 100 ms look-again
	assert.deepEqual(await next, { sticky: false });
});

test('never more workflow tasks at once than maxConcurrent, sticky or not', async () => {
	const s = new AdmissionSlots({ limit: 100, maxConcurrent: 2 });
	const p1 = await s.reserveSlot(ctx(true), new AbortController().signal);
	await s.reserveSlot(ctx(true), new AbortController().signal);
	const third = s.reserveSlot(ctx(true), new AbortController().signal);
	assert.equal(await settled(third), false);
	s.releaseSlot({ permit: p1 });
	assert.deepEqual(await third, { sticky: true });
});

test('an aborted wait rejects with the abort reason and takes no slot', async () => {
	const s = new AdmissionSlots({ limit: 1, maxConcurrent: 5, stallMs: 60_000 });
	s.bind(() => 1);
	const ac = new AbortController();
	const p = s.reserveSlot(ctx(false), ac.signal);
	ac.abort(new Error('poller stopped'));
	await assert.rejects(p, /poller stopped/);
	assert.deepEqual(await s.reserveSlot(ctx(true), new AbortController().signal), { sticky: true });
});

test('a full cache where nothing completes lets one normal poll through after stallMs (no deadlock), then holds again', async () => {
	const s = new AdmissionSlots({ limit: 2, maxConcurrent: 5, stallMs: 150 });
	s.bind(() => 2);
	const t0 = Date.now();
	const p = await s.reserveSlot(ctx(false), new AbortController().signal);
	assert.ok(Date.now() - t0 >= 140, `waited for the stall (${Date.now() - t0} ms)`);
	assert.equal(s.stats.stallsBroken, 1);
	const again = s.reserveSlot(ctx(false), new AbortController().signal);
	assert.equal(await settled(again), false, 'one at a time: the let-through slot is still reserved');
	s.releaseSlot({ permit: p });
	await again; // the next stall
	assert.equal(s.stats.stallsBroken, 2);
});

test('SECSVC_ADMIT_WORKFLOWS: default 400, 0 turns it off, above the cache size or not an integer is refused naming it', () => {
	assert.equal(workerTuning({}).admitWorkflows, 400);
	assert.equal(workerTuning({ SECSVC_ADMIT_WORKFLOWS: '0' }).admitWorkflows, 0);
	assert.throws(
		() => workerTuning({ SECSVC_ADMIT_WORKFLOWS: '1200' }),
		/SECSVC_ADMIT_WORKFLOWS: must be ≤ SECSVC_MAX_CACHED_WORKFLOWS \(1000\)/,
	);
	assert.throws(
		() => workerTuning({ SECSVC_ADMIT_WORKFLOWS: 'lots' }),
		/SECSVC_ADMIT_WORKFLOWS: must be an integer ≥ 0/,
	);
	assert.equal(coordinatorQueueFor('secsvc-runbooks'), 'secsvc-runbooks-coordinators');
});

test('the worker is told once when the limit starts holding back and once when it stops', async () => {
	let cached = 2;
	const s = new AdmissionSlots({ limit: 2, maxConcurrent: 5, stallMs: 60_000 });
	s.bind(() => cached);
	const seen: boolean[] = [];
	s.onChange = (h) => seen.push(h);
	const a = s.reserveSlot(
		{ slotType: 'workflow', taskQueue: 'q', workerIdentity: 'w', workerBuildId: '', isSticky: false },
		new AbortController().signal,
	);
	const b = s.reserveSlot(
		{ slotType: 'workflow', taskQueue: 'q', workerIdentity: 'w', workerBuildId: '', isSticky: false },
		new AbortController().signal,
	);
	await new Promise((r) => setTimeout(r, 20));
	assert.deepEqual(seen, [true]);
	cached = 0;
	await Promise.all([a, b]);
	assert.deepEqual(seen, [true, false]);
});
