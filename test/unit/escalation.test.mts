/** Issue 39 item 3: the repeat-offender rule (api/escalation.ts), pure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decayed, escalate, REPEAT_DEFAULTS } from '../../api/escalation.ts';
import { parseRepeatRule } from '../../worker/src/temporal/offenders.mts';

const DAY = 86_400_000;

test('1× → 2× → 4×, capped; the reason names the count, the rule and the cap', () => {
	const r = REPEAT_DEFAULTS;
	assert.deepEqual(
		[0, 1, 2, 3, 9].map((n) => escalate(3600, n, r).seconds),
		[3600, 7200, 14400, 14400, 14400],
	);
	assert.match(escalate(3600, 0, r).why, /^first block of this source in the history: 3600s$/);
	assert.equal(
		escalate(3600, 2, r, '2026-11-20T00:00:00.000Z').why,
		'repeat offender: blocked 2 time(s) before, last 2026-11-20T00:00:00.000Z: 3600s × 4 (cap) = 14400s (rule ×2 per block, cap ×4, halves after 7 quiet days)',
	);
	assert.equal(escalate(60 * 86400, 3, r).seconds, 90 * 86400, 'never past the 90-day bound');
	assert.match(escalate(60 * 86400, 3, r).why, /\(90-day bound\)/);
});

test('the count halves after each quiet period, and is gone after many', () => {
	const r = REPEAT_DEFAULTS;
	assert.equal(decayed(4, 0, 6 * DAY, r), 4);
	assert.equal(decayed(4, 0, 7 * DAY, r), 2);
	assert.equal(decayed(4, 0, 14 * DAY, r), 1);
	assert.equal(decayed(4, 0, 21 * DAY, r), 0);
	assert.equal(decayed(1_000_000, 0, 400 * DAY, r), 0);
});

test('SECSVC_REPEAT_RULE: off, JSON, defaults; a bad one names the field and the rule', () => {
	assert.deepEqual(parseRepeatRule(undefined), REPEAT_DEFAULTS);
	assert.equal(escalate(60, 5, parseRepeatRule('off')).seconds, 60);
	assert.deepEqual(parseRepeatRule('{"factor":3}'), { factor: 3, maxMultiplier: 4, quietDays: 7 });
	assert.throws(() => parseRepeatRule('{"factor":0}'), /SECSVC_REPEAT_RULE\.factor: must be a number from 1 to 10/);
	assert.throws(() => parseRepeatRule('{"quietDays":-1}'), /SECSVC_REPEAT_RULE\.quietDays: /);
	assert.throws(() => parseRepeatRule('x'), /must be off or a JSON object/);
});
