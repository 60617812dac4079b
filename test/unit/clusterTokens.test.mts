// ClusterTokens (worker/src/activities/clusterTokens.mts), on a manual clock and timer queue: one Update for concurrent
// callers; the held token until renewAt; the next one asked for in the background from a jittered point, while calls
// keep the held token until a quarter of the renewal margin is left; an idle tenant not renewed; a rejected token
// names its generation; a failed background ask retried, a lost tenant never asked again in the background. The tenant
// worker's settings (SECSVC_TENANT_CACHED_WORKFLOWS, SECSVC_TENANT_WORKFLOW_THREAD) checked, naming the setting; a
// tenant's client carries the worker's blast-radius guard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { ClusterTokens, guardOf } from '../../worker/src/activities/clusterTokens.mts';
import { sealed, type TokenGrant, type TokenRequest } from '../../workflows/tenant/shared.mts';
import {
	DEFAULT_TENANT_CACHED_WORKFLOWS,
	DEFAULT_TENANT_WORKFLOW_THREAD,
	tenantCachedWorkflows,
	tenantMode,
	tenantWorkflowThread,
} from '../../worker/src/process/tenantWorker.mts';
import type { WorkerConfig } from '../../worker/src/process/config.mts';
import { createClient } from '../../api/client.ts';
import { randomBytes } from 'node:crypto';

const flush = () => new Promise((r) => setImmediate(r));

/** A manual clock with a timer queue: `advance` runs the timers that fall due, in order. */
function manualTime(start = 1_000_000) {
	let now = start;
	const timers: { at: number; fn: () => void }[] = [];
	return {
		clock: () => now,
		schedule: (fn: () => void, ms: number) => {
			const t = { at: now + Math.max(0, ms), fn };
			timers.push(t);
			return () => {
				const i = timers.indexOf(t);
				if (i >= 0) timers.splice(i, 1);
			};
		},
		async advance(ms: number) {
			const end = now + ms;
			for (;;) {
				timers.sort((a, b) => a.at - b.at);
				const t = timers[0];
				if (!t || t.at > end) break;
				timers.shift();
				now = Math.max(now, t.at);
				t.fn();
				await flush();
			}
			now = end;
			await flush();
		},
		timers: () => timers.map((t) => t.at - now),
	};
}

/** A tenant workflow stand-in: 30 s tokens, renewAt 6 s before expiry; answers when `answer()` is called (or at once). */
function tenant(time: ReturnType<typeof manualTime>, o: { manual?: boolean } = {}) {
	const asked: TokenRequest[] = [];
	let gen = 0;
	const waiting: (() => void)[] = [];
	let fail: Error | undefined;
	const ask = async (req: TokenRequest): Promise<TokenGrant> => {
		asked.push(req);
		if (o.manual) await new Promise<void>((r) => waiting.push(r));
		if (fail) throw fail;
		gen++;
		const now = time.clock();
		return sealed({ accessToken: `tok-${gen}`, expiresAt: now + 30_000, renewAt: now + 24_000, generation: gen });
	};
	return {
		ask,
		asked,
		answer: async () => {
			waiting.splice(0).forEach((r) => r());
			await flush();
		},
		failWith: (e: Error | undefined) => (fail = e),
	};
}

/** A tenant on a manual clock and the ClusterTokens that asks it (`random` places the renew timer in its window). */
function started(o: { manual?: boolean; random?: number } = {}) {
	const time = manualTime();
	const t = tenant(time, { manual: o.manual });
	const tokens = new ClusterTokens(t.ask, { clock: time.clock, schedule: time.schedule, random: () => o.random ?? 0 });
	return { time, t, tokens };
}

