/**
 * Temporal's client configuration (worker/src/process/temporalEnv.mts, config.mts, tlsProbe.mts) without a Temporal server:
 * which layer wins (TOML profile < SECSVC_CONFIG JSON < environment), the TLS files checked before connecting (each
 * bad one named by the setting that gave it), and the handshake probe that names the setting after a failed
 * connection — against node:tls servers with certificates made here with openssl.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { createServer as netServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createServer as tlsServer } from 'node:tls';
import { ConfigError, connectionOptions, loadTemporalConfig } from '../../worker/src/process/config.mts';
import { explainConnectFailure } from '../../worker/src/process/tlsProbe.mts';
import { tlsMaterial } from '../../worker/src/process/temporalEnv.mts';
import { scratchDir } from '../helpers/scratch.mts';

const dir = scratchDir('secsvc-envconfig-');
const f = (n: string) => join(dir, n);
const ossl = (...a: string[]) => execFileSync('openssl', a, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA, a server certificate for `server.test` / 127.0.0.1, a client certificate, and a second CA that signs nothing of ours. */
function makeCerts() {
	for (const ca of ['ca', 'other-ca'])
		ossl(
			'req',
			'-x509',
			'-newkey',
			'ec',
			'-pkeyopt',
			'ec_paramgen_curve:P-256',
			'-nodes',
			'-days',
			'2',
			'-subj',
			`/CN=${ca}`,
			'-keyout',
			f(`${ca}.key`),
			'-out',
			f(`${ca}.pem`),
		);
	const issue = (name: string, eku: string, san: string) => {
		ossl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', f(`${name}.key`));
		ossl('req', '-new', '-key', f(`${name}.key`), '-subj', `/CN=${name}`, '-out', f(`${name}.csr`));
		writeFileSync(f(`${name}.ext`), `extendedKeyUsage=${eku}\n${san ? `subjectAltName=${san}\n` : ''}`);
		ossl(
			'x509',
			'-req',
			'-in',
			f(`${name}.csr`),
			'-CA',
			f('ca.pem'),
			'-CAkey',
			f('ca.key'),
			'-CAcreateserial',
			'-days',
			'2',
			'-extfile',
			f(`${name}.ext`),
			'-out',
			f(`${name}.pem`),
		);
	};
	issue('server', 'serverAuth', 'DNS:server.test,IP:127.0.0.1');
	issue('client', 'clientAuth', '');
	issue('client2', 'clientAuth', '');
}

const servers: Server[] = [];
const listen = (s: Server) =>
	new Promise<number>((r) => s.listen(0, '127.0.0.1', () => (servers.push(s), r((s.address() as AddressInfo).port))));
let mtlsPort = 0;
let plainPort = 0;

