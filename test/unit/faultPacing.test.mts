import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextTickAfter, nextGridPoint } from '../../workflows/fleet/shared.mts';
import { RateGate } from '../../worker/src/activities/fleet.mts';
import {
	blockCarryBytes,
	checkBlockCapacity,
	checkSiteBlockHolds,
	MAX_SITE_BLOCKS,
	utf8Length,
} from '../../api/blockCapacity.ts';

/**
 * The pure rules behind fleet tick pacing under faults and behind what expiring blocks can carry. The behaviour end
 * to end: test/temporal/fleetFaults.test.mts, blocksCapacity.test.mts.
 */

test('nextTickAfter: on time → the next grid point; late by more than half an interval → the one after', () => {
	const I = 10;
	const due = nextGridPoint(1_000_000, 0, I);
	assert.equal(
		nextTickAfter(due, due + 200, 0, I),
		due + 10_000,
		'a tick that ran on time is followed one interval later',
	);
	assert.equal(
		nextTickAfter(due, due + 4_900, 0, I),
		due + 10_000,
		'late by less than half: the next grid point (≥ 5.1 s apart)',
	);
	assert.equal(nextTickAfter(due, due + 8_000, 0, I), due + 20_000, 'late by 8 s: not 2 s later, the grid point after');
	for (const late of [0, 3_000, 5_000, 7_000, 9_999, 14_000]) {
		const next = nextTickAfter(due, due + late, 0, I);
		assert.ok(next - (due + late) >= 5_000, `late ${late}: next ${next - due - late} ms after (≥ half an interval)`);
		assert.ok(
			next - due <= 10_000 + late + 10_000,
			`late ${late}: no more than an interval plus the lateness past the next due`,
		);
	}
});

test('RateGate: a refusal makes lane 0 wait (jittered back-off, growing to 2 s) and the others wait for an answer; an answer opens it', async () => {
	const g = new RateGate(() => 1); // no jitter: the whole back-off
	const at = (ms: number) => {
		const t = Date.now() + ms;
		return () => t;
	};
	const far = at(60_000);
	assert.equal(await g.pass(0, far), true);
	g.refused();
	assert.equal(g.limited, true);
	const t0 = Date.now();
	assert.equal(await g.pass(0, far), true);
	assert.ok(Date.now() - t0 >= 240, `lane 0 waited ${Date.now() - t0} ms`);
	assert.equal(await g.pass(1, at(150)), false, 'another lane gives up at the deadline while the service refuses');
	g.refused();
	g.refused();
	g.refused();
	g.refused();
	assert.equal(await g.pass(0, at(1000)), false, 'a back-off (2 s) past the deadline: stop, the rest is deferred');
	g.answered();
	assert.equal(await g.pass(1, far), true, 'answered: every lane sends again');
});

test('blockCapacity: site holds and domain-port carry, each refused naming the field and the rule', () => {
	assert.equal(utf8Length('aé€😀'), 1 + 2 + 3 + 4);
	const req = { entry: '100.64.0.1', seconds: 60, by: 'x', reason: 'feed', via: 'cli' as const };
	const one = blockCarryBytes('20001', '30001', '100.64.0.1', req);
	assert.ok(one > 150 && one < 400, `a small block weighs ${one} bytes`);
	assert.throws(
		() =>
			checkBlockCapacity({
				field: '--file',
				site: '20001',
				dp: '30001',
				adding: 12_000,
				addingBytes: 12_000 * one,
				carried: 0,
				siteHeld: 0,
			}),
		/--file: 12000 new blocks: site 20001 would hold 12000/,
	);
	assert.throws(
		() =>
			checkBlockCapacity({
				field: 'blocks',
				site: '20001',
				dp: '30001',
				adding: 10,
				addingBytes: 2_000_000,
				carried: 0,
			}),
		/blocks: 10 new blocks: the active blocks of 30001 would weigh 2000000 bytes/,
	);
	checkBlockCapacity({
		field: 'blocks',
		site: '20001',
		dp: '30001',
		adding: MAX_SITE_BLOCKS,
		addingBytes: MAX_SITE_BLOCKS * one,
		carried: 0,
		siteHeld: 0,
	});
	const holds = Array.from({ length: MAX_SITE_BLOCKS }, (_, i) => ({
		key: `30001/blacklist/${i}`,
		owner: 'blocks-20001-30001',
	}));
	assert.throws(
		() => checkSiteBlockHolds('blocks-20001-30002', ['30002/blacklist/x'], holds),
		/keys: 1 new block holds would make 2001 on this site, more than 2000/,
	);
	checkSiteBlockHolds('blocks-20001-30001', ['30001/blacklist/5'], holds); // its own key again: nothing new
	checkSiteBlockHolds('attack-response-20001', ['30001/blacklist/y'], holds); // runbooks are never held back
});