test('ClusterTokens: one Update for concurrent callers; held until renewAt; renewed in the background from a jittered point; calls never wait while a quarter of the margin is left', async () => {
	const { time, t, tokens } = started({ manual: true, random: 0.5 });
	const first = Array.from({ length: 50 }, () => tokens.getToken());
	await flush();
	await t.answer();
	assert.deepEqual(new Set(await Promise.all(first)), new Set(['tok-1']));
	assert.equal(t.asked.length, 1, 'one Update for 50 concurrent first calls');
	// margin 6 s, guard 1.5 s, window 4.5 s: askAt = renewAt + 0.5 · 4.5 s / 2 = renewAt + 1,125 ms
	assert.equal(guardOf({ expiresAt: 30_000, renewAt: 24_000 }), 1500);
	assert.deepEqual(time.timers(), [25_125]);
	await time.advance(23_000);
	assert.equal(await tokens.getToken(), 'tok-1', 'before renewAt: the held token, no Update');
	await time.advance(1_000);
	assert.equal(await tokens.getToken(), 'tok-1', 'at renewAt, before this worker’s askAt: the held token');
	assert.equal(t.asked.length, 1, 'nothing asked before askAt');
	await time.advance(1_125);
	assert.equal(t.asked.length, 2, 'the timer asks at askAt, with no call');
	await time.advance(3_000);
	assert.equal(
		await tokens.getToken(),
		'tok-1',
		'the Update has not answered, 1.875 s of 30 s left > guard: the held token at once',
	);
	await t.answer();
	assert.equal(await tokens.getToken(), 'tok-2', 'the renewed token once the Update answered');
	assert.equal(t.asked.length, 2);
});

test('ClusterTokens: past expiry − guard a call waits for the Update; an idle tenant is not renewed by the timer; a call after askAt asks', async () => {
	const { time, t, tokens } = started();
	assert.equal(await tokens.getToken(), 'tok-1');
	await t.answer();
	// used: renewed in the background at renewAt (random 0), tok-2 arrives unused
	await time.advance(24_000);
	assert.equal(t.asked.length, 2);
	// tok-2 is never used: its timer does not ask (an idle tenant is not renewed)
	await time.advance(25_000);
	assert.equal(t.asked.length, 2, 'no Update for an unused grant');
	// a call after askAt but before expiry − guard: the held token at once, the Update in the background
	assert.equal(await tokens.getToken(), 'tok-2');
	await flush();
	assert.equal(t.asked.length, 3);
	// tok-3 (unused) 1 s before its expiry (guard 1.5 s): no timer asked; the call waits for a new token
	await time.advance(29_000);
	assert.equal(t.asked.length, 3);
	assert.equal(await tokens.getToken(), 'tok-4');
	assert.equal(t.asked.length, 4);
});

test('ClusterTokens: a rejected token names its generation (an older one does not drop the newer); the same generation back is asked for again later', async () => {
	const { t, tokens } = started();
	assert.equal(await tokens.getToken(), 'tok-1');
	assert.equal(await tokens.getToken({ force: true, rejected: 'tok-1' }), 'tok-2');
	assert.equal(await tokens.getToken({ force: true, rejected: 'tok-1' }), 'tok-2', 'an older rejected token');
	assert.equal(await tokens.getToken({ force: true, rejected: 'tok-2' }), 'tok-3');
	assert.deepEqual(t.asked, [{}, { rejectedGeneration: 1 }, { rejectedGeneration: 2 }]);

	// a workflow whose clock says "not due yet" answers with the same grant: asked again after 1 s, then 2 s
	const same = manualTime();
	const g = sealed({
		accessToken: 'only',
		expiresAt: same.clock() + 30_000,
		renewAt: same.clock() + 24_000,
		generation: 7,
	});
	let n = 0;
	const stuck = new ClusterTokens(
		async () => {
			n++;
			return g;
		},
		{ clock: same.clock, schedule: same.schedule, random: () => 0 },
	);
	assert.equal(await stuck.getToken(), 'only');
	await same.advance(24_000);
	assert.equal(n, 2, 'asked at renewAt');
	await same.advance(999);
	assert.equal(n, 2);
	await same.advance(1);
	assert.equal(n, 3, 'asked again 1 s later');
	await same.advance(2_000);
	assert.equal(n, 4, 'then 2 s later');
});

test('ClusterTokens: a failed background ask is retried; a lost tenant is not asked again in the background and the call past the guard fails loudly', async () => {
	const { time, t, tokens } = started();
	assert.equal(await tokens.getToken(), 'tok-1');
	t.failWith(ApplicationFailure.retryable('no token now', 'TokenUnavailable'));
	await time.advance(24_000);
	assert.equal(t.asked.length, 2);
	await time.advance(1_000);
	assert.equal(t.asked.length, 3, 'retried 1 s later');
	t.failWith(ApplicationFailure.nonRetryable('tenant c1 needs re-install: gone', 'NeedsReinstall'));
	await time.advance(2_000);
	assert.equal(t.asked.length, 4);
	await time.advance(1_000);
	assert.equal(await tokens.getToken(), 'tok-1', 'still valid for 2 s > guard: the held token');
	await time.advance(1_900);
	assert.equal(t.asked.length, 4, 'a lost tenant is not asked again in the background');
	await assert.rejects(tokens.getToken(), /needs re-install/);
	assert.equal(t.asked.length, 5);
});

