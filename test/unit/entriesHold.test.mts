/**
 * Issue 39 item 6: a re-arm's blacklist entries held by the write activity itself (worker/src/activities/exactBatch.mts
 * `exactWriteSteps` with `hold`, entriesHold.mts), against the simulator, in the SDK's activity context, the
 * coordinator's answer stubbed. The hold is asked once at the start, beside the first reads, with `since` = before
 * them; an entry is sent only once held by the caller, its list read made again when the coordinator cannot vouch for
 * it (`changedSince`) or answered after it; one someone else holds, or all when the hold must wait, is sent nothing and
 * given no answer, and the coordinator's answer comes back (`hold`) for the workflow to drop or wait for them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { exactWriteSteps } from '../../worker/src/activities/exactBatch.mts';
import type { AskHold } from '../../worker/src/activities/entriesHold.mts';
import type { ClaimResult } from '../../workflows/coordinator/coordination.mts';
import type { WriteStepsResult } from '../../workflows/pure/activityNames.mts';
import '../helpers/started.mts';
import { appSimulator } from '../helpers/appSimulator.mts';

const APP = { appId: 'entries-hold-app', secret: 'entries-hold-secret-1' };
const app = appSimulator(APP);
const ip = (n: number) => `203.0.113.${n}`;
const other = { owner: 'someone-else', mode: 'hold' as const, since: '', until: '', reason: 'theirs' };

async function writeHeld(
	entries: string[],
	answer: (keys: string[]) => ClaimResult,
	answerAfterMs = 0,
	info: { attempt?: number; heartbeatDetails?: unknown } = {},
) {
	const ids = app.sim.sim.firstIds();
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const seq = app.sim.sim.requests().at(-1)?.seq ?? 0;
	const asked: { since: string; keys: string[] }[] = [];
	const ask: AskHold = async (hold, since) => {
		const keys = [...new Set(Object.values(hold.keys))];
		asked.push({ since, keys });
		await new Promise((r) => setTimeout(r, answerAfterMs));
		return answer(keys);
	};
	const keys = Object.fromEntries(entries.map((e) => [`c1 ${e}`, `bl:${e}`]));
	const input = {
		groups: [
			[
				{ key: 'c0', op: 'applicationProtection.switch.set', params: { ...dp, name: 'p_auth', enable: 1 } },
				{ key: 'c1', add: { ...dp, entries, concurrency: 4 } },
			],
		],
		hold: { site_id: dp.site_id, reason: 'test', ttlSeconds: 60, keys },
	};
	const t0 = new Date().toISOString();
	const env = new MockActivityEnvironment({ attempt: 1, ...info });
	const run = env.run(() => exactWriteSteps(app.client(), input, undefined, (_, e) => e as Error, ask));
	const r = (await run) as WriteStepsResult<ClaimResult>;
	const ops = app.sim.sim
		.requests({ since: seq })
		.filter((x) => x.opId && !x.opId.startsWith('authorization.'))
		.map((x) => `${x.method} ${x.opId}`);
	const answered = r.answers.map((a) => a.key).sort();
	return { r, ops, asked, t0, answered, count: (s: string) => ops.filter((o) => o === s).length };
}

const grant = (keys: string[], held: string[] = []): ClaimResult => ({
	granted: keys.filter((k) => !held.includes(k)),
	held: held.map((key) => ({ ...other, key })),
	changedSince: false,
});

test('asked once beside the reads; an entry someone else holds is sent nothing and given no answer', async () => {
	const t = await writeHeld([ip(90), ip(91)], (keys) => grant(keys, [`bl:${ip(91)}`]));
	assert.equal(t.asked.length, 1, 'one claim for the activity');
	assert.deepEqual(t.asked[0].keys.sort(), [`bl:${ip(90)}`, `bl:${ip(91)}`]);
	assert.ok(t.asked[0].since >= t.t0, `since (${t.asked[0].since}) taken when the activity started`);
	assert.deepEqual(t.answered, ['c0', `c1 ${ip(90)}`]);
	assert.equal(t.count('POST applicationProtection.ipBlacklist.add'), 1, t.ops.join(', '));
	assert.deepEqual(
		t.r.hold?.held.map((h) => h.key),
		[`bl:${ip(91)}`],
		"the coordinator's answer comes back",
	);
	assert.equal(t.count('GET applicationProtection.ipBlacklist.get'), 2, 'each entry read once: the hold came first');
});

test('the coordinator cannot vouch for the reads: each entry is read again before it is sent', async () => {
	const t = await writeHeld([ip(92)], (keys) => ({ ...grant(keys), changedSince: true }));
	assert.deepEqual(t.answered, ['c0', `c1 ${ip(92)}`]);
	assert.equal(t.count('GET applicationProtection.ipBlacklist.get'), 2, t.ops.join(', '));
	assert.equal(t.ops.at(-1), 'POST applicationProtection.ipBlacklist.add', 'sent after its second read');
});

test('a hold answered after the read: the read is made again (the write follows its read at once)', async () => {
	const t = await writeHeld([ip(93)], (keys) => grant(keys), 150);
	assert.equal(t.count('GET applicationProtection.ipBlacklist.get'), 2, t.ops.join(', '));
	assert.equal(t.count('POST applicationProtection.ipBlacklist.add'), 1);
});

test('a hold that must wait (another owner lease): no entry sent, the settings written, `waiting` answered', async () => {
	const t = await writeHeld([ip(94), ip(95)], () => ({ granted: [], held: [], waiting: true }));
	assert.deepEqual(t.answered, ['c0']);
	assert.equal(t.count('POST applicationProtection.ipBlacklist.add'), 0, t.ops.join(', '));
	assert.equal(t.r.hold?.waiting, true);
});

test("a retry after a kill: asks the hold again (the same owner's: granted), then treats the entry it was writing as the add's own retry would", async () => {
	const ids = app.sim.sim.firstIds();
	const dp = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	await app.client().call('applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: ip(96) }); // the lost POST
	const earlier = {
		entries: { [`c1 ${ip(96)}`]: { writing: true }, [`c1 ${ip(97)}`]: { answer: { wrote: [ip(97)] } } },
	};
	const t = await writeHeld([ip(96), ip(97)], (keys) => grant(keys), 0, { attempt: 2, heartbeatDetails: earlier });
	assert.equal(t.asked.length, 1);
	assert.deepEqual(t.answered, ['c0', `c1 ${ip(96)}`, `c1 ${ip(97)}`]);
	const byKey = Object.fromEntries(t.r.answers.map((a) => [a.key, 'answer' in a ? a.answer : a]));
	assert.deepEqual(byKey[`c1 ${ip(96)}`], { entry: ip(96), wrote: [], notOurs: [], unknown: [ip(96)] });
	assert.deepEqual(byKey[`c1 ${ip(97)}`], { wrote: [ip(97)] }, 'answered from the record');
	assert.equal(t.count('POST applicationProtection.ipBlacklist.add'), 0, t.ops.join(', '));
});
