// A hostile or broken service: the client (undici transport) against the hostile vendor stand-in —
// every answer bounded in size and total time, token requests per call bounded.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ClientOptions } from '../../api/client.ts';
import { TransportError } from '../../api/errors.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { vendorClient, type HostileOptions } from '../helpers/hostileVendor.mts';

const transport = createUndiciTransport();
after(() => transport.close());

const setup = (vendor: HostileOptions, extra: Partial<ClientOptions> = {}) => vendorClient(vendor, transport, extra);
const read = { site_id: 'site-1' };

for (const api of ['endless', 'huge'] as const)
	test(`an ${api} answer stops at maxResponseBytes: TransportError too_large, not repeated, memory bounded`, async () => {
		const { v, client } = await setup({ api }, { maxResponseBytes: 4 * 1024 * 1024, timeoutMs: 20_000 });
		const rss0 = process.memoryUsage().rss;
		const t0 = Date.now();
		await assert.rejects(
			client.call('dashboard.isUnderAttack', read),
			(e: unknown) => e instanceof TransportError && e.kind === 'too_large',
		);
		assert.ok(Date.now() - t0 < 10_000, `${Date.now() - t0} ms`);
		assert.equal(v.state.apiRequests, 1);
		assert.ok(v.state.bytesSent < 64 * 1024 * 1024, `${v.state.bytesSent} bytes sent`);
		assert.ok(process.memoryUsage().rss - rss0 < 150 * 1024 * 1024);
	});

test('a body drip-fed at 1 byte/s ends within the TOTAL timeout', async () => {
	const { client } = await setup({ api: 'drip' }, { timeoutMs: 2_000, retries: 0 });
	const t0 = Date.now();
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof TransportError && e.kind === 'timeout',
	);
	const ms = Date.now() - t0;
	assert.ok(ms >= 1_900 && ms < 4_000, `${ms} ms`);
});

for (const token of ['hang', '502'] as const)
	test(`a token endpoint that ${token === 'hang' ? 'hangs' : 'answers 502'}: at most 2 token requests per call, within the budget`, async () => {
		const { v, client } = await setup({ token }, { timeoutMs: 400, retries: 3 });
		const t0 = Date.now();
		await assert.rejects(
			client.call('dashboard.isUnderAttack', read),
			(e: unknown) => e instanceof TransportError && e.opId === 'authorization.appToken',
		);
		assert.equal(v.state.tokenRequests, 2);
		assert.equal(v.state.apiRequests, 0);
		assert.ok(Date.now() - t0 < 1_500, `${Date.now() - t0} ms`);
	});

// Issue 43 item 2: with `callTimeoutMs` (the n8n nodes' bound) a call ends within it, all attempts and token requests
// included, and a token that was never refused is not asked for again by the next attempt.
const BOUND = 3_000;
for (const api of ['drip', 'hang'] as const)
	test(`a read against a service that ${api === 'drip' ? 'drip-feeds 1 byte/s' : 'never answers'}: the call ends within callTimeoutMs, one token request`, async () => {
		const { v, client } = await setup({ api }, { timeoutMs: BOUND, callTimeoutMs: BOUND, retries: 2 });
		const t0 = Date.now();
		await assert.rejects(
			client.call('dashboard.isUnderAttack', read),
			(e: unknown) => e instanceof TransportError && e.kind === 'timeout',
		);
		const ms = Date.now() - t0;
		assert.ok(ms >= BOUND - 100 && ms < BOUND + 1_000, `${ms} ms`);
		assert.equal(v.state.tokenRequests, 1);
		assert.equal(v.state.apiRequests, 1, 'no attempt left after the first one spent the bound');
	});

test('a token endpoint that hangs: the token step ends within what is left of callTimeoutMs', async () => {
	// alone, the token step may take 2 requests of timeoutMs each (tokenBudgetMs, twice timeoutMs)
	const { v, client } = await setup({ token: 'hang' }, { timeoutMs: 2_500, callTimeoutMs: BOUND, retries: 2 });
	const t0 = Date.now();
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof TransportError && e.opId === 'authorization.appToken' && e.kind === 'timeout',
	);
	const ms = Date.now() - t0;
	assert.ok(ms >= BOUND - 100 && ms < BOUND + 1_000, `${ms} ms`);
	assert.equal(v.state.tokenRequests, 2);
	assert.equal(v.state.apiRequests, 0);
});

test('connections reset on every attempt: each attempt reuses the one token, all within callTimeoutMs', async () => {
	const { v, client } = await setup({ api: 'reset' }, { timeoutMs: BOUND, callTimeoutMs: BOUND, retries: 2 });
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof TransportError && e.kind === 'network',
	);
	assert.equal(v.state.apiRequests, 3);
	assert.equal(v.state.tokenRequests, 1);
});
