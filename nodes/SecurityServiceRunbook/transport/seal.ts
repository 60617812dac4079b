import { createCipheriv, randomBytes } from 'node:crypto';

/**
 * A sealed payload for Temporal's HTTP API, in the worker's payload codec format (worker/src/temporal/codec.mts:
 * AES-256-GCM, encoding `binary/encrypted`, the key id in the metadata and as additional data, the original payload's
 * metadata and data inside): how Decide sends a request that carries an ID token, so the token is ciphertext in the
 * runbook's history. The key is the Temporal credential's Payload Key (`id:BASE64`, the worker's newest
 * SECSVC_PAYLOAD_KEYS entry).
 */
export interface PayloadKey {
	id: string;
	key: Buffer;
}

/** `id:BASE64` (32 bytes) → the key, or the rule it breaks. */
export function parsePayloadKey(text: string): PayloadKey | string {
	const t = text.trim();
	const at = t.indexOf(':');
	const id = at > 0 ? t.slice(0, at) : '';
	const b64 = t.slice(at + 1);
	if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) return 'must be id:BASE64 with an id of 1-64 characters A-Z a-z 0-9 . _ -';
	const key = Buffer.from(b64, 'base64');
	if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || key.length !== 32) return `key '${id}': must be 32 bytes in base64`;
	return { id, key };
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** The value as an encrypted JSON payload (full form: base64 metadata and data). */
export function sealedPayload(value: unknown, k: PayloadKey) {
	const inner = { m: { encoding: b64('json/plain') }, d: b64(JSON.stringify(value)) };
	const iv = randomBytes(12);
	const c = createCipheriv('aes-256-gcm', k.key, iv);
	c.setAAD(Buffer.from(k.id));
	const body = Buffer.concat([c.update(Buffer.from(JSON.stringify(inner))), c.final()]);
	return {
		metadata: { encoding: b64('binary/encrypted'), 'encryption-key-id': b64(k.id) },
		data: b64(Buffer.concat([iv, body, c.getAuthTag()])),
	};
}
