import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextTickAfter, nextGridPoint } from '../../workflows/fleet/shared.mts';
import { RateGate } from '../../workflows/fleet/activities.mts';
import {
	blockCarryBytes,
	checkBlockCapacity,
	checkSiteBlockHolds,
	DEFAULT_SITE_BLOCK_LIMIT,
	MAX_SHARD_BLOCKS,
	MAX_SHARDS,
	MAX_SITE_BLOCKS,
	MAX_SITE_BLOCKS_UNPACKED,
	siteBlockLimitProblem,
	utf8Length,
} from '../../api/blockCapacity.ts';
import { mergeFeed } from '../../api/blockFeed.ts';
import { blocksShardId, blocksShardIds, planShards, SHARD_FULL_RE } from '../../api/blockShards.ts';
import { packHolds, unpackHolds } from '../../workflows/coordinator/packing.mts';

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

test('blockCapacity: site limit, shard count and carry, coordinator holds, each refused naming the field and the rule', () => {
	assert.equal(utf8Length('aé€😀'), 1 + 2 + 3 + 4);
	const req = { entry: '100.64.0.1', seconds: 60, by: 'x', reason: 'feed', via: 'cli' as const };
	const one = blockCarryBytes('20001', '30001', '100.64.0.1', req);
	assert.ok(one > 150 && one < 400, `a small block weighs ${one} bytes`);
	const base = { field: '--file', site: '20001', dp: '30001', carried: 0, addingBytes: 0 };
	assert.throws(
		() => checkBlockCapacity({ ...base, adding: 100_000, siteHeld: 0 }),
		/--file: 100000 new blocks \(merged ranges\): site 20001 would hold 100000 expiring blocks at once, more than 20000 .*SECSVC_MAX_SITE_BLOCKS.*Nothing was sent/,
	);
	assert.throws(() => checkBlockCapacity({ ...base, adding: 11, siteHeld: 0, siteLimit: 10 }), /more than 10 /);
	checkBlockCapacity({ ...base, adding: DEFAULT_SITE_BLOCK_LIMIT, siteHeld: 0 });
	assert.throws(
		() => checkBlockCapacity({ ...base, field: 'blocks', adding: 2, active: MAX_SHARD_BLOCKS - 1 }),
		/blocks: 2 new blocks: this shard of 30001 would carry 2001 active blocks, more than 2000/,
	);
	assert.throws(
		() => checkBlockCapacity({ ...base, field: 'blocks', adding: 10, addingBytes: 2_000_000 }),
		/blocks: 10 new blocks: the active blocks of this shard of 30001 would weigh 2000000 bytes/,
	);
	assert.equal(siteBlockLimitProblem(MAX_SITE_BLOCKS), undefined);
	assert.match(String(siteBlockLimitProblem(MAX_SITE_BLOCKS + 1)), /from 1 to 24000/);
	const holds = (n: number) =>
		Array.from({ length: n }, (_, i) => ({ key: `30001/blacklist/${i}`, owner: 'blocks-20001-30001' }));
	// A coordinator run recorded before packed holds keeps its limit; a packed one carries MAX_SITE_BLOCKS.
	assert.throws(
		() => checkSiteBlockHolds('blocks-20001-30002', ['30002/blacklist/x'], holds(MAX_SITE_BLOCKS_UNPACKED)),
		/keys: 1 new block holds would make 2001 on this site, more than 2000/,
	);
	checkSiteBlockHolds('blocks-20001-30002', ['30002/blacklist/x'], holds(MAX_SITE_BLOCKS_UNPACKED), true);
	assert.throws(
		() => checkSiteBlockHolds('blocks-20001-30002', ['30002/blacklist/x'], holds(MAX_SITE_BLOCKS), true),
		/more than 24000/,
	);
	const long = Array.from({ length: 9000 }, (_, i) => ({
		key: `${'9'.repeat(120)}/blacklist/${i}`,
		owner: 'blocks-a-b',
	}));
	assert.throws(
		() => checkSiteBlockHolds('blocks-a-c', ['x'.repeat(200)], long, true),
		/would make the site's holds weigh \d+ bytes packed, more than 1200000/,
	);
	// Single adds one at a time: one group header each (own since / until), so fewer fit than in one feed.
	const singles = Array.from({ length: 6000 }, (_, i) => ({
		key: `30001/blacklist/100.64.${i >> 8}.${i & 255}`,
		owner: 'blocks-20001-30001',
		mode: 'hold' as const,
		reason: 'expiring blocks of 30001 (blocks-20001-30001)',
		since: new Date(i * 1000).toISOString(),
		until: new Date(i * 1000 + 3600_000).toISOString(),
	}));
	assert.throws(
		() => checkSiteBlockHolds('blocks-20001-30001', ['30001/blacklist/9.9.9.9'], singles, true),
		/bytes packed/,
	);
	assert.ok(JSON.stringify(packHolds(singles)).length > 1_200_000, 'what the rule keeps out would weigh more');
	checkSiteBlockHolds('blocks-20001-30001', ['30001/blacklist/5'], holds(MAX_SITE_BLOCKS)); // its own key again: nothing new
	checkSiteBlockHolds('attack-response-20001', ['30001/blacklist/y'], holds(MAX_SITE_BLOCKS)); // runbooks are never held back
});

