import { ID_ALPHABET } from '../../api/limits.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FleetConfigError, parseFleet } from '../../workflows/fleet/clientConfig.mts';
import { nextGridPoint, sitePlan, tickBatches, tickPhaseMs } from '../../workflows/fleet/shared.mts';
import { parsePlan } from '../../api/runbook/plan.ts';

/** The fleet file (workflows/fleet/clientConfig.mts): defaults, per-site plans, and errors that name the site and field. */

const site = (n: number, o?: object) => ({
	customer_id: '110001',
	site_id: String(210000 + n),
	domain_ports: [String(310000 + n)],
	...(o ? { overrides: o } : {}),
});
const issues = (f: unknown) => {
	try {
		parseFleet(f);
	} catch (e) {
		assert.ok(e instanceof FleetConfigError, String(e));
		return e.issues.map((i) => `${i.where}: ${i.field}: ${i.rule}`);
	}
	assert.fail('expected a FleetConfigError');
};

test('defaults, and each site plan = template + site + overrides (protected ranges added, never replaced)', () => {
	const template = {
		cooldownSeconds: 600,
		approval: { required: false, timeoutSeconds: 60 },
		blacklist: { enabled: true, protectedRanges: ['198.51.100.0/24'] },
	};
	const f = parseFleet({
		template,
		sites: [
			site(1),
			site(2, { cooldownSeconds: 30, approval: { required: true }, protectedRanges: ['192.0.2.1', '198.51.100.0/24'] }),
		],
	});
	assert.equal(f.fleet, 'default');
	assert.deepEqual(f.settings, {
		intervalSeconds: 60,
		batchSize: 50,
		concurrency: 8,
		parallelBatches: 4,
		activities: 'local',
		ticksPerRun: 100,
		maxIntervalStretch: 3,
	});
	assert.equal(f.sitesPerWatcher, 250);
	const p1 = parsePlan(sitePlan(f.template, f.sites[0]));
	assert.equal(p1.site_id, '210001');
	assert.equal(p1.cooldownSeconds, 600);
	const p2 = parsePlan(sitePlan(f.template, f.sites[1]));
	assert.equal(p2.cooldownSeconds, 30);
	assert.deepEqual(p2.approval, { required: true, timeoutSeconds: 60, onTimeout: 'reject', approvers: [] });
	assert.deepEqual(p2.blacklist.protectedRanges, ['198.51.100.0/24', '192.0.2.1']);
	assert.deepEqual(template.blacklist.protectedRanges, ['198.51.100.0/24'], 'the template is not changed');
});

test('every error names the site (or template / fleet) and the field; duplicates are named', () => {
	assert.deepEqual(issues({ sites: [site(1), site(1)] }), [
		'site 210001 (sites[1]): site_id: is listed twice (also sites[0])',
	]);
	assert.deepEqual(issues({ sites: [site(1), site(2, { cooldownSeconds: -1 })] }), [
		'site 210002 (sites[1]): overrides.cooldownSeconds: must be at least 0',
	]);
	assert.deepEqual(issues({ sites: [site(1, { approval: { onTimeout: 'maybe' } })] }), [
		'site 210001 (sites[0]): overrides.approval.onTimeout: must be approve or reject',
	]);
	assert.deepEqual(issues({ template: { pollSeconds: 0 }, sites: [site(1)] }), [
		'template: pollSeconds: must be at least 1',
	]);
	assert.deepEqual(issues({ template: { site_id: 'x' }, sites: [site(1)] }), [
		'template: site_id: must not be in the template (it is per site)',
	]);
	assert.deepEqual(issues({ intervalSeconds: 0, sites: [] }), ['(fleet): intervalSeconds: must be at least 1']);
	assert.deepEqual(issues({ sites: [{ customer_id: '1', site_id: 'a/b' }] }), [
		`site a/b (sites[0]): site_id: must be a site id: ${ID_ALPHABET}`,
	]);
	// A plan rule that only the merged plan breaks (ipAuth needs domain-ports) is reported for the site.
	const ipAuth = { action: 'ratelimit', enable: 1, mode: 2 };
	assert.deepEqual(issues({ template: { ipAuth }, sites: [{ customer_id: '1', site_id: '9' }] }), [
		'site 9 (sites[0]): domain_ports: must list at least one domain-port when ipAuth or switches are set',
	]);
	assert.match(issues({ sites: 'all' })[0], /^\(fleet\): sites: /);
});

test('tick grid: a watcher ticks every interval on its own phase; the watchers of a fleet are spread over the interval', () => {
	const phases = [0, 1, 2, 3].map((i) => tickPhaseMs(i, 10));
	assert.equal(new Set(phases).size, 4);
	const sorted = [...phases].sort((a, b) => a - b);
	const gaps = [...sorted.slice(1).map((p, i) => p - sorted[i]), sorted[0] + 10_000 - (sorted.at(-1) as number)];
	assert.ok(Math.min(...gaps) >= 1400, `4 watchers at least 1.4 s apart in a 10 s interval: ${phases.join(', ')}`);
	const t = 1_700_000_003_217;
	const g = nextGridPoint(t, 2, 10);
	assert.ok(g >= t && g < t + 10_000 && (g - tickPhaseMs(2, 10)) % 10_000 === 0, 'first grid point at or after t');
	assert.equal(nextGridPoint(g, 2, 10), g, 'a grid point is its own next grid point');
	assert.equal(nextGridPoint(g + 10_000, 2, 10), g + 10_000, 'due on the grid → exactly one interval later');
	assert.equal(nextGridPoint(g + 1, 2, 10), g + 10_000);
});

test("a tick's batches: those running at once are dealt the oldest sites round robin; one at a time, cut in order", () => {
	const order = Array.from({ length: 25 }, (_, i) => `s${i}`);
	const dealt = tickBatches(order, 4, 3);
	assert.deepEqual(dealt.slice(0, 3), [
		['s0', 's3', 's6', 's9'],
		['s1', 's4', 's7', 's10'],
		['s2', 's5', 's8', 's11'],
	]);
	assert.deepEqual(dealt[3][0], 's12', 'the next group of 3 begins where the first ended');
	assert.deepEqual(dealt.at(-1), ['s24']);
	assert.deepEqual(dealt.flat().sort(), [...order].sort(), 'every site once');
	assert.ok(dealt.every((b) => b.length <= 4));
	assert.deepEqual(
		tickBatches(order, 4, 1),
		Array.from({ length: 7 }, (_, i) => order.slice(i * 4, i * 4 + 4)),
	);
	assert.deepEqual(
		tickBatches(order.slice(0, 5), 4, 6),
		[
			['s0', 's2', 's4'],
			['s1', 's3'],
		],
		'fewer sites than lanes',
	);
});
