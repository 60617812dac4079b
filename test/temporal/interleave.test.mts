/**
 * Issue 37 item 4: model-based interleavings. 200 seeded schedules (SECSVC_INTERLEAVE_COUNT, first seed
 * SECSVC_INTERLEAVE_SEED, SECSVC_INTERLEAVE_CONCURRENCY at once), each on its own site: a runbook (approved,
 * rejected, aborted, cooldown extended) raced by n8n-style writes, console writes, expiring blocks, drift enforces
 * and SIGKILLs of the runbooks' worker. One invariant (interleave/invariant.mts), from the simulator's log and final
 * state: every setting a runbook touched ends as the other actors last wrote it (or as before the runbook), and no
 * runbook or block DELETEs or overwrites what it did not write. A failure prints each failing seed and its schedule.
 * Ownership is judged by what the runbook could observe: writes of others between two of its reads of a setting that
 * leave it as its earlier read saw it are no writes for it. Expecting the runbook to know of such a flip (seeds 50,
 * 57, 103) was impossible for any client of this API: the spec's reads answer the current value only — no write
 * history, no author or time per value — so a poll cannot tell it from no write at all.
 *
 * Worker kills are ON (SECSVC_INTERLEAVE_KILLS=0 turns them off): a kill between a write's POST and its answer is
 * what seeds 106 and 36 of the s10-classes runs broke on; every write now records what it found, stored by the server
 * before it sends (worker/src/activities/writeRecord.mts), so a retry tells its own write from a person's.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT } from './helpers.mts';
import { startWorld, type World } from './interleave/world.mts';
import { failedWhat, failureLine, failureReport, runMany } from './interleave/many.mts';

const COUNT = Number(process.env.SECSVC_INTERLEAVE_COUNT ?? 200);
const FIRST = Number(process.env.SECSVC_INTERLEAVE_SEED ?? 1);
const CONCURRENCY = Number(process.env.SECSVC_INTERLEAVE_CONCURRENCY ?? 24);
/** Every failing schedule's full report lands here (the assertion message shows the first five). */
const OUT = join(process.env.SECSVC_TEST_OUTPUT ?? join(ROOT, 'test-output'), 'interleave');

let w: World;
before(async () => {
	w = await startWorld({
		sites: COUNT,
		...(process.env.SECSVC_INTERLEAVE_KILLS === '0' ? { killGapMs: Number.POSITIVE_INFINITY } : {}),
	});
});
after(async () => {
	await w?.close();
});

test(`${COUNT} interleavings: the runbook undoes only what it wrote; the person wins after its write`, async () => {
	const s = await runMany(w, { first: FIRST, count: COUNT, concurrency: CONCURRENCY });
	console.log(
		`interleave: ${s.outcomes.length} schedules (seeds ${FIRST}–${FIRST + COUNT - 1}) in ${s.seconds.toFixed(0)} s ` +
			`(${s.perMinute.toFixed(0)}/min, ${CONCURRENCY} at once), ${s.kills} worker kills, ${s.failed.length} failed, ${s.windows} with a write of others inside a runbook write's read → write window`,
	);
	assert.ok(s.outcomes.every((x) => x.trace.length > 0) && s.outcomes.length === COUNT, 'every schedule ran');
	if (s.failed.length) {
		const seeds = s.failed.map((x) => x.schedule.seed).join(', ');
		mkdirSync(OUT, { recursive: true });
		writeFileSync(join(OUT, 'failures.txt'), `${s.failed.map(failureReport).join('\n')}\n`);
		assert.fail(
			`${failedWhat(s.failed, COUNT)}; seeds: ${seeds}\n` +
				`${s.failed.map(failureLine).join('\n')}\nThe first five in full (all: ${join(OUT, 'failures.txt')}):\n${s.failed.slice(0, 5).map(failureReport).join('\n')}`,
		);
	}
});
