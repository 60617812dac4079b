import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
	aggregate,
	blacklistCandidates,
	formatRange,
	parseEntry,
	subtract,
	type Range,
} from '../../workflows/pure/ranges.mts';
import { formatThreshold, sameThreshold, scaleThreshold } from '../../workflows/pure/thresholds.mts';
import { parsePlan, PlanError } from '../../api/runbook/plan.ts';
import { KeyedMutex } from '../../worker/src/activities/mutex.mts';

const BASE = parseEntry('10.0.0.0')!.start;
const rangeArb = fc
	.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 6 }))
	.map(([s, len]) => ({ start: BASE + s, end: BASE + s + len }));
const members = (rs: Range[]) => {
	const set = new Set<number>();
	for (const r of rs) for (let i = r.start; i <= r.end; i++) set.add(i);
	return set;
};

test('aggregate: same addresses, sorted, no two ranges touching (fewest ranges)', () => {
	fc.assert(
		fc.property(fc.array(rangeArb, { maxLength: 12 }), (rs) => {
			const out = aggregate(rs);
			assert.deepEqual([...members(out)].sort(), [...members(rs)].sort());
			for (let i = 1; i < out.length; i++)
				assert.ok(out[i].start > out[i - 1].end + 1, 'gap between consecutive ranges');
		}),
		{ numRuns: 300 },
	);
});

test('subtract: exactly the addresses not protected', () => {
	fc.assert(
		fc.property(fc.array(rangeArb, { maxLength: 8 }), fc.array(rangeArb, { maxLength: 5 }), (from, minus) => {
			const out = subtract(from, minus);
			const m = members(minus);
			const want = [...members(from)].filter((x) => !m.has(x)).sort();
			assert.deepEqual([...members(out)].sort(), want);
			for (let i = 1; i < out.length; i++) assert.ok(out[i].start > out[i - 1].end + 1);
		}),
		{ numRuns: 300 },
	);
});

test('parseEntry / formatRange: addresses, ranges, CIDRs; invalid input rejected', () => {
	assert.deepEqual(parseEntry('1.2.3.0/30'), {
		start: parseEntry('1.2.3.0')!.start,
		end: parseEntry('1.2.3.3')!.start,
	});
	assert.equal(formatRange(parseEntry('1.2.3.4-1.2.3.4')!), '1.2.3.4');
	assert.equal(formatRange(parseEntry('1.2.3.4-1.2.3.9')!), '1.2.3.4-1.2.3.9');
	for (const bad of ['1.2.3', '1.2.3.256', '1.2.3.9-1.2.3.4', '01.2.3.4', '1.2.3.4/33', 'x'])
		assert.equal(parseEntry(bad), undefined, bad);
});

test('blacklistCandidates: dedupes, aggregates adjacent sources, never touches whitelist / protected / listed', () => {
	const r = (s: string) => parseEntry(s)!;
	const out = blacklistCandidates({
		sources: [
			'203.0.113.1',
			'203.0.113.2',
			'203.0.113.2',
			'203.0.113.3',
			'198.51.100.7',
			'192.0.2.10',
			'192.0.2.11',
			'junk',
			'203.0.113.200',
		],
		whitelist: [r('198.51.100.0/24')],
		protectedRanges: [r('192.0.2.10')],
		alreadyListed: [r('203.0.113.200')],
	});
	assert.deepEqual(out.add.map(formatRange), ['192.0.2.11', '203.0.113.1-203.0.113.3']);
	assert.deepEqual(out.skipped.map((s) => `${s.source}:${s.reason}`).sort(), [
		'192.0.2.10:protected range',
		'198.51.100.7:whitelisted',
		'203.0.113.200:already blacklisted',
		'junk:not an IPv4 address, range or CIDR',
	]);
});

test('thresholds: scale, format, compare across K/M/G notation', () => {
	assert.equal(scaleThreshold('10K', 0.5), '5K');
	assert.equal(scaleThreshold('1M', 0.25), '250K');
	assert.equal(scaleThreshold('333', 0.5), '167');
	assert.equal(formatThreshold(2e9), '2G');
	assert.ok(sameThreshold('1K', '1000'));
	assert.ok(!sameThreshold('1K', '1001'));
});

test('plan: defaults applied; errors name the field and the rule', () => {
	const p = parsePlan({ site_id: 's1', customer_id: 'c1', domain_ports: ['dp1'] });
	assert.equal(p.cooldownSeconds, 600);
	assert.equal(p.approval.onTimeout, 'reject');
	const fieldsOf = (plan: unknown) => {
		try {
			parsePlan(plan);
		} catch (e) {
			assert.ok(e instanceof PlanError);
			return e.issues.map((i) => `${i.field}: ${i.rule}`);
		}
		assert.fail('plan accepted');
	};
	const shape = fieldsOf({
		site_id: 's/1',
		customer_id: 'c1',
		detection: { thresholds: [{ name: 'icmp_total', factor: 0.5 }] },
		pollSeconds: 0,
	});
	assert.ok(
		shape.some((f) => f.startsWith('site_id: must be a site id')),
		shape.join(),
	);
	assert.ok(
		shape.some((f) => f.startsWith('detection.thresholds.0.name: must be a settable protocol item')),
		shape.join(),
	);
	assert.ok(shape.includes('pollSeconds: must be at least 1'), shape.join());
	const cross = fieldsOf({
		site_id: 's1',
		customer_id: 'c1',
		ipAuth: { action: 'ratelimit', enable: 1, mode: 2, action_blacklist: { duration: 1, threshold_rps: 2 } },
	});
	assert.ok(cross.includes('ipAuth.action_blacklist: must not be set when action is ratelimit (§4.3.3)'), cross.join());
	assert.ok(
		cross.includes('domain_ports: must list at least one domain-port when ipAuth or switches are set'),
		cross.join(),
	);
});

test('KeyedMutex: same key runs one at a time, other keys run in parallel', async () => {
	const m = new KeyedMutex();
	let active = 0;
	let maxActive = 0;
	let otherRanWhileBusy = false;
	const job = (i: number) =>
		m.run('site/dp', async () => {
			active++;
			maxActive = Math.max(maxActive, active);
			await new Promise((r) => setTimeout(r, 5));
			active--;
			return i;
		});
	const jobs = [job(1), job(2), job(3)];
	await new Promise((r) => setTimeout(r, 1));
	const other = m.run('site/dp2', async () => {
		otherRanWhileBusy = active > 0;
	});
	const results = await Promise.all([...jobs, other]);
	assert.deepEqual(results.slice(0, 3), [1, 2, 3]);
	assert.equal(maxActive, 1);
	assert.ok(otherRanWhileBusy);
	assert.equal(m.busyKeys, 0);
});

test('example plans in examples/plans validate', async () => {
	const { readdirSync, readFileSync } = await import('node:fs');
	const dir = new URL('../../examples/plans/', import.meta.url);
	const plans = readdirSync(dir).filter((f) => f.startsWith('attack-response') && f.endsWith('.json'));
	assert.ok(plans.length >= 2);
	for (const f of plans) assert.doesNotThrow(() => parsePlan(JSON.parse(readFileSync(new URL(f, dir), 'utf8'))), f);
});
