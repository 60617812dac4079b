// The attack's sources as the trigger and the runbooks pick them (api/ranges.ts topThreatSources), and the entries
// IP Blacklist › Add reads from one item (text or a list).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aggregate, formatRange, parseAll, topThreatSources } from '../../api/ranges.ts';
import { entriesOf } from '../../nodes/SecurityService/actions/ipBlacklist/add.operation.ts';

const item = (ip: string, percent: number, size: string) => ({
	ip,
	percent,
	size,
	code: 'XX',
	country: 'X',
	org: 'o',
	latitude: 0,
	longitude: 0,
});
const tm = {
	bps: [
		item('203.0.113.9', 10, '5'),
		item('203.0.113.5', 40, '20'),
		item('203.0.113.6', 40, '30'),
		item('203.0.113.7', 1, '1'),
	],
	pps: [item('198.51.100.1', 99, '1')],
};

test("topThreatSources: strongest first (percent, then size), topN, minPercent, the metric's list, wrapped or bare", () => {
	assert.deepEqual(
		topThreatSources({ threat_map: tm }, 'bps', 3).map((i) => i.ip),
		['203.0.113.6', '203.0.113.5', '203.0.113.9'],
	);
	assert.deepEqual(
		topThreatSources(tm, 'bps', 10, 5).map((i) => i.ip),
		['203.0.113.6', '203.0.113.5', '203.0.113.9'],
	);
	assert.deepEqual(
		topThreatSources(tm, 'pps', 10).map((i) => i.ip),
		['198.51.100.1'],
	);
	assert.deepEqual(topThreatSources(undefined, 'bps', 10), []);
	assert.deepEqual(topThreatSources(tm, 'bps', 0), []);
	// merged as the trigger's attacking_ranges: adjacent addresses become one range
	assert.deepEqual(aggregate(parseAll(topThreatSources(tm, 'bps', 10).map((i) => i.ip)).ranges).map(formatRange), [
		'203.0.113.5-203.0.113.7',
		'203.0.113.9',
	]);
});

test('IP Blacklist › Add entries: a list, nested lists, or text separated by commas, semicolons, spaces or new lines', () => {
	assert.deepEqual(entriesOf('203.0.113.7, 198.51.100.0/28;192.0.2.1-192.0.2.9\n10.0.0.1 '), [
		'203.0.113.7',
		'198.51.100.0/28',
		'192.0.2.1-192.0.2.9',
		'10.0.0.1',
	]);
	assert.deepEqual(entriesOf(['203.0.113.7', ['192.0.2.1, 192.0.2.2'], '']), ['203.0.113.7', '192.0.2.1', '192.0.2.2']);
	assert.deepEqual(entriesOf(''), []);
	assert.deepEqual(entriesOf(undefined), []);
});
