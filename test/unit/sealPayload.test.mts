/**
 * The Runbook node's sealed payload (nodes/SecurityServiceRunbook/transport/seal.ts) is what the worker's payload
 * codec (worker/src/temporal/codec.mts) opens: the decision with its ID token comes out as sent, with `$sealed: 1`
 * (a request sealed in clear would decode as `$sealed: 0` and be refused); another key cannot open it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { parsePayloadKey, sealedPayload } from '../../nodes/SecurityServiceRunbook/transport/seal.ts';
import { parseKeys, SealedPayloadCodec } from '../../worker/src/temporal/codec.mts';

const fromWire = (p: ReturnType<typeof sealedPayload>) => ({
	metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
	data: Buffer.from(p.data, 'base64'),
});

test("the node seals what the worker's codec opens", async () => {
	const text = `k1:${randomBytes(32).toString('base64')}`;
	const key = parsePayloadKey(text);
	assert.ok(typeof key !== 'string', String(key));
	const req = { $sealed: 1, approved: true, via: 'n8n', idToken: 'aaa.bbb.ccc' };
	const wire = sealedPayload(req, key);
	assert.ok(!Buffer.from(wire.data, 'base64').toString('latin1').includes('aaa.bbb.ccc'), 'ciphertext');
	const [open] = await new SealedPayloadCodec(parseKeys(text)).decode([fromWire(wire)]);
	assert.equal(Buffer.from(open.metadata!.encoding!).toString(), 'json/plain');
	assert.deepEqual(JSON.parse(Buffer.from(open.data!).toString()), req);
	// A request that only says it is sealed (sent in clear) is marked as such by the codec.
	const [clear] = await new SealedPayloadCodec(parseKeys(text)).decode([
		{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(req)) },
	]);
	assert.equal(JSON.parse(Buffer.from(clear.data!).toString()).$sealed, 0);
	await assert.rejects(
		new SealedPayloadCodec(parseKeys(`k1:${randomBytes(32).toString('base64')}`)).decode([fromWire(wire)]),
	);
	assert.match(String(parsePayloadKey('nokey')), /must be id:BASE64/);
	assert.match(String(parsePayloadKey('k:AAAA')), /32 bytes/);
});
