/**
 * `--login device` (worker/src/identity/login.mts `deviceLogin`, RFC 8628) against a real OpenID Connect provider on
 * loopback (test/helpers/oidcProvider.mts: the certified oidc-provider package): the CLI's line names the address
 * and the code, the person confirms there, the ID token comes back and the worker's verifier accepts it; a login for
 * a gate whose nonce the provider leaves out is named before anything is sent; nobody confirming ends in a clear error
 * when the time is up; a client the provider does not know is refused with the provider's words.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deviceLogin } from '../../worker/src/identity/login.mts';
import { createVerifier } from '../../worker/src/identity/verify.mts';
import type { IdentityConfig } from '../../worker/src/identity/config.mts';
import { startProvider, type TestProvider } from '../helpers/oidcProvider.mts';

const PEOPLE = { alice: { email: 'alice@soc.example', groups: ['soc-oncall'] } };
let idp: TestProvider;

before(async () => {
	idp = await startProvider(PEOPLE);
});
after(async () => idp?.close());

const config = (): IdentityConfig => ({
	issuer: idp.issuer,
	audience: ['secsvc-cli'],
	clientId: 'secsvc-cli',
	identityClaim: 'email',
	groupsClaim: 'groups',
	clockSkewSeconds: 30,
	jwksCacheSeconds: 600,
	approverGroups: ['soc-oncall'],
	approvers: [],
	tenants: {},
});

async function loginAsAlice(nonce?: string): Promise<{ token: string; told: string[] }> {
	const told: string[] = [];
	let confirming: Promise<void> | undefined;
	const login = deviceLogin({
		issuer: idp.issuer,
		clientId: 'secsvc-cli',
		...(nonce ? { nonce } : {}),
		maxSeconds: 60,
		tell: (line) => {
			told.push(line);
			const m = /^Open (\S+) and confirm the code (\S+)$/.exec(line);
			if (m) confirming = idp.confirmDevice(m[1], 'alice');
		},
	});
	try {
		return { token: await login, told };
	} finally {
		await confirming;
	}
}

test("device login (the starter's proof): the address and code are shown, the person confirms, the worker verifies the ID token", async () => {
	const { token, told } = await loginAsAlice();
	assert.equal(told.length, 1, told.join('\n'));
	const [, uri, code] = /^Open (\S+) and confirm the code (\S+)$/.exec(told[0]) ?? [];
	assert.ok(uri?.startsWith(`${idp.issuer}/`), told[0]);
	assert.ok(code && code.length >= 8, told[0]);
	const who = await createVerifier(config())(token);
	assert.deepEqual(
		[who.verified, who.name, who.claim, who.groups],
		['oidc', 'alice@soc.example', 'email', ['soc-oncall']],
	);
});

test("device login for a gate: a provider that leaves the gate's nonce out is named at once, with the way that works", async () => {
	// oidc-provider, like many, does not carry `nonce` from the device authorization into the ID token: the runbook
	// would refuse the token as bound to another gate, and the person would log in again and again the same way.
	await assert.rejects(
		loginAsAlice('gate-nonce-7f3a9c21'),
		/^ValidationError: login: the provider left the gate's nonce out of the device-code login's ID token, so the runbook would refuse it: log in with --login browser \(the default\)$/,
	);
});

test('device login: nobody confirms: a clear error when the time is up; an unknown client: the provider says why', async () => {
	const t0 = Date.now();
	await assert.rejects(
		deviceLogin({ issuer: idp.issuer, clientId: 'secsvc-cli', maxSeconds: 2, tell: () => {} }),
		(e: Error) => {
			assert.equal(e.message, 'login: the code expired before the login was confirmed');
			return true;
		},
	);
	assert.ok(Date.now() - t0 < 15_000, 'gave up within its time (one poll interval past it at most)');
	await assert.rejects(
		deviceLogin({ issuer: idp.issuer, clientId: 'no-such-client', maxSeconds: 2, tell: () => {} }),
		/^ValidationError: login: the provider refused the device login \(invalid_client/,
	);
});
