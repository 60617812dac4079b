/**
 * Issue 42: a runbook's blacklist adds of one domain-port in one activity (worker/src/activities/exactBatch.mts),
 * against the simulator, in the SDK's activity context. Each entry is written as its own add activity would write it
 * (read, POST only when not listed, answered with what it wrote) and keeps its own record in the activity's: a retry
 * answers an entry its earlier attempt answered from that record and sends nothing for it, and the entry it was
 * writing is `unknown` when found listed. A guard refusal is answered, not thrown; any other failure carries the
 * answers made before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../../worker/src/activities/operations.mts';
import { ADD_EACH_ACTIVITY, type AddEachResult } from '../../workflows/pure/activityNames.mts';
import '../helpers/started.mts';
import { appSimulator } from '../helpers/appSimulator.mts';

const APP = { appId: 'add-each-app', secret: 'add-each-secret-1' };
const app = appSimulator(APP);
const client = app.client;
const ADD = 'applicationProtection.ipBlacklist.add';

/** The activity in an SDK activity context: `attempt` and the record an earlier attempt left; its records. */
async function addEach(
	entries: string[],
	info: { attempt?: number; heartbeatDetails?: unknown } = {},
	concurrency = 1,
) {
	const ids = app.sim.sim.firstIds();
	const env = new MockActivityEnvironment({ attempt: 1, ...info });
	const records: unknown[] = [];
	env.on('heartbeat', (d: unknown) => records.push(d));
	const act = createActivities(client())[ADD_EACH_ACTIVITY];
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const since = app.sim.sim.requests().at(-1)?.seq ?? 0;
	const run = env.run(act, { ...dp, entries, concurrency }) as Promise<unknown> as Promise<AddEachResult>;
	const posts = () =>
		app.sim.sim
			.requests({ op: ADD, since })
			.map((r) => (r.body as { ip_black_list?: string } | undefined)?.ip_black_list ?? JSON.stringify(r.body))
			.map((e) => e.replace(/^([\d.]+)-\1$/, '$1')); // a lone address is sent as its one-address range
	return { run, records, posts, dp };
}

test('each entry read, POSTed only when not listed, answered with what it wrote; each answer in the record', async () => {
	const { dp } = await addEach([]);
	await client().call(ADD, { ...dp, ip_black_list: '203.0.113.21' }); // someone else's
	const t = await addEach(['203.0.113.20', '203.0.113.21', '203.0.113.22']);
	const r = await t.run;
	assert.deepEqual(
		r.answers.map((a) => [a.entry, 'answer' in a ? (a.answer as { wrote: string[] }).wrote : a.refused]),
		[
			['203.0.113.20', ['203.0.113.20']],
			['203.0.113.21', []],
			['203.0.113.22', ['203.0.113.22']],
		],
	);
	assert.equal(t.posts().length, 2, 'only the entries not listed were sent');
	// the last record (before the last entry's write) holds the answers before it and the entry being written
	const last = t.records.at(-1) as { entries: Record<string, { answer?: unknown; writing?: boolean }> };
	assert.deepEqual(Object.keys(last.entries), ['203.0.113.20', '203.0.113.21', '203.0.113.22']);
	assert.ok(last.entries['203.0.113.20'].answer && last.entries['203.0.113.21'].answer);
	assert.equal(last.entries['203.0.113.22'].writing, true);
});

test('a retry: answered entries from the record (nothing sent), the entry being written found listed is unknown', async () => {
	const { dp } = await addEach([]);
	await client().call(ADD, { ...dp, ip_black_list: '203.0.113.31' }); // the earlier attempt's POST, answer lost
	const earlier = {
		entries: {
			'203.0.113.30': { answer: { added: '203.0.113.30', wrote: ['203.0.113.30'], notOurs: [] } },
			'203.0.113.31': { writing: true },
		},
	};
	const t = await addEach(['203.0.113.30', '203.0.113.31', '203.0.113.32'], { attempt: 2, heartbeatDetails: earlier });
	const r = await t.run;
	const byEntry = Object.fromEntries(r.answers.map((a) => [a.entry, 'answer' in a ? a.answer : a.refused]));
	assert.deepEqual((byEntry['203.0.113.30'] as { wrote: string[] }).wrote, ['203.0.113.30']);
	assert.deepEqual((byEntry['203.0.113.31'] as { unknown: string[] }).unknown, ['203.0.113.31']);
	assert.deepEqual((byEntry['203.0.113.32'] as { wrote: string[] }).wrote, ['203.0.113.32']);
	assert.deepEqual(t.posts(), ['203.0.113.32'], 'only the entry no attempt had reached was sent');
});

test('a guard refusal is answered (nothing sent); another failure carries the answers made before it', async () => {
	const refused = await addEach(['10.0.0.0/8', '203.0.113.40']);
	const r = await refused.run;
	assert.equal(r.answers[0].entry, '10.0.0.0/8');
	assert.ok('refused' in r.answers[0], JSON.stringify(r.answers[0]));
	assert.deepEqual(refused.posts(), ['203.0.113.40']);

	const t = await addEach(['203.0.113.50', 'not-an-address', '203.0.113.51']);
	await assert.rejects(t.run, (e: unknown) => {
		assert.ok(e instanceof ApplicationFailure, String(e));
		assert.equal(e.type, 'ValidationError');
		assert.equal(e.nonRetryable, true);
		const last = e.details?.at(-1) as AddEachResult;
		assert.deepEqual(
			last.answers.map((a) => a.entry),
			['203.0.113.50'],
		);
		return true;
	});
	assert.deepEqual(t.posts(), ['203.0.113.50'], 'nothing after the failure was sent');

	// Entries written beside the failure (at once, as a re-arm writes them): their answers are recorded before the
	// activity fails, so its retry knows they were ours (not `unknown`: never reverted).
	const side = await addEach(['not-an-address', '203.0.113.55'], {}, 2);
	await assert.rejects(side.run);
	const last = side.records.at(-1) as { entries: Record<string, { answer?: { wrote?: string[] } }> };
	assert.deepEqual(last.entries['203.0.113.55'].answer?.wrote, ['203.0.113.55'], JSON.stringify(side.records));
});
