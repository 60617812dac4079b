// Tokens against the simulator: single-flight, caching until shortly before expiry, user-token refresh with
// rotation persisted before use, auth-failure → one fresh token and one retry, connect URL + state check.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../../api/client.ts';
import { ApiError } from '../../api/errors.ts';
import { MemoryTokenStore, parseConnectRedirect, randomState } from '../../api/tokens.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createUndiciTransport } from '../../worker/src/service/undici.mts';
import { FileTokenStore } from '../../worker/src/service/tokenStore.mts';
import '../helpers/started.mts'; // a failing test prints what this file started
import { scratchDir } from '../helpers/scratch.mts';

const APP = { appId: 'tok-app', secret: 'tok-secret-value-1' };
let sim: Awaited<ReturnType<typeof startSimulator>>;
const transport = createUndiciTransport();
before(async () => {
	sim = await startSimulator({ ...APP, clock: 'manual', seed: 3 });
});
after(async () => {
	await sim.close();
	await transport.close();
});
const tokenCalls = () =>
	sim.sim.requests().filter((r: { path: string }) => r.path.startsWith('/oauth/') && r.path !== '/oauth/connect')
		.length;

test('100 concurrent calls with no token make exactly one token request', async () => {
	sim.sim.reset?.();
	const before = tokenCalls();
	const client = createClient({ baseUrl: sim.url, transport, credentials: { ...APP, tokenKind: 'app' } });
	const site = sim.sim.firstIds().site_id;
	const results = await Promise.all(
		Array.from({ length: 100 }, () => client.call('dashboard.isUnderAttack', { site_id: site })),
	);
	assert.equal(results.length, 100);
	assert.equal(tokenCalls() - before, 1);
	assert.equal(client.tokens?.requests, 1);
});

test('the token is cached until shortly before expires_in, then renewed', async () => {
	let now = Date.UTC(2026, 0, 1);
	const client = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { ...APP, tokenKind: 'app' },
		now: () => now,
		expirySkewSeconds: 60,
	});
	const site = sim.sim.firstIds().site_id;
	await client.call('dashboard.currentTraffic', { site_id: site });
	await client.call('dashboard.currentTraffic', { site_id: site });
	assert.equal(client.tokens?.requests, 1);
	now += (7200 - 61) * 1000;
	await client.call('dashboard.currentTraffic', { site_id: site });
	assert.equal(client.tokens?.requests, 1, 'still valid 61 s before expiry');
	now += 2000;
	await client.call('dashboard.currentTraffic', { site_id: site });
	assert.equal(client.tokens?.requests, 2, 'renewed inside the skew window');
});

test('a token the service rejects (expired on its clock) forces one fresh token and one retry', async () => {
	const client = createClient({ baseUrl: sim.url, transport, credentials: { ...APP, tokenKind: 'app' } });
	const site = sim.sim.firstIds().site_id;
	await client.call('dashboard.isUnderAttack', { site_id: site });
	sim.sim.expireTokens();
	const before = sim.sim.requests().length;
	await client.call('dashboard.isUnderAttack', { site_id: site });
	const paths = sim.sim
		.requests()
		.slice(before)
		.map((r: { path: string }) => r.path);
	assert.deepEqual(
		paths.map((p: string) => (p.startsWith('/oauth') ? p : 'api')),
		['api', '/oauth/credit/token', 'api'],
	);
	assert.equal(client.tokens?.requests, 2);
});

test('a persistent auth failure is retried once only, then surfaces as ApiError', async () => {
	const client = createClient({ baseUrl: sim.url, transport, credentials: { ...APP, tokenKind: 'app' } });
	const site = sim.sim.firstIds().site_id;
	await client.call('dashboard.isUnderAttack', { site_id: site });
	sim.sim.addFault({ op: 'dashboard.isUnderAttack', kind: 'code', code: 40101, count: 5 });
	await assert.rejects(
		client.call('dashboard.isUnderAttack', { site_id: site }),
		(e: unknown) => e instanceof ApiError && e.code === 40101,
	);
	assert.equal(client.tokens?.requests, 2);
	sim.sim.reset?.();
});

test('user token: connect → code → access + refresh; refresh rotates and the new refresh token is stored before use', async () => {
	const client = createClient({ baseUrl: sim.url, transport });
	const state = randomState();
	assert.equal(state.length, 32);
	const got = await client.connect({
		app_id: APP.appId,
		redirect_uri: 'https://app.example.com/cb',
		state,
		customer_id: sim.sim.firstIds().customer_id,
	});
	assert.equal(got.state, state);
	const tok = (await client.call('authorization.accessToken', {
		app_id: APP.appId,
		secret: APP.secret,
		code: got.code,
	})) as { refresh_token: string };
	assert.ok(tok.refresh_token);
	await assert.rejects(
		client.call('authorization.accessToken', { app_id: APP.appId, secret: APP.secret, code: got.code }),
		(e: unknown) => e instanceof ApiError,
		'codes are single use',
	);

	const dir = scratchDir('tokstore-');
	const file = join(dir, 'tokens.json');
	let now = Date.now();
	const user = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { ...APP, tokenKind: 'user', refreshToken: tok.refresh_token },
		tokenStore: new FileTokenStore(file),
		now: () => now,
	});
	await user.call('customer.get', { customer_id: sim.sim.firstIds().customer_id });
	const stored1 = Object.values(JSON.parse(readFileSync(file, 'utf8')) as Record<string, { refreshToken: string }>)[0];
	assert.notEqual(stored1.refreshToken, tok.refresh_token, 'rotated refresh token saved');
	assert.equal(statSync(file).mode & 0o777, 0o600);
	now += 7200 * 1000;
	await user.call('customer.get', { customer_id: sim.sim.firstIds().customer_id });
	const stored2 = Object.values(JSON.parse(readFileSync(file, 'utf8')) as Record<string, { refreshToken: string }>)[0];
	assert.notEqual(stored2.refreshToken, stored1.refreshToken, 'second rotation saved');
	// The original refresh token no longer works: a client that lost the rotated one would be locked out.
	await assert.rejects(
		client.call('authorization.refreshToken', { app_id: APP.appId, refresh_token: tok.refresh_token }),
		(e: unknown) => e instanceof ApiError,
	);
	// A new process reading the same store goes on with the stored (rotated) token.
	const again = createClient({
		baseUrl: sim.url,
		transport,
		credentials: { ...APP, tokenKind: 'user', refreshToken: tok.refresh_token },
		tokenStore: new FileTokenStore(file),
		now: () => now + 7200 * 1000,
	});
	await again.call('customer.get', { customer_id: sim.sim.firstIds().customer_id });
});

test('the state check rejects a redirect that does not carry our state', () => {
	assert.throws(
		() => parseConnectRedirect('https://app.example.com/cb?code=abc&state=other', 'mine'),
		/state mismatch/,
	);
	assert.throws(() => parseConnectRedirect('https://app.example.com/cb?code=abc', 'mine'), /state mismatch/);
	assert.deepEqual(parseConnectRedirect('https://app.example.com/cb?code=abc&state=mine', 'mine'), {
		code: 'abc',
		state: 'mine',
	});
});

test('memory store keeps one entry per key', async () => {
	const s = new MemoryTokenStore();
	await s.set('k', { accessToken: 'a', expiresAt: 1 });
	assert.equal((await s.get('k'))?.accessToken, 'a');
	assert.equal(await s.get('other'), undefined);
});
