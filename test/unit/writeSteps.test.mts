/**
 * Issue 42: a runbook's write groups in one activity (worker/src/activities/exactBatch.mts `exactWriteSteps`), against
 * the simulator, in the SDK's activity context. The groups go in order (a group's writes at once); each setting is
 * written as its own activity writes it (read, write only when not at the target, answered with what it wrote and
 * replaced) and each blacklist entry as the add activity writes it, each with its own record in the activity's: a retry
 * answers from that record what an earlier attempt answered and sends nothing for it; a setting it was writing and
 * finds at the target is `unknown`. A failure ends the groups after it and carries the answers made before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../../worker/src/activities/operations.mts';
import { WRITE_STEPS_ACTIVITY, type WriteStep, type WriteStepsResult } from '../../workflows/pure/activityNames.mts';
import '../helpers/started.mts';
import { appSimulator } from '../helpers/appSimulator.mts';

const APP = { appId: 'write-steps-app', secret: 'write-steps-secret-1' };
const app = appSimulator(APP);
const client = app.client;

async function writeSteps(
	groups: (dp: { site_id: string; domain_port_id: string }) => WriteStep[][],
	info: { attempt?: number; heartbeatDetails?: unknown } = {},
) {
	const ids = app.sim.sim.firstIds();
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const env = new MockActivityEnvironment({ attempt: 1, ...info });
	const records: unknown[] = [];
	env.on('heartbeat', (d: unknown) => records.push(d));
	const since = app.sim.sim.requests().at(-1)?.seq ?? 0;
	const act = createActivities(client())[WRITE_STEPS_ACTIVITY];
	const run = env.run(act, { groups: groups(dp) }) as Promise<unknown> as Promise<WriteStepsResult>;
	const ops = () =>
		app.sim.sim
			.requests({ since })
			.filter((r) => r.opId && !r.opId.startsWith('authorization.'))
			.map((r) => `${r.method} ${r.opId}`);
	return { run, records, ops, dp };
}

const byKey = (r: WriteStepsResult) => Object.fromEntries(r.answers.map((a) => [a.key, 'answer' in a ? a.answer : a]));

test('groups in order, each write read first and answered with what it wrote; every answer in the record', async () => {
	const t = await writeSteps((dp) => [
		[{ key: 'c0', op: 'applicationProtection.switch.set', params: { ...dp, name: 'p_auth', enable: 1 } }],
		[{ key: 'c1', add: { ...dp, entries: ['203.0.113.60', '203.0.113.61'], concurrency: 2 } }],
		[{ key: 'c2', op: 'applicationProtection.switch.set', params: { ...dp, name: 'p_auth', enable: 1 } }],
	]);
	const r = byKey(await t.run);
	assert.deepEqual(r.c0, { wrote: 1, replaced: (r.c0 as { replaced: unknown }).replaced });
	assert.deepEqual((r['c1 203.0.113.60'] as { wrote: string[] }).wrote, ['203.0.113.60']);
	assert.deepEqual((r['c1 203.0.113.61'] as { wrote: string[] }).wrote, ['203.0.113.61']);
	assert.deepEqual(r.c2, { notOurs: 1 }, 'the later group found the earlier one written');
	const writes = t.ops().filter((o) => o.startsWith('POST'));
	assert.equal(writes.length, 3, t.ops().join(', '));
	assert.match(writes[0], /switch\.set/, 'the first group before the second');
	const last = t.records.at(-1) as { entries: Record<string, { answer?: unknown; writing?: boolean }> };
	assert.deepEqual(Object.keys(last.entries).sort(), ['c0', 'c1 203.0.113.60', 'c1 203.0.113.61', 'c2']);
	assert.ok(last.entries.c0.answer && last.entries['c1 203.0.113.60'].answer);
});

test('a retry answers from the record and sends nothing for it; the setting it was writing is unknown', async () => {
	const { dp } = await writeSteps(() => []);
	await client().call('applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: 0 });
	await client().call('applicationProtection.switch.set', { ...dp, name: 'p_auth', enable: 1 }); // the lost write
	const earlier = {
		entries: {
			'c0 203.0.113.70': { answer: { added: '203.0.113.70', wrote: ['203.0.113.70'], notOurs: [] } },
			c1: { writing: true },
		},
	};
	const t = await writeSteps(
		(d) => [
			[{ key: 'c0', add: { ...d, entries: ['203.0.113.70'], concurrency: 1 } }],
			[{ key: 'c1', op: 'applicationProtection.switch.set', params: { ...d, name: 'p_auth', enable: 1 } }],
		],
		{ attempt: 2, heartbeatDetails: earlier },
	);
	const r = byKey(await t.run);
	assert.deepEqual((r['c0 203.0.113.70'] as { wrote: string[] }).wrote, ['203.0.113.70']);
	assert.deepEqual(r.c1, { unknown: 1 });
	assert.deepEqual(
		t.ops().filter((o) => o.startsWith('POST')),
		[],
		'nothing sent again',
	);
});

test('a failure ends the groups after it and carries the answers before it', async () => {
	const t = await writeSteps((dp) => [
		[{ key: 'c0', add: { ...dp, entries: ['203.0.113.80'], concurrency: 1 } }],
		[{ key: 'c1', op: 'applicationProtection.switch.set', params: { ...dp, name: 'p_auth', enable: 'x' } }],
		[{ key: 'c2', add: { ...dp, entries: ['203.0.113.81'], concurrency: 1 } }],
	]);
	await assert.rejects(t.run, (e: unknown) => {
		assert.ok(e instanceof ApplicationFailure, String(e));
		assert.equal(e.type, 'ValidationError');
		const last = e.details?.at(-1) as WriteStepsResult;
		assert.deepEqual(
			last.answers.map((a) => a.key),
			['c0 203.0.113.80'],
		);
		return true;
	});
	assert.equal(t.ops().filter((o) => o.startsWith('POST')).length, 1, 'nothing after the failure was sent');
});
