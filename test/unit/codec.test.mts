// The payload codec (worker/src/temporal/codec.mts): sealed payloads encrypted with AES-256-GCM under the newest key (key id
// in the metadata), everything else untouched; old keys decrypt; tampering and a missing key fail loudly; key
// settings are checked with errors naming the setting (ClusterTokens: clusterTokens.test.mts). Tenant token keys (n8n's Token Source "cluster"): a grant sealed
// for a customer opens with that customer's token key in the n8n package's own opener and with nothing else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { execFileSync } from 'node:child_process';
import {
	CodecKeyError,
	KEY_ID_METADATA,
	SealedPayloadCodec,
	TENANT_METADATA,
	keysFromEnv,
	parseKeys,
	requireKeys,
	tenantTokenKey,
} from '../../worker/src/temporal/codec.mts';
import { openGrant, parseTokenKey } from '../../nodes/SecurityService/transport/clusterToken.ts';
import { sealed, sealedFor } from '../../workflows/tenant/shared.mts';
import { secsvcArgs } from '../helpers/secsvcCli.mts';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const td = new TextDecoder();
const meta = (p: { metadata?: Record<string, Uint8Array> | null }, k: string) =>
	td.decode(p.metadata?.[k] ?? new Uint8Array());

test('sealed payloads are encrypted with the newest key; others pass unchanged; decode restores both', async () => {
	const codec = new SealedPayloadCodec(parseKeys(`${key('old')},${key('new')}`));
	const secret = sealed({ refreshToken: 'rt-very-secret-1234', accessToken: 'at-very-secret-5678' });
	const plain = { site_id: '20001', note: 'no secret here' };
	const [s, p] = [defaultPayloadConverter.toPayload(secret), defaultPayloadConverter.toPayload(plain)];
	const [es, ep] = await codec.encode([s, p]);
	assert.equal(meta(es, 'encoding'), 'binary/encrypted');
	assert.equal(meta(es, KEY_ID_METADATA), 'new');
	assert.ok(
		!Buffer.from(es.data as Uint8Array)
			.toString('latin1')
			.includes('very-secret'),
		'ciphertext carries no token',
	);
	assert.equal(ep, p, 'an unsealed payload is not touched');
	const [ds, dp] = await codec.decode([es, ep]);
	assert.deepEqual(defaultPayloadConverter.fromPayload(ds), secret);
	assert.deepEqual(defaultPayloadConverter.fromPayload(dp), plain);
	// a value whose $sealed key is not first is not sealed (prefix test): build sealed values with sealed()
	const notFirst = defaultPayloadConverter.toPayload({ a: 1, $sealed: 1 });
	assert.equal((await codec.encode([notFirst]))[0], notFirst);
});

test('rotation: an old key decrypts, the newest encrypts; a dropped key or a changed byte fails loudly', async () => {
	const k1 = key('k1');
	const k2 = key('k2');
	const before = new SealedPayloadCodec(parseKeys(k1));
	const [old] = await before.encode([defaultPayloadConverter.toPayload(sealed({ refreshToken: 'r1-secret' }))]);
	const rotated = new SealedPayloadCodec(parseKeys(`${k1}\n${k2}`));
	assert.deepEqual(defaultPayloadConverter.fromPayload((await rotated.decode([old]))[0]), {
		$sealed: 1,
		refreshToken: 'r1-secret',
	});
	const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(sealed({ refreshToken: 'r2-secret' }))]);
	assert.equal(meta(fresh, KEY_ID_METADATA), 'k2');
	const only2 = new SealedPayloadCodec(parseKeys(k2));
	await assert.rejects(only2.decode([old]), /SECSVC_PAYLOAD_KEYS .*no key 'k1'/);
	const bad = { ...old, data: Buffer.from(old.data as Uint8Array) };
	bad.data[20] ^= 1;
	await assert.rejects(before.decode([bad]), /unable to authenticate|auth/i);
});

