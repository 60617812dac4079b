// The credential's Test button and what a node run reports when the credential is wrong, through n8n's own code
// (the node's testedBy function in n8n-core's CredentialTestContext with n8n's request helper; node runs through
// n8n-core's WorkflowExecute and n8n's CredentialsHelper), against the simulator.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getOperation } from '../../api/catalog/index.ts';
import { startSimulator } from '../../simulator/index.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import { devServerWithDb } from '../temporal/helpers.mts';
import { chain, ensureBuilt, ssNode, startRunner, toNodeParameters, type Runner } from './inprocess-driver.mts';

const APP = { appId: 'cred-test-app', secret: 'cred-test-secret-value-42' };
const WRONG = 'not-the-secret-0000';

let sim: Awaited<ReturnType<typeof startSimulator>>;
let runner: Runner;
let ids: ReturnType<typeof sim.sim.firstIds>;

before(async () => {
	ensureBuilt();
	sim = await startSimulator({ port: 0, ...APP, seed: 5, clock: 'manual', httpFilterProcessingMs: 0 });
	ids = sim.sim.firstIds();
	runner = await startRunner();
});

after(async () => {
	await runner?.close();
	await sim?.close();
});

const cred = (over: Record<string, unknown> = {}) => ({
	baseUrl: sim.url,
	appId: APP.appId,
	secret: APP.secret,
	grantType: 'app',
	authFailureCodes: '40101',
	accessToken: '',
	expiresAt: 0,
	...over,
});

/** Simulator log entries after `mark` (sequence number) for one operation. */
function calls(mark: number, opId: string) {
	return sim.sim.requests().filter((e) => e.seq > mark && e.opId === opId);
}
const lastSeq = () => sim.sim.requests().at(-1)?.seq ?? 0;

/** A valid app token obtained directly (what n8n would have cached in the credential). */
async function cachedToken(): Promise<string> {
	const direct = createApiClient({ baseUrl: sim.url, credentials: { ...APP, tokenKind: 'app' } });
	try {
		return (await direct.call('authorization.appToken', { app_id: APP.appId, secret: APP.secret })).access_token;
	} finally {
		await direct.close();
	}
}

test('Test with the right App ID and Secret: a new token is requested with the entered values and used', async () => {
	const mark = lastSeq();
	const r = await runner.testCredential(cred());
	assert.equal(r.status, 'OK', r.message);
	assert.match(r.message, /new app token for App ID "cred-test-app"/);
	assert.equal(calls(mark, 'authorization.appToken').length, 1);
	assert.equal(calls(mark, 'customer.list').length, 1, 'the new token is used for a real read');
});

test('defect 1: a wrong Secret fails even when the credential holds a valid cached token', async () => {
	const token = await cachedToken();
	const mark = lastSeq();
	const r = await runner.testCredential(cred({ secret: WRONG, accessToken: token, expiresAt: Date.now() + 3_600_000 }));
	assert.equal(r.status, 'Error');
	assert.match(r.message, /secret: does not match the app/, "the service's own message");
	assert.match(r.message, /code 40102/);
	assert.match(r.message, /Check the App ID and Secret/);
	assert.doesNotMatch(r.message, new RegExp(WRONG));
	const tokenCalls = calls(mark, 'authorization.appToken');
	assert.equal(tokenCalls.length, 1, 'a new token was asked for');
	assert.equal(calls(mark, 'customer.list').length, 0, 'the cached token was never used');
});

test('defect 2: a correct credential whose stored token has expired still passes', async () => {
	const token = await cachedToken();
	sim.sim.advance(7300); // the service's tokens live 7200 s
	const r = await runner.testCredential(cred({ accessToken: token, expiresAt: Date.now() - 1000 }));
	assert.equal(r.status, 'OK', r.message);
	// And a stored token the service has revoked (expiry still in the future for n8n) does not matter either.
	const stale = await cachedToken();
	sim.sim.expireTokens();
	const r2 = await runner.testCredential(cred({ accessToken: stale, expiresAt: Date.now() + 3_600_000 }));
	assert.equal(r2.status, 'OK', r2.message);
});

