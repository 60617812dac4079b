/**
 * The bearer token a worker or the CLI sends to a cluster with Temporal's JWT authorization
 * (worker/src/process/temporalToken.mts), against the real local OpenID Connect provider: the client credentials
 * token carries the client's permissions and the cluster's audience; it is renewed before it expires (3-second
 * tokens: a new one is handed to the connection at ~70% of the life); a wrong secret and bad settings are refused
 * naming the setting.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { startLocalProvider } from '../../worker/src/identity/localProvider.mts';
import { fetchBearer, keepRenewed, tokenSourceFrom } from '../../worker/src/process/temporalToken.mts';

test('client credentials token with permissions; renewed before it expires; refusals named', async () => {
	const p = await startLocalProvider({
		people: {},
		services: [{ id: 'w', secret: 'w-secret-0123456789abcdef', permissions: ['secsvc:write'] }],
		serviceTokenSeconds: 3,
	});
	try {
		const src = {
			issuer: p.issuer,
			clientId: 'w',
			clientSecret: 'w-secret-0123456789abcdef',
			audience: p.serviceAudience,
		};
		const first = await fetchBearer(src);
		const claims = decodeJwt(first.token);
		assert.deepEqual([claims.permissions, claims.aud, claims.sub], [['secsvc:write'], p.serviceAudience, 'w']);
		assert.ok(first.expiresAt - Date.now() <= 3000 && first.expiresAt - Date.now() > 2000);
		const given: { token: string; at: number }[] = [];
		const t0 = Date.now();
		const stop = keepRenewed(src, first, (token) => void given.push({ token, at: Date.now() - t0 }));
		await new Promise((r) => setTimeout(r, 4500));
		stop();
		assert.ok(given.length >= 1, 'renewed at least once in 4.5 s of 3 s tokens');
		assert.notEqual(given[0].token, first.token);
		assert.ok(given[0].at >= 1500 && given[0].at < 3000, `renewed before expiry (at ${given[0].at} ms)`);
		await assert.rejects(
			fetchBearer({ ...src, clientSecret: 'wrong' }),
			/^Error: Temporal token: the provider refused client w \(invalid_client/,
		);
		await assert.rejects(
			fetchBearer({ ...src, issuer: 'http://127.0.0.1:1' }),
			/Temporal token: SECSVC_TEMPORAL_TOKEN_ISSUER http:\/\/127\.0\.0\.1:1 did not answer/,
		);
	} finally {
		await p.close();
	}
	assert.equal(tokenSourceFrom({}), undefined);
	assert.throws(
		() => tokenSourceFrom({ SECSVC_TEMPORAL_TOKEN_ISSUER: 'http://x' }),
		/SECSVC_TEMPORAL_TOKEN_CLIENT_ID: is required/,
	);
	assert.throws(
		() => tokenSourceFrom({ SECSVC_TEMPORAL_TOKEN_ISSUER: 'http://x', SECSVC_TEMPORAL_TOKEN_CLIENT_ID: 'w' }),
		/SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET: is required/,
	);
});
