// The payload codec (worker/src/temporal/codec.mts): sealed payloads encrypted with AES-256-GCM under the newest key (key id
// in the metadata), everything else untouched; old keys decrypt; tampering and a missing key fail loudly; key
// settings are checked with errors naming the setting. ClusterTokens: one Update for concurrent callers, cached
// until renewAt, a rejected token names its generation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { CodecKeyError, KEY_ID_METADATA, SealedPayloadCodec, keysFromEnv, parseKeys, requireKeys } from '../../worker/src/temporal/codec.mts';
import { ClusterTokens } from '../../worker/src/activities/tenants.mts';
import { sealed } from '../../workflows/tenant/shared.mts';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const td = new TextDecoder();
const meta = (p: { metadata?: Record<string, Uint8Array> | null }, k: string) => td.decode(p.metadata?.[k] ?? new Uint8Array());

test('sealed payloads are encrypted with the newest key; others pass unchanged; decode restores both', async () => {
	const codec = new SealedPayloadCodec(parseKeys(`${key('old')},${key('new')}`));
	const secret = sealed({ refreshToken: 'rt-very-secret-1234', accessToken: 'at-very-secret-5678' });
	const plain = { site_id: '20001', note: 'no secret here' };
	const [s, p] = [defaultPayloadConverter.toPayload(secret), defaultPayloadConverter.toPayload(plain)];
	const [es, ep] = await codec.encode([s, p]);
	assert.equal(meta(es, 'encoding'), 'binary/encrypted');
	assert.equal(meta(es, KEY_ID_METADATA), 'new');
	assert.ok(!Buffer.from(es.data as Uint8Array).toString('latin1').includes('very-secret'), 'ciphertext carries no token');
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
	assert.deepEqual(defaultPayloadConverter.fromPayload((await rotated.decode([old]))[0]), { $sealed: 1, refreshToken: 'r1-secret' });
	const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(sealed({ refreshToken: 'r2-secret' }))]);
	assert.equal(meta(fresh, KEY_ID_METADATA), 'k2');
	const only2 = new SealedPayloadCodec(parseKeys(k2));
	await assert.rejects(only2.decode([old]), /SECSVC_PAYLOAD_KEYS .*no key 'k1'/);
	const bad = { ...old, data: Buffer.from(old.data as Uint8Array) };
	bad.data[20] ^= 1;
	await assert.rejects(before.decode([bad]), /unable to authenticate|auth/i);
});

test('key settings: errors name the setting and the key; none given → undefined, required → one line', () => {
	assert.throws(() => parseKeys('nokey'), (e: Error) => e instanceof CodecKeyError && /^SECSVC_PAYLOAD_KEYS \/ SECSVC_PAYLOAD_KEYS_FILE: key 1: must be id:BASE64/.test(e.message));
	assert.throws(() => parseKeys(`a:${Buffer.alloc(16).toString('base64')}`), /key 'a': must be 32 bytes/);
	assert.throws(() => parseKeys(`${key('a')},${key('a')}`), /key 'a': listed twice/);
	assert.equal(keysFromEnv({}), undefined);
	assert.throws(() => requireKeys({}), (e: Error) => /^SECSVC_PAYLOAD_KEYS \/ SECSVC_PAYLOAD_KEYS_FILE: required/.test(e.message) && !e.message.includes('\n'));
	assert.throws(() => keysFromEnv({ SECSVC_PAYLOAD_KEYS_FILE: '/nonexistent/keys' }), /cannot read \/nonexistent\/keys: ENOENT/);
});

test('ClusterTokens: concurrent callers share one Update; cached until renewAt; a rejection names its generation', async () => {
	let now = 1_000_000;
	const asked: unknown[] = [];
	let gen = 0;
	const tokens = new ClusterTokens(async (req) => {
		asked.push(req);
		await new Promise((r) => setTimeout(r, 10));
		gen++;
		return sealed({ accessToken: `tok-${gen}`, expiresAt: now + 30_000, renewAt: now + 24_000, generation: gen });
	}, () => now);
	const got = await Promise.all(Array.from({ length: 50 }, () => tokens.getToken()));
	assert.deepEqual(new Set(got), new Set(['tok-1']));
	assert.equal(asked.length, 1);
	now += 23_000;
	assert.equal(await tokens.getToken(), 'tok-1', 'before renewAt: the cached token, no Update');
	now += 1_000;
	assert.equal(await tokens.getToken(), 'tok-2', 'at renewAt: asks the tenant workflow');
	assert.equal(await tokens.getToken({ force: true, rejected: 'tok-1' }), 'tok-2', 'an older rejected token does not drop the newer one');
	assert.equal(await tokens.getToken({ force: true, rejected: 'tok-2' }), 'tok-3');
	assert.deepEqual(asked, [{}, {}, { rejectedGeneration: 2 }]);
});
