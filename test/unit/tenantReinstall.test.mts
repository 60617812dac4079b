// The renewal's automatic re-install (workflows/tenant/activitiesRenew.mts, SECSVC_TENANT_REINSTALL): which refusals
// it re-installs, what it sends, and what a refused flow leaves. The activity runs in a mock activity context (its
// earlier attempt's record given as heartbeat details) against the simulator, through the real client.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { startSimulator, type RunningSimulator } from '../../simulator/index.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { createTenantActivities } from '../../workflows/tenant/activitiesRenew.mts';
import { connectForCode, exchangeCode } from '../../workflows/tenant/client.mts';
import { RENEW_ACTIVITY, sealed, type ReinstallPolicy, type RenewResult } from '../../workflows/tenant/shared.mts';
import { reinstallPolicy } from '../../worker/src/process/tenantWorker.mts';

const APP_ID = 'app-reinstall';
const SECRET = 'secret-reinstall';
const REDIRECT = 'https://install.app.example.com/installed';
let sim: RunningSimulator;
let app: ReturnType<typeof createApiClient>;
let customerId: string;

before(async () => {
	sim = await startSimulator({ port: 0, appId: APP_ID, secret: SECRET, registeredHost: 'https://app.example.com' });
	app = createApiClient({ baseUrl: sim.url, credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' } });
	customerId = sim.sim.snapshot().sites[0].customer_id;
});
after(async () => {
	await app.close();
	await sim.close();
});

/** A refresh token the service already rotated away (its answer "lost"): refused from now on. */
async function rotatedAway(): Promise<string> {
	const t = await exchangeCode(
		app,
		{ appId: APP_ID, secret: SECRET },
		await connectForCode(app, { appId: APP_ID, redirectUri: REDIRECT }, { customerId }),
	);
	await app.call('authorization.refreshToken', { app_id: APP_ID, refresh_token: t.refreshToken });
	return t.refreshToken;
}

async function renew(
	policy: ReinstallPolicy | undefined,
	earlier: object | undefined,
	o: { connect?: boolean; customer?: string } = {},
) {
	const acts = createTenantActivities(app, { appId: APP_ID, secret: SECRET, ...(policy ? { reinstall: policy } : {}) });
	const input = sealed({
		customerId: o.customer ?? customerId,
		kind: 'user' as const,
		refreshToken: await rotatedAway(),
		...(o.connect === false ? {} : { connect: { redirectUri: REDIRECT } }),
	});
	sim.sim.clearRequests();
	const env = new MockActivityEnvironment(earlier ? { heartbeatDetails: earlier } : {});
	try {
		return { result: (await env.run(acts[RENEW_ACTIVITY], input)) as RenewResult, ops: ops() };
	} catch (e) {
		return { error: e as ApplicationFailure, ops: ops() };
	}
}
const ops = () => sim.sim.requests().map((r) => `${r.opId} ${r.code}`);
const REFUSED = 'authorization.refreshToken 40103';
const FLOW = ['authorization.connect 0', 'authorization.accessToken 0'];

test('lost-answer (default): a refusal after an attempt that was sending is re-installed; the new refresh token works', async () => {
	const r = await renew(undefined, { sending: 'refresh' });
	assert.deepEqual(r.ops, [REFUSED, ...FLOW]);
	assert.match(r.result?.reinstalled ?? '', /its answer was lost/);
	const next = await app.call('authorization.refreshToken', {
		app_id: APP_ID,
		refresh_token: r.result?.refreshToken as string,
	});
	assert.ok(next);
});

test('lost-answer: a refusal no attempt of ours explains (no earlier record) stays needs-reinstall, nothing more sent', async () => {
	const r = await renew('lost-answer', undefined);
	assert.deepEqual(r.ops, [REFUSED]);
	assert.equal(r.error?.type, 'RefreshRejected');
	assert.equal(r.error?.nonRetryable, true);
});

test('off: never; always: also a refusal no attempt explains; a tenant without connect parameters: never', async () => {
	assert.deepEqual((await renew('off', { sending: 'refresh' })).ops, [REFUSED]);
	const always = await renew('always', undefined);
	assert.deepEqual(always.ops, [REFUSED, ...FLOW]);
	assert.ok(always.result?.reinstalled);
	const bare = await renew('always', { sending: 'refresh' }, { connect: false });
	assert.deepEqual(bare.ops, [REFUSED]);
	assert.equal(bare.error?.type, 'RefreshRejected');
});

test('an attempt after one that began the re-install goes on with it, without sending the refused token again', async () => {
	const r = await renew('lost-answer', { sending: 'reinstall', why: 'refused earlier' });
	assert.deepEqual(r.ops, FLOW);
	assert.equal(r.result?.reinstalled, 'refused earlier');
});

test('the service refusing the flow leaves the tenant needs-reinstall naming both refusals', async () => {
	const r = await renew('always', undefined, { customer: 'no-such-customer' });
	assert.equal(r.error?.type, 'RefreshRejected');
	assert.match(
		r.error?.message ?? '',
		/automatic re-install was refused: customer_id: customer 'no-such-customer' does not exist/,
	);
});

test('SECSVC_TENANT_REINSTALL: default lost-answer, a bad value named', () => {
	assert.equal(reinstallPolicy({}), 'lost-answer');
	assert.equal(reinstallPolicy({ SECSVC_TENANT_REINSTALL: 'always' }), 'always');
	assert.throws(
		() => reinstallPolicy({ SECSVC_TENANT_REINSTALL: 'yes' }),
		/SECSVC_TENANT_REINSTALL: must be one of off, lost-answer, always/,
	);
});

test('a refresh with no answer in time fails retryable (the same renewal tries again and knows the loss is ours)', async () => {
	const slow = createApiClient({
		baseUrl: sim.url,
		credentials: { appId: APP_ID, secret: SECRET, tokenKind: 'app' },
		timeoutMs: 300,
		retries: 0,
	});
	try {
		const acts = createTenantActivities(slow, { appId: APP_ID, secret: SECRET });
		const input = sealed({ customerId, kind: 'user' as const, refreshToken: await rotatedAway() });
		sim.sim.addFault({ op: 'authorization.refreshToken', kind: 'lateAnswer', delayMs: 1000 });
		const e = await new MockActivityEnvironment().run(acts[RENEW_ACTIVITY], input).catch((x: ApplicationFailure) => x);
		assert.equal((e as ApplicationFailure).type, 'RefreshOutcomeUnknown');
		assert.equal((e as ApplicationFailure).nonRetryable, false);
	} finally {
		await slow.close();
	}
});