test('key settings: errors name the setting and the key; none given → undefined, required → one line', () => {
	assert.throws(
		() => parseKeys('nokey'),
		(e: Error) =>
			e instanceof CodecKeyError &&
			/^SECSVC_PAYLOAD_KEYS \/ SECSVC_PAYLOAD_KEYS_FILE: key 1: must be id:BASE64/.test(e.message),
	);
	assert.throws(() => parseKeys(`a:${Buffer.alloc(16).toString('base64')}`), /key 'a': must be 32 bytes/);
	assert.throws(() => parseKeys(`${key('a')},${key('a')}`), /key 'a': listed twice/);
	assert.equal(keysFromEnv({}), undefined);
	assert.throws(
		() => requireKeys({}),
		(e: Error) =>
			/^SECSVC_PAYLOAD_KEYS \/ SECSVC_PAYLOAD_KEYS_FILE: required/.test(e.message) && !e.message.includes('\n'),
	);
	assert.throws(
		() => keysFromEnv({ SECSVC_PAYLOAD_KEYS_FILE: '/nonexistent/keys' }),
		/cannot read \/nonexistent\/keys: ENOENT/,
	);
});

test('tenant token keys: a grant sealed for a customer opens with its token key only; the refresh token never uses it', async () => {
	const keys = parseKeys(`${key('k1')},${key('k2')}`);
	const codec = new SealedPayloadCodec(keys);
	const grant = { accessToken: 'ut-very-secret-9', expiresAt: 2, renewAt: 1, generation: 4 };
	const [enc, state] = await codec.encode([
		defaultPayloadConverter.toPayload(sealedFor('cust-1', grant)),
		defaultPayloadConverter.toPayload(sealed({ refreshToken: 'rt-secret' })),
	]);
	assert.equal(meta(enc, TENANT_METADATA), 'cust-1');
	assert.equal(meta(enc, KEY_ID_METADATA), 'k2', 'the newest key');
	assert.equal(meta(state, TENANT_METADATA), '', 'a refresh token is sealed with the payload key, never a tenant key');
	const [dec] = await codec.decode([enc]);
	assert.deepEqual(
		defaultPayloadConverter.fromPayload(dec),
		sealedFor('cust-1', grant),
		'workers and the CLI open it as before',
	);
	// as Temporal's HTTP API shows it: metadata values and data in base64
	const b = (u?: Uint8Array | null) => Buffer.from(u ?? new Uint8Array()).toString('base64');
	const http = (p: typeof enc) => ({
		metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b(v)])),
		data: b(p.data),
	});
	const tk = (id: string, k: Buffer, c: string) => parseTokenKey(`${id}:${tenantTokenKey(k, c).toString('base64')}`);
	// a grant without declared own networks (tenants … --protected) opens with none
	assert.deepEqual(openGrant(http(enc), 'cust-1', tk('k2', keys[1].key, 'cust-1')), { ...grant, protectedRanges: [] });
	assert.throws(
		() => openGrant(http(enc), 'cust-1', tk('k2', keys[1].key, 'cust-2')),
		/Token Key: does not open customer cust-1/,
	);
	assert.throws(
		() => openGrant(http(enc), 'cust-2', tk('k2', keys[1].key, 'cust-2')),
		/Customer ID: the token answered is sealed for another customer/,
	);
	assert.throws(
		() => openGrant(http(enc), 'cust-1', tk('k1', keys[0].key, 'cust-1')),
		/Token Key: made from payload key 'k1', the cluster now seals with 'k2'/,
	);
	assert.throws(
		() => openGrant(http(state), 'cust-1', tk('k2', keys[1].key, 'cust-1')),
		/Customer ID/,
		"the payload key's payloads do not open with a token key",
	);
	assert.throws(() => parseTokenKey('k1:short'), /Token Key: must be what `secsvc tenants token-key/);
	// the CLI prints the same key the codec derives
	const printed = execFileSync(process.execPath, secsvcArgs('tenants', 'token-key', 'cust-1'), {
		env: { ...process.env, SECSVC_PAYLOAD_KEYS: keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',') },
		encoding: 'utf8',
	}).trim();
	assert.equal(printed, `k2:${tenantTokenKey(keys[1].key, 'cust-1').toString('base64')}`);
});