test('ClusterTokens: askAt spreads over the first half of the window between renewAt and expiry − guard', async () => {
	const starts: number[] = [];
	for (const r of [0, 0.25, 0.5, 0.999]) {
		const { time, tokens } = started({ random: r });
		await tokens.getToken();
		starts.push(time.timers()[0] - 24_000);
	}
	assert.deepEqual(starts, [0, 562, 1125, 2247]);
});

test('tenant worker settings: defaults, and a bad value refused naming the setting', () => {
	assert.equal(tenantCachedWorkflows({}), DEFAULT_TENANT_CACHED_WORKFLOWS);
	assert.equal(tenantCachedWorkflows({ SECSVC_TENANT_CACHED_WORKFLOWS: '64' }), 64);
	for (const bad of ['1', '0', '2.5', 'many', '-3'])
		assert.throws(
			() => tenantCachedWorkflows({ SECSVC_TENANT_CACHED_WORKFLOWS: bad }),
			/^Error: SECSVC_TENANT_CACHED_WORKFLOWS: must be an integer ≥ 2/,
		);
	assert.equal(tenantWorkflowThread({}), DEFAULT_TENANT_WORKFLOW_THREAD);
	assert.equal(tenantWorkflowThread({ SECSVC_TENANT_WORKFLOW_THREAD: 'own' }), 'own');
	assert.equal(tenantWorkflowThread({ SECSVC_TENANT_WORKFLOW_THREAD: 'main' }), 'main');
	assert.throws(
		() => tenantWorkflowThread({ SECSVC_TENANT_WORKFLOW_THREAD: 'shared' }),
		/^Error: SECSVC_TENANT_WORKFLOW_THREAD: must be 'own' or 'main'/,
	);
});

test("tenant mode: a tenant's client carries the worker's guard and the tenant's declared own networks (refused, nothing sent)", async () => {
	const cfg = {
		temporal: { address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'q' },
		api: { baseUrl: 'http://127.0.0.1:9', appId: 'app', secret: 'app-secret-1', tokenKind: 'app' },
		guard: {
			widestPrefix: 16,
			protectedRanges: [{ range: '198.51.100.0/24', source: 'guard.protectedRanges' }],
			ownAddressLookup: false,
		},
	} as unknown as WorkerConfig;
	const mode = tenantMode(cfg, {
		SECSVC_TENANTS: '1',
		SECSVC_PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`,
	});
	assert.ok(mode);
	// the running tenant workflows as a visibility list shows them: site 20001 belongs to customer c1
	const temporal = {
		workflow: {
			list: async function* () {
				yield { workflowId: 'tenant-c1', memo: { sites: ['20001'], protectedRanges: ['203.0.113.16/28'] } };
				yield { workflowId: 'tenant-c2', memo: { sites: ['20003'] } };
			},
		},
	};
	let sent = 0;
	const app = createClient({
		baseUrl: 'http://127.0.0.1:9',
		transport: async () => {
			sent++;
			throw new Error('nothing may be sent');
		},
	});
	const { client, close } = mode.route(app, () => temporal as never);
	try {
		await assert.rejects(
			client.check('applicationProtection.ipBlacklist.add', {
				site_id: '20001',
				domain_port_id: '30001',
				ip_black_list: '198.51.100.9',
			}),
			/ip_black_list: 198\.51\.100\.9 overlaps the protected range 198\.51\.100\.0\/24 \(guard\.protectedRanges\)/,
		);
		const own = { site_id: '20001', domain_port_id: '30001', ip_black_list: '203.0.113.18' };
		await assert.rejects(
			client.check('applicationProtection.ipBlacklist.add', own),
			/ip_black_list: 203\.0\.113\.18 overlaps the protected range 203\.0\.113\.16\/28 \(tenant c1 --protected\): never blocked/,
		);
		assert.equal(sent, 0);
		// another customer's own network is not this one's: c2's block of it passes the guard
		await client.check('applicationProtection.ipBlacklist.add', { ...own, site_id: '20003' });
		assert.equal(sent, 0);
	} finally {
		await close();
	}
});