before(async () => {
	makeCerts();
	const mtls = tlsServer({
		cert: readFileSync(f('server.pem')),
		key: readFileSync(f('server.key')),
		ca: readFileSync(f('ca.pem')),
		requestCert: true,
		rejectUnauthorized: true,
		ALPNProtocols: ['h2'],
	});
	mtls.on('tlsClientError', () => {});
	mtlsPort = await listen(mtls);
	plainPort = await listen(netServer((s) => s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'))));
});
after(() => servers.forEach((s) => s.close()));

const issueOf = (e: unknown) =>
	e instanceof ConfigError ? e.message.replace(/^invalid worker configuration — /, '') : String(e);
const fails = (fn: () => unknown, re: RegExp) =>
	assert.throws(fn, (e: unknown) => e instanceof ConfigError && re.test(issueOf(e)));

test('profile (TOML) < SECSVC_CONFIG < environment; TEMPORAL_PROFILE picks the profile', () => {
	writeFileSync(
		f('temporal.toml'),
		`[profile.default]\naddress = "profile-default:7233"\nnamespace = "from-profile"\n\n[profile.prod]\naddress = "prod.example:7233"\napi_key = "k-prod"\n[profile.prod.grpc_meta]\ntemporal-namespace = "prod-ns"\n`,
	);
	writeFileSync(f('secsvc.json'), JSON.stringify({ temporal: { address: 'json:7233' } }));
	const env = { TEMPORAL_CONFIG_FILE: f('temporal.toml') };
	const p = loadTemporalConfig(env, undefined);
	assert.deepEqual(
		[p.address, p.namespace, p.tls, p.from?.address],
		[
			'profile-default:7233',
			'from-profile',
			undefined,
			`address of profile default in TEMPORAL_CONFIG_FILE ${f('temporal.toml')}`,
		],
	);
	const j = loadTemporalConfig(env, f('secsvc.json'));
	assert.deepEqual(
		[j.address, j.namespace, j.from?.address],
		['json:7233', 'from-profile', 'temporal.address (SECSVC_CONFIG)'],
	);
	const e = loadTemporalConfig({ ...env, TEMPORAL_ADDRESS: 'env:7233' }, f('secsvc.json'));
	assert.deepEqual([e.address, e.from?.address], ['env:7233', 'TEMPORAL_ADDRESS']);
	// An API key turns TLS on (Temporal Cloud), as Temporal's clients do; TEMPORAL_TLS=false still wins.
	const prod = loadTemporalConfig({ ...env, TEMPORAL_PROFILE: 'prod' }, undefined);
	assert.deepEqual(
		[prod.address, prod.apiKey, prod.tls, prod.metadata],
		['prod.example:7233', 'k-prod', true, { 'temporal-namespace': 'prod-ns' }],
	);
	assert.equal(loadTemporalConfig({ ...env, TEMPORAL_PROFILE: 'prod', TEMPORAL_TLS: 'false' }, undefined).tls, false);
	// Nothing set: the old defaults.
	const none = loadTemporalConfig({}, undefined);
	assert.deepEqual(
		[none.address, none.namespace, none.tls, none.apiKey],
		['127.0.0.1:7233', 'default', undefined, undefined],
	);
	fails(
		() => loadTemporalConfig({ ...env, TEMPORAL_PROFILE: 'staging' }, undefined),
		/^TEMPORAL_PROFILE staging: no such profile in TEMPORAL_CONFIG_FILE/,
	);
	writeFileSync(f('broken.toml'), '[profile.default\naddress = ');
	fails(
		() => loadTemporalConfig({ TEMPORAL_CONFIG_FILE: f('broken.toml') }, undefined),
		/^TEMPORAL_CONFIG_FILE .*broken\.toml: must be readable TOML/,
	);
});

test('TLS settings: Temporal names, the profile, JSON and the older TEMPORAL_TLS_CERT/KEY/CA; each file checked and named', () => {
	const env = {
		TEMPORAL_TLS_CLIENT_CERT_PATH: f('client.pem'),
		TEMPORAL_TLS_CLIENT_KEY_PATH: f('client.key'),
		TEMPORAL_TLS_SERVER_CA_CERT_PATH: f('ca.pem'),
	};
	const ok = connectionOptions(loadTemporalConfig(env, undefined));
	assert.ok(typeof ok.tls === 'object' && ok.tls.clientCertPair && ok.tls.serverRootCACertificate);
	const legacy = loadTemporalConfig(
		{ TEMPORAL_TLS_CERT: f('client.pem'), TEMPORAL_TLS_KEY: f('client.key') },
		undefined,
	);
	assert.deepEqual([typeof legacy.tls, legacy.from?.cert], ['object', 'TEMPORAL_TLS_CERT']);
	fails(
		() => loadTemporalConfig({ ...env, TEMPORAL_TLS_CERT: f('client2.pem') }, undefined),
		/^TEMPORAL_TLS_CERT and TEMPORAL_TLS_CLIENT_CERT_PATH: name the same setting/,
	);

	const opts = (e: Record<string, string>, file?: string) => () => connectionOptions(loadTemporalConfig(e, file));
	fails(
		opts({ ...env, TEMPORAL_TLS_CLIENT_KEY_PATH: f('missing.key') }),
		/^TEMPORAL_TLS_CLIENT_KEY_PATH: cannot read .*missing\.key \(ENOENT\)$/,
	);
	fails(
		opts({ ...env, TEMPORAL_TLS_SERVER_CA_CERT_PATH: f('client.key') }),
		/^TEMPORAL_TLS_SERVER_CA_CERT_PATH: must hold a PEM certificate/,
	);
	fails(
		opts({ ...env, TEMPORAL_TLS_CLIENT_KEY_PATH: f('client2.key') }),
		/^TEMPORAL_TLS_CLIENT_KEY_PATH: is not the key of the client certificate \(TEMPORAL_TLS_CLIENT_CERT_PATH\)$/,
	);
	fails(
		opts({ TEMPORAL_TLS_CLIENT_CERT_PATH: f('client.pem') }),
		/^TEMPORAL_TLS_CLIENT_KEY_PATH: is required with the client certificate/,
	);
	fails(
		opts({ TEMPORAL_TLS_CLIENT_KEY_DATA: readFileSync(f('client.key'), 'utf8') }),
		/^TEMPORAL_TLS_CLIENT_CERT_PATH: is required with the client key \(TEMPORAL_TLS_CLIENT_KEY_DATA\)/,
	);
	writeFileSync(
		f('tls.toml'),
		`[profile.default]\naddress = "x:1"\n[profile.default.tls]\nclient_cert_path = "${f('client.pem')}"\nclient_key_path = "${f('nope.key')}"\n`,
	);
	fails(
		opts({ TEMPORAL_CONFIG_FILE: f('tls.toml') }),
		/^tls\.client_key_path of profile default in TEMPORAL_CONFIG_FILE .*: cannot read/,
	);
	writeFileSync(
		f('tls.json'),
		JSON.stringify({ temporal: { tls: { certFile: f('client.pem'), keyFile: f('client2.key') } } }),
	);
	fails(
		opts({}, f('tls.json')),
		/^temporal\.tls\.keyFile \(SECSVC_CONFIG\): is not the key of the client certificate \(temporal\.tls\.certFile \(SECSVC_CONFIG\)\)$/,
	);
	// Messages name files, never their contents.
	try {
		tlsMaterial(
			{ keyData: 'SECRET-KEY-TEXT', certData: readFileSync(f('client.pem'), 'utf8') },
			{ key: 'TEMPORAL_TLS_CLIENT_KEY_DATA' },
		);
		assert.fail('accepted a broken key');
	} catch (e) {
		assert.match(String(e), /TEMPORAL_TLS_CLIENT_KEY_DATA: must hold a PEM private key/);
		assert.doesNotMatch(String(e), /SECRET-KEY-TEXT/);
	}
});

test('after a failed connection, one TLS handshake names the setting to fix', async () => {
	const good = (extra: Record<string, string> = {}) =>
		loadTemporalConfig(
			{
				TEMPORAL_ADDRESS: `127.0.0.1:${mtlsPort}`,
				TEMPORAL_TLS_SERVER_CA_CERT_PATH: f('ca.pem'),
				TEMPORAL_TLS_CLIENT_CERT_PATH: f('client.pem'),
				TEMPORAL_TLS_CLIENT_KEY_PATH: f('client.key'),
				...extra,
			},
			undefined,
		);
	const explain = (t: ReturnType<typeof loadTemporalConfig>) =>
		explainConnectFailure(t.address, connectionOptions(t).tls, t.from ?? {}, 'sdk message');
	assert.match(
		await explain(good({ TEMPORAL_TLS_SERVER_NAME: 'other.test' })),
		/^TEMPORAL_TLS_SERVER_NAME: the server's certificate is for DNS:server\.test, IP Address:127\.0\.0\.1, not this name$/,
	);
	assert.match(
		await explain(good({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: f('other-ca.pem') })),
		/^TEMPORAL_TLS_SERVER_CA_CERT_PATH: the server's certificate is not signed by this CA/,
	);
	const noCert = loadTemporalConfig(
		{ TEMPORAL_ADDRESS: `127.0.0.1:${mtlsPort}`, TEMPORAL_TLS_SERVER_CA_CERT_PATH: f('ca.pem') },
		undefined,
	);
	assert.equal(
		await explain(noCert),
		'TEMPORAL_TLS_CLIENT_CERT_PATH: the server requires a client certificate (mutual TLS) and none is set',
	);
	const plain = loadTemporalConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${mtlsPort}` }, undefined);
	assert.match(await explain(plain), /^TEMPORAL_TLS: TLS is off but 127\.0\.0\.1:\d+ speaks TLS/);
	assert.match(
		await explain(good({ TEMPORAL_ADDRESS: `127.0.0.1:${plainPort}` })),
		/^TEMPORAL_ADDRESS 127\.0\.0\.1:\d+: does not speak TLS, but TLS is on \(TEMPORAL_TLS_CLIENT_CERT_PATH\)$/,
	);
	const closed = await listen(netServer());
	servers.pop()?.close();
	await new Promise((r) => setTimeout(r, 50));
	assert.match(
		await explain(good({ TEMPORAL_ADDRESS: `127.0.0.1:${closed}` })),
		/^TEMPORAL_ADDRESS 127\.0\.0\.1:\d+: cannot connect — nothing listens there \(ECONNREFUSED\)$/,
	);
	// A handshake that goes through: the SDK's own message stays.
	assert.match(await explain(good()), /cannot connect — sdk message$/);
});
