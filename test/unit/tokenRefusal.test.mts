// A token the service refuses with a code we were never told. Against a stand-in vendor that uses codes
// other than the simulator's (test/helpers/hostileVendor.mts), through the real client and undici transport.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, type ClientOptions } from '../../api/client.ts';
import { ApiError } from '../../api/errors.ts';
import { MemoryTokenStore } from '../../api/tokens.ts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { vendorClient, type HostileOptions } from '../helpers/hostileVendor.mts';
import { samples } from '../helpers/samples.mts';

const transport = createUndiciTransport();
after(() => transport.close());

const setup = (vendor: HostileOptions, extra: Partial<ClientOptions> = {}) =>
	vendorClient({ api: 'tokenRefusal', ...vendor }, transport, extra);

const read = { site_id: 'site-1' };

test('40001 "invalid access_token" after the service dropped the token: one fresh token, one retry, success', async () => {
	const { v, client, renewals } = await setup({});
	await client.call('dashboard.isUnderAttack', read);
	v.drop();
	assert.deepEqual(await client.call('dashboard.isUnderAttack', read), { status: 0, bps_size: 0 });
	assert.equal(v.state.tokenRequests, 2);
	assert.equal(v.state.apiRequests, 3);
	assert.deepEqual(renewals(), ['missing', 'refused_message']);
});

test('an unrelated code with a token message renews too; a write refused that way is repeated (refused at authentication)', async () => {
	const { v, client, renewals } = await setup({ refusal: { code: 10086, msg: 'Token has expired' } });
	await client.call('dashboard.isUnderAttack', read);
	v.drop();
	await client.call('applicationProtection.ipBlacklist.add', { ...samples['applicationProtection.ipBlacklist.add'] });
	assert.equal(v.state.tokenRequests, 2);
	assert.deepEqual(renewals(), ['missing', 'refused_message']);
});

test('a validation error (40002 invalid request) is not retried and renews nothing', async () => {
	const { v, client, renewals } = await setup({ result: () => ({ code: 40002, msg: 'invalid request' }) });
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof ApiError && e.code === 40002,
	);
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof ApiError && e.code === 40002,
	);
	assert.equal(v.state.apiRequests, 2);
	assert.equal(v.state.tokenRequests, 1);
	assert.deepEqual(renewals(), ['missing']);
});

test('never more than one renewal per call: a service that refuses every token fails the call after 2 tries', async () => {
	const { v, client } = await setup({});
	await client.call('dashboard.isUnderAttack', read);
	v.drop();
	const real = v.state.issued.push.bind(v.state.issued);
	v.state.issued.push = (t: string) => (v.state.dropped.add(t), real(t)); // every new token is dropped at once
	await assert.rejects(
		client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof ApiError && e.code === 40001,
	);
	assert.equal(v.state.tokenRequests, 2);
	assert.equal(v.state.apiRequests, 3);
});

test('no renewal storm: 25 calls refused at once share one fresh token', async () => {
	const { v, client, renewals } = await setup({});
	await client.call('dashboard.isUnderAttack', read);
	v.drop();
	await Promise.all(Array.from({ length: 25 }, () => client.call('dashboard.isUnderAttack', read)));
	assert.equal(v.state.tokenRequests, 2);
	assert.deepEqual(renewals(), ['missing', 'refused_message']);
});

test('authFailureCodes still adds codes explicitly; a rate-limit code is never a token refusal', async () => {
	const a = await setup({ refusal: { code: 777, msg: 'no' } }, { authFailureCodes: [777] });
	await a.client.call('dashboard.isUnderAttack', read);
	a.v.drop();
	await a.client.call('dashboard.isUnderAttack', read);
	assert.deepEqual(a.renewals(), ['missing', 'refused_code']);
	const b = await setup({ refusal: { code: 42901, msg: 'token bucket empty' } }, { retries: 0 });
	await b.client.call('dashboard.isUnderAttack', read);
	b.v.drop();
	await assert.rejects(
		b.client.call('dashboard.isUnderAttack', read),
		(e: unknown) => e instanceof ApiError && e.code === 42901,
	);
	assert.deepEqual(b.renewals(), ['missing']);
});

test('a token reused from a store: any refusal of its first use renews it for a read, never for a write', async () => {
	const stored = async (v: { url: string }) => {
		const store = new MemoryTokenStore();
		await store.set(`${v.url}|app|app`, { accessToken: 'stale-token-from-store', expiresAt: Date.now() + 3_600_000 });
		return store;
	};
	const r = await setup({ refusal: { code: 40003, msg: 'request refused' } });
	const cr = createClient({
		...r.client.options,
		transport,
		credentials: { appId: 'app', secret: 'vendor-secret-1', tokenKind: 'app' },
		tokenStore: await stored(r.v),
	});
	assert.deepEqual(await cr.call('dashboard.isUnderAttack', read), { status: 0, bps_size: 0 });
	assert.equal(r.v.state.tokenRequests, 1);
	const w = await setup({ refusal: { code: 40003, msg: 'request refused' } });
	const cw = createClient({
		...w.client.options,
		transport,
		credentials: { appId: 'app', secret: 'vendor-secret-1', tokenKind: 'app' },
		tokenStore: await stored(w.v),
	});
	await assert.rejects(
		cw.call('applicationProtection.ipBlacklist.add', { ...samples['applicationProtection.ipBlacklist.add'] }),
		(e: unknown) => e instanceof ApiError && e.code === 40003,
	);
	assert.equal(w.v.state.tokenRequests, 0);
	assert.equal(w.v.state.apiRequests, 1);
});
