// Refused tokens in n8n: the Security Service node against a vendor stand-in that refuses a dropped token with codes other
// than ours (test/helpers/hostileVendor.mts), through n8n-core's WorkflowExecute and CredentialsHelper (in-process
// runner on the cached n8n 2.40.7).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getOperation } from '../../api/catalog/index.ts';
import { startHostileVendor, type HostileOptions } from '../helpers/hostileVendor.mts';
import { chain, ensureBuilt, ssNode, startRunner, toNodeParameters, type Runner } from './inprocess-driver.mts';

let runner: Runner;
const vendors: Array<{ close(): Promise<void> }> = [];

before(async () => {
	ensureBuilt();
	runner = await startRunner();
});
after(async () => {
	await runner?.close();
	for (const v of vendors) await v.close();
});

let n = 0;
async function vendorWithCredential(o: HostileOptions) {
	const v = await startHostileVendor({ api: 'tokenRefusal', ...o });
	vendors.push(v);
	const credId = `cred-vendor-${++n}`;
	await runner.setCredential(credId, 'Vendor', {
		baseUrl: v.url,
		appId: 'vendor-app',
		secret: 'vendor-secret-value-1',
		grantType: 'app',
		authFailureCodes: '40101',
		accessToken: '',
		expiresAt: 0,
	});
	const run = () =>
		runner.run(
			chain('is under attack', [
				ssNode('Is under attack', toNodeParameters(getOperation('dashboard.isUnderAttack'), { site_id: 'site-1' }), {
					credId,
					continueOnFail: true,
				}),
			]),
		);
	return { v, credId, run };
}

const output = (res: Awaited<ReturnType<Runner['run']>>) => res.runData['Is under attack']?.[0]?.items?.[0] ?? {};

for (const refusal of [
	{ code: 40001, msg: 'invalid access_token' },
	{ code: 10086, msg: 'Token has expired' },
])
	test(`the service drops the token and answers ${refusal.code} "${refusal.msg}": the run renews once and succeeds`, async () => {
		const { v, credId, run } = await vendorWithCredential({ refusal });
		const first = await run();
		assert.equal(first.status, 'success');
		assert.equal(output(first).status, 0, JSON.stringify(output(first)));
		assert.equal(v.state.tokenRequests, 1);
		const stored = (await runner.getCredential(credId))?.accessToken;
		v.drop();
		const second = await run();
		assert.equal(second.status, 'success', JSON.stringify(second.error ?? output(second)));
		assert.equal(output(second).status, 0);
		assert.equal(output(second).error, undefined);
		assert.equal(v.state.tokenRequests, 2, 'one fresh token');
		assert.equal(v.state.apiRequests, 3, 'the refused request and one retry');
		assert.notEqual((await runner.getCredential(credId))?.accessToken, stored, 'n8n saved the renewed token');
	});

test('a validation error (40002 invalid request) is not retried and renews nothing', async () => {
	const { v, run } = await vendorWithCredential({ result: () => ({ code: 40002, msg: 'invalid request' }) });
	for (let i = 0; i < 2; i++) {
		const res = await run();
		assert.match(String(output(res).error ?? ''), /40002/);
	}
	assert.equal(v.state.apiRequests, 2);
	assert.equal(v.state.tokenRequests, 1);
});