test("defect 3: a new credential with a wrong Secret shows the service's message, not a bare code", async () => {
	const r = await runner.testCredential(cred({ secret: WRONG }));
	assert.equal(r.status, 'Error');
	assert.notEqual(r.message.trim(), '40102');
	assert.match(r.message, /secret: does not match the app \(code 40102\)/);
	const wrongApp = await runner.testCredential(cred({ appId: 'no-such-app' }));
	assert.equal(wrongApp.status, 'Error');
	assert.match(wrongApp.message, /App ID "no-such-app"/);
});

test('a wrong Base URL says the service could not be reached', async () => {
	const r = await runner.testCredential(cred({ baseUrl: 'http://127.0.0.1:9' }));
	assert.equal(r.status, 'Error');
	assert.match(r.message, /Could not reach the service at http:\/\/127\.0\.0\.1:9/);
	const r2 = await runner.testCredential(cred({ baseUrl: 'api.example.com' }));
	assert.equal(r2.status, 'Error');
	assert.match(r2.message, /Base URL must start with https:\/\//);
});

test('user tokens: the refresh token is never used by the test, and the message says what was checked', async () => {
	const { access_token, refresh_token } = sim.sim.issueUserTokens(ids.customer_id);
	const user = { grantType: 'user', refreshToken: refresh_token, secret: '' };
	let mark = lastSeq();
	const withToken = await runner.testCredential(
		cred({ ...user, accessToken: access_token, expiresAt: Date.now() + 3_600_000 }),
	);
	assert.equal(withToken.status, 'OK', withToken.message);
	assert.match(withToken.message, /stored user access token works/);
	assert.match(withToken.message, /refresh token was not used/);
	assert.equal(calls(mark, 'authorization.refreshToken').length, 0);
	assert.equal(calls(mark, 'customer.list').length, 1);

	mark = lastSeq();
	const noToken = await runner.testCredential(cred({ ...user }));
	assert.equal(noToken.status, 'OK', noToken.message);
	assert.match(noToken.message, /refresh token was not tried/);
	assert.equal(calls(mark, 'authorization.refreshToken').length, 0, 'never rotate the refresh token in a test');
	// The refresh token still works afterwards (it was not burnt).
	const direct = createApiClient({
		baseUrl: sim.url,
		credentials: { appId: APP.appId, secret: APP.secret, tokenKind: 'app' },
	});
	try {
		const renewed = await direct.call('authorization.refreshToken', { app_id: APP.appId, refresh_token });
		assert.ok(renewed.access_token);
	} finally {
		await direct.close();
	}
});

test("defect 3: a node run with a wrong Secret reports the credential and the service's message, with one token call", async () => {
	await runner.setCredential('cred-wrong', 'Security Service (wrong secret)', cred({ secret: WRONG }));
	const op = getOperation('applicationProtection.ipBlacklist.get');
	const mark = lastSeq();
	const res = await runner.run(
		chain('wrong secret', [
			ssNode(
				'Get the blocked IPs',
				toNodeParameters(op, { site_id: ids.site_id, domain_port_id: ids.domain_port_id }),
				{ credId: 'cred-wrong' },
			),
		]),
	);
	assert.equal(res.status, 'error');
	const err = res.runData['Get the blocked IPs']?.[0]?.error ?? res.error;
	assert.ok(err, 'the node reports an error');
	assert.doesNotMatch(err.message, /network failure|invalid or could not be processed/i);
	assert.match(err.message, /refused the credential: secret: does not match the app \(code 40102\)/);
	assert.equal(
		calls(mark, 'authorization.appToken').length,
		1,
		'exactly one token call, no retries of a refused secret',
	);
	assert.equal(calls(mark, 'applicationProtection.ipBlacklist.get').length, 0);
});

test('defect 4: IP Blacklist › Block without an address fails in the node and sends nothing', async () => {
	await runner.setCredential('cred-ok', 'Security Service', cred());
	const op = getOperation('applicationProtection.ipBlacklist.add');
	assert.equal(op.fields.find((f) => f.name === 'ip_black_list')?.required, true);
	const remove = getOperation('applicationProtection.ipBlacklist.remove');
	assert.equal(remove.fields.find((f) => f.name === 'ip_black_list')?.required, true);
	const mark = lastSeq();
	const params = {
		resource: 'applicationProtection.ipBlacklist',
		operation: 'add',
		site_id: ids.site_id,
		domain_port_id: ids.domain_port_id,
		ip_black_list: '',
	};
	// Left empty: n8n itself refuses to run the workflow (the field is required, the editor marks it).
	await assert.rejects(
		runner.run(chain('block nothing', [ssNode('Block IP addresses or ranges', params, { credId: 'cred-ok' })])),
		/Parameter "IP Address or Range" is required/,
	);
	// An expression that yields nothing passes n8n's check: the node refuses it and sends nothing.
	const empty = { ...params, ip_black_list: '={{ $json.missing ?? "" }}' };
	const res = await runner.run(
		chain('block nothing', [ssNode('Block IP addresses or ranges', empty, { credId: 'cred-ok' })]),
	);
	assert.equal(res.status, 'error');
	const err = res.runData['Block IP addresses or ranges']?.[0]?.error ?? res.error;
	assert.match(err?.message ?? '', /^IP Blacklist › Block: IP Address or Range is required\. Nothing was sent\./);
	assert.equal(calls(mark, 'applicationProtection.ipBlacklist.add').length, 0, 'no POST left');
	// The same through Remove.
	const res2 = await runner.run(
		chain('unblock nothing', [ssNode('Unblock', { ...empty, operation: 'remove' }, { credId: 'cred-ok' })]),
	);
	assert.match(res2.runData.Unblock?.[0]?.error?.message ?? '', /IP Addresses or Ranges is required/);
	assert.equal(calls(mark, 'applicationProtection.ipBlacklist.remove').length, 0);
	// With an address the block goes through (the field is the first, required one of the operation).
	const ok = await runner.run(
		chain('block one', [ssNode('Block', { ...params, ip_black_list: '203.0.113.7' }, { credId: 'cred-ok' })]),
	);
	assert.equal(ok.status, 'success', JSON.stringify(ok.error));
	const sent = calls(mark, 'applicationProtection.ipBlacklist.add');
	assert.equal(sent.length, 1);
	assert.equal(sent[0].code, 0);
});

test('issue 40: Block on an item Fetch Test Event marked refuses and sends nothing; Write on Test Events lets it through', async () => {
	await runner.setCredential('cred-ok', 'Security Service', cred());
	const params = {
		resource: 'applicationProtection.ipBlacklist',
		operation: 'add',
		site_id: ids.site_id,
		domain_port_id: ids.domain_port_id,
		ip_black_list: '={{ $json.attacking_ranges }}',
	};
	const testItem = { test_event: true, site_id: ids.site_id, attacking_ranges: ['203.0.113.40'] };
	const mark = lastSeq();
	const refused = await runner.run(chain('test event', [ssNode('Block', params, { credId: 'cred-ok' })], [testItem]));
	assert.equal(refused.status, 'error');
	assert.match(
		refused.runData.Block?.[0]?.error?.message ?? '',
		/^IP Blacklist › Block: this item is the trigger's test event .*Nothing was sent\. To write on it anyway, turn on Write on Test Events\.$/,
	);
	assert.equal(calls(mark, 'applicationProtection.ipBlacklist.add').length, 0, 'nothing was blocked');
	const allowed = await runner.run(
		chain(
			'test event allowed',
			[ssNode('Block', { ...params, writeOnTestEvent: true }, { credId: 'cred-ok' })],
			[testItem],
		),
	);
	assert.equal(allowed.status, 'success', JSON.stringify(allowed.error));
	assert.deepEqual(
		calls(mark, 'applicationProtection.ipBlacklist.add').map(
			(c) => (c.body as { ip_black_list?: string }).ip_black_list,
		),
		['203.0.113.40-203.0.113.40'],
	);
	// A read on the same item is never stopped.
	const read = await runner.run(
		chain(
			'test event read',
			[
				ssNode('Read', toNodeParameters(getOperation('dashboard.isUnderAttack'), { site_id: ids.site_id }), {
					credId: 'cred-ok',
				}),
			],
			[testItem],
		),
	);
	assert.equal(read.status, 'success', JSON.stringify(read.error));
});

test('issue 40: Unblock says what it removed in words (no JSON); Block on an unknown site names Site ID, not an operation id', async () => {
	await runner.setCredential('cred-ok', 'Security Service', cred());
	const at = { site_id: ids.site_id, domain_port_id: ids.domain_port_id };
	const block = await runner.run(
		chain('block', [
			ssNode(
				'Block',
				toNodeParameters(getOperation('applicationProtection.ipBlacklist.add'), {
					...at,
					ip_black_list: '203.0.113.50',
				}),
				{ credId: 'cred-ok' },
			),
		]),
	);
	assert.equal(block.status, 'success', JSON.stringify(block.error));
	const remove = toNodeParameters(getOperation('applicationProtection.ipBlacklist.remove'), {
		...at,
		ip_black_list: ['203.0.113.50-203.0.113.50'],
	});
	assert.ok(
		'ip_black_list_entries' in remove,
		`Unblock's list has its own parameter name: ${Object.keys(remove).join(', ')}`,
	);
	const unblock = await runner.run(chain('unblock', [ssNode('Unblock', remove, { credId: 'cred-ok' })]));
	assert.equal(unblock.status, 'success', JSON.stringify(unblock.error));
	const summary = String((unblock.runData.Unblock?.[0]?.items?.[0] as { summary?: string } | undefined)?.summary ?? '');
	assert.match(summary, /203\.0\.113\.50-203\.0\.113\.50/);
	assert.doesNotMatch(summary, /[[\]"{}]/, summary);

	const mark = lastSeq();
	const unknown = await runner.run(
		chain('unknown site', [
			ssNode(
				'Block',
				toNodeParameters(getOperation('applicationProtection.ipBlacklist.add'), {
					site_id: '99999',
					domain_port_id: ids.domain_port_id,
					ip_black_list: '203.0.113.51',
				}),
				{ credId: 'cred-ok' },
			),
		]),
	);
	const message = unknown.runData.Block?.[0]?.error?.message ?? '';
	assert.match(message, /^IP Blacklist › Block: the service refused the request: Site ID: site '99999' does not exist/);
	assert.doesNotMatch(message, /dashboard\.|ddosEvents|site_id/, message);
	assert.equal(calls(mark, 'applicationProtection.ipBlacklist.add').length, 0);
});

test("issue 40: the Temporal API credential's Test names the gRPC port, the namespace and a missing scheme in words (real dev server)", async () => {
	const dir = mkdtempSync(join(tmpdir(), 'secsvc-temporal-cred-'));
	const srv = await devServerWithDb(join(dir, 'temporal.db'));
	try {
		const temporal = (address: string, namespace = 'default') => ({ address, namespace, apiKey: '' });
		const ok = await runner.testCredential(temporal(srv.http), 'temporalApi');
		assert.equal(ok.status, 'OK', ok.message);
		const grpc = await runner.testCredential(temporal(`http://${srv.address}`), 'temporalApi');
		assert.equal(grpc.status, 'Error');
		assert.match(
			grpc.message,
			/^HTTP API Address: this port does not answer HTTP — it is probably Temporal's gRPC port/,
		);
		assert.doesNotMatch(grpc.message, /HPE_|Parse Error/);
		const ns = await runner.testCredential(temporal(srv.http, 'no-such-namespace'), 'temporalApi');
		assert.match(ns.message, /^Namespace: 'no-such-namespace' does not exist on this server$/);
		const scheme = await runner.testCredential(temporal(srv.http.replace('http://', '')), 'temporalApi');
		assert.match(scheme.message, /^HTTP API Address: enter the full address with http:\/\/ or https:\/\//);
	} finally {
		await srv.stop();
		rmSync(dir, { recursive: true, force: true });
	}
});
