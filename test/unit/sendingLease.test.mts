/**
 * An add batch's progress records (workflows/blocks/activitiesLease.mts), in the SDK's activity context: a POST
 * answered right after a background renewal is still recorded before the next call. Before, the renewal counted as the
 * last progress record, so the next POST went out with that answer unrecorded and a kill left it `unknown`
 * (test/temporal/blocksKill: "at most the POST in flight is unknown: active,active,unknown,unknown,…" at load 16).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { sendingLease } from '../../workflows/blocks/activitiesLease.mts';

test('an answer after a background renewal is recorded; progress records stay at most one per second', async () => {
	const env = new MockActivityEnvironment({
		heartbeatTimeoutMs: 15_000,
		startToCloseTimeoutMs: 600_000,
		currentAttemptScheduledTimestampMs: Date.now(),
	});
	const records: string[] = [];
	let sent: string[] = [];
	await env.run(async () => {
		const attempt = {
			attempt: 1,
			durable: true,
			record: async (d: Record<string, unknown>) => void records.push(`${d.sent}`),
		};
		const lease = sendingLease(attempt, () => ({ sent }));
		try {
			sent = ['a'];
			await lease.progress();
			await new Promise((r) => setTimeout(r, 1100));
			await lease.renew(); // the background renewal (every third of the heartbeat timeout), just before b's answer
			sent = ['a', 'b'];
			await lease.progress();
			sent = ['a', 'b', 'c']; // answered within a second of b's record: left to the next record
			await lease.progress();
		} finally {
			lease.end();
		}
	});
	assert.deepEqual(records, ['a', 'a', 'a,b']);
});