test('blockFeed: a feed merged into the fewest ranges (gaps never bridged, never wider than maxPrefix), a bad line named', () => {
	const lines = (xs: string[]) => xs.map((entry, i) => ({ entry, label: `--file line ${i + 1}` }));
	assert.deepEqual(mergeFeed(lines(['10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.2', '10.0.0.5', '10.0.1.0/30'])), [
		'10.0.0.1-10.0.0.3',
		'10.0.0.5',
		'10.0.1.0-10.0.1.3',
	]);
	// Two adjacent /17s make a /16 (the widest allowed); with maxPrefix 17 they stay two ranges.
	assert.deepEqual(mergeFeed(lines(['10.1.0.0/17', '10.1.128.0/17'])), ['10.1.0.0-10.1.255.255']);
	assert.deepEqual(mergeFeed(lines(['10.1.0.0/17', '10.1.128.0/17']), 17), [
		'10.1.0.0-10.1.127.255',
		'10.1.128.0-10.1.255.255',
	]);
	assert.throws(
		() => mergeFeed(lines(['10.0.0.1', '10.0.0.300'])),
		(e: Error & { field?: string }) => e.field === '--file line 2' && /must be an IPv4 address/.test(e.message),
	);
	assert.throws(() => mergeFeed(lines(['10.0.0.0/8'])), /--file line 1: .*wider than the widest block allowed/);
});

test('blockShards: slices fill shard 0 first, then the next; a feed the shards cannot carry is refused naming the field', () => {
	assert.equal(blocksShardId('20001', '30001', 0), 'blocks-20001-30001');
	assert.equal(blocksShardId('20001', '30001', 3), 'blocks-20001-30001-3');
	assert.equal(blocksShardIds('20001', '30001').length, MAX_SHARDS);
	const bytes = (n: number) => Array.from({ length: n }, () => 300);
	assert.deepEqual(planShards('--file', '30001', [{ active: 1990, carried: 1990 * 300 }], bytes(2500)), [
		[0, 0, 10],
		[1, 10, 2010],
		[2, 2010, 2500],
	]);
	// Bytes bound a shard too: 1 MB of heavy blocks before 2,000 of them.
	assert.deepEqual(
		planShards(
			'--file',
			'30001',
			[],
			Array.from({ length: 5 }, () => 400_000),
		),
		[
			[0, 0, 2],
			[1, 2, 4],
			[2, 4, 5],
		],
	);
	assert.throws(
		() => planShards('--file', '30001', [], bytes(MAX_SHARDS * MAX_SHARD_BLOCKS + 1)),
		/--file: 16001 new blocks \(merged ranges\) for 30001: its 8 shards carry at most 16000 active blocks .*1 do not fit.*Nothing was sent/,
	);
	assert.match('blocks: 2 new blocks: this shard of 30001 would carry 2001 active blocks', SHARD_FULL_RE);
});

test('coordinator packing: holds packed by owner, mode, reason, since and until, unpacked as they were', () => {
	const h = (key: string, owner: string, until: string) => ({
		key,
		owner,
		mode: 'hold' as const,
		since: '2026-01-01T00:00:00.000Z',
		until,
		reason: 'r',
	});
	const holds = [
		h('a', 'blocks-1-2', '2026-01-02T00:00:00.000Z'),
		h('b', 'blocks-1-2', '2026-01-02T00:00:00.000Z'),
		h('c', 'blocks-1-2', '2026-01-03T00:00:00.000Z'),
		h('d', 'attack-response-1', '2026-01-02T00:00:00.000Z'),
	];
	const packed = packHolds(holds);
	assert.equal(packed.length, 3);
	assert.deepEqual(packed[0].keys, ['a', 'b']);
	assert.deepEqual(
		unpackHolds(packed).sort((x, y) => x.key.localeCompare(y.key)),
		holds,
	);
	const many = Array.from({ length: 20_000 }, (_, i) =>
		h(`30001/blacklist/100.64.${i >> 8}.${i & 255}`, 'blocks-20001-30001', 'u'),
	);
	const size = JSON.stringify(packHolds(many)).length;
	assert.ok(size < 700_000, `20,000 holds of one batch packed weigh ${size} bytes`);
});
