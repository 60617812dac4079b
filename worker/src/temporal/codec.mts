// Payload encryption for what carries a secret through Temporal (tenant tokens): a PayloadCodec, AES-256-GCM.
//
// Only SEALED payloads are encrypted: a JSON payload whose value is an object whose first key is `$sealed`
// (`sealed()` in workflows/tenant/shared.mts builds it). Everything else (runbook plans, results, audit trails) stays
// readable by every reader that has no key: the n8n Runbook node over Temporal's HTTP API, the Web UI, reports.
// Workers and the CLI's client run the codec (DataConverter payloadCodecs), so a sealed value is plain again in the
// workflow, the activity and the CLI, and ciphertext in history and on the wire.
//
// Tenant token grants (`sealedFor(customerId, …)`: `{"$sealed":1,"$tenant":"<customer>",…}`) are encrypted with that
// tenant's TOKEN KEY instead: HKDF-SHA256(payload key, salt "secsvc-tenant-token", info customer id), AAD
// "<key id>/<customer id>", the customer in the metadata. An n8n credential of that customer holds only its token key
// (`secsvc tenants token-key`), so it opens that customer's access tokens and nothing else (worker/README.md).
//
// Keys: SECSVC_PAYLOAD_KEYS="id1:BASE64,id2:BASE64" or SECSVC_PAYLOAD_KEYS_FILE (the same, one or more a line).
// Each key is 32 bytes (base64). The LAST key listed is the newest: it encrypts; every listed key decrypts (its id
// is in the payload's metadata), so a key is rotated by appending a new one and dropping the old one once no open
// history needs it.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Payload, PayloadCodec } from '@temporalio/common';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const TENANT_METADATA = 'encryption-tenant';
export const TENANT_KEY_SALT = 'secsvc-tenant-token';
export const KEYS_SETTING = 'SECSVC_PAYLOAD_KEYS / SECSVC_PAYLOAD_KEYS_FILE';
/** The bytes a sealed JSON payload starts with (the marker key first: a prefix test, no parse of every payload). */
const SEALED_PREFIX = Buffer.from('{"$sealed":');
/** The bytes a tenant-sealed payload starts with; the customer id (no quote or backslash: tenantInputProblem) follows. */
const TENANT_PREFIX = Buffer.from('{"$sealed":1,"$tenant":"');
const te = new TextEncoder();
const td = new TextDecoder();

export interface PayloadKey {
	id: string;
	key: Buffer;
}

export class CodecKeyError extends Error {
	constructor(rule: string) {
		super(`${KEYS_SETTING}: ${rule}`);
		this.name = 'CodecKeyError';
	}
}

/** Parses `id:BASE64` entries (comma or newline separated); every problem names the setting and the entry. */
export function parseKeys(text: string): PayloadKey[] {
	const out: PayloadKey[] = [];
	const entries = text
		.split(/[\n,]/)
		.map((s) => s.trim())
		.filter((s) => s && !s.startsWith('#'));
	entries.forEach((e, i) => {
		const at = e.indexOf(':');
		const id = at > 0 ? e.slice(0, at) : '';
		if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
			throw new CodecKeyError(`key ${i + 1}: must be id:BASE64 with an id of 1-64 characters A-Z a-z 0-9 . _ -`);
		const b64 = e.slice(at + 1);
		const key = Buffer.from(b64, 'base64');
		if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || key.length !== 32)
			throw new CodecKeyError(`key '${id}': must be 32 bytes in base64 (openssl rand -base64 32)`);
		if (out.some((k) => k.id === id)) throw new CodecKeyError(`key '${id}': listed twice`);
		out.push({ id, key });
	});
	return out;
}

/** The configured keys, or undefined when neither setting is given. */
export function keysFromEnv(env: Record<string, string | undefined> = process.env): PayloadKey[] | undefined {
	let text = env.SECSVC_PAYLOAD_KEYS;
	if (!text && env.SECSVC_PAYLOAD_KEYS_FILE) {
		try {
			text = readFileSync(env.SECSVC_PAYLOAD_KEYS_FILE, 'utf8');
		} catch (e) {
			throw new CodecKeyError(
				`cannot read ${env.SECSVC_PAYLOAD_KEYS_FILE}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
			);
		}
	}
	if (!text) return undefined;
	const keys = parseKeys(text);
	if (!keys.length) throw new CodecKeyError('no key given');
	return keys;
}

/** Keys or a one-line error naming the setting (a worker or CLI that handles tenants cannot run without one). */
export function requireKeys(
	env: Record<string, string | undefined> = process.env,
	why = 'to handle tenant tokens',
): PayloadKey[] {
	const keys = keysFromEnv(env);
	if (!keys) throw new CodecKeyError(`required ${why} (32-byte keys as id:BASE64; see docs/worker/tenants.md)`);
	return keys;
}

export const isSealed = (p: Payload) => {
	const d = p.data;
	if (!d || d.length < SEALED_PREFIX.length) return false;
	for (let i = 0; i < SEALED_PREFIX.length; i++) if (d[i] !== SEALED_PREFIX[i]) return false;
	return true;
};

/** A tenant's token key: opens its access-token grants, nothing else (HKDF of the payload key and the customer id). */
export function tenantTokenKey(payloadKey: Buffer, customerId: string): Buffer {
	return Buffer.from(hkdfSync('sha256', payloadKey, TENANT_KEY_SALT, customerId, 32));
}

/** The customer of a tenant-sealed payload, or undefined. */
function tenantOf(p: Payload): string | undefined {
	const d = p.data;
	if (!d || d.length <= TENANT_PREFIX.length || !TENANT_PREFIX.equals(Buffer.from(d.subarray(0, TENANT_PREFIX.length))))
		return undefined;
	const end = d.indexOf(0x22, TENANT_PREFIX.length);
	const id = end > TENANT_PREFIX.length ? td.decode(d.subarray(TENANT_PREFIX.length, end)) : '';
	return /^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/.test(id) ? id : undefined;
}

/**
 * A value marked sealed that arrived NOT encrypted (a client without the codec wrote it): decoded as `$sealed: 0`,
 * so whoever takes it can tell (the runbook's decide validator refuses such a proof: a refused Update leaves nothing
 * in history).
 */
function arrivedInClear(p: Payload): Payload {
	const d = Buffer.from(p.data ?? new Uint8Array());
	if (d[SEALED_PREFIX.length] !== 0x31) return p; // `$sealed` is not 1: nothing to mark
	d[SEALED_PREFIX.length] = 0x30;
	return { ...p, data: d };
}

const b64 = (u?: Uint8Array | null) => Buffer.from(u ?? new Uint8Array()).toString('base64');

export class SealedPayloadCodec implements PayloadCodec {
	private readonly byId: Map<string, Buffer>;
	private readonly newest: PayloadKey;
	private readonly tenantKeys = new Map<string, Buffer>();
	constructor(keys: PayloadKey[]) {
		if (!keys.length) throw new CodecKeyError('no key given');
		this.byId = new Map(keys.map((k) => [k.id, k.key]));
		this.newest = keys[keys.length - 1];
	}

	async encode(payloads: Payload[]): Promise<Payload[]> {
		return payloads.map((p) => (isSealed(p) ? this.seal(p) : p));
	}

	async decode(payloads: Payload[]): Promise<Payload[]> {
		return payloads.map((p) =>
			td.decode(p.metadata?.encoding ?? new Uint8Array()) === ENCRYPTED_ENCODING
				? this.open(p)
				: isSealed(p)
					? arrivedInClear(p)
					: p,
		);
	}

	private seal(p: Payload): Payload {
		// The whole payload (metadata + data) inside, so the original encoding comes back as it was.
		const plain = Buffer.from(
			JSON.stringify({
				m: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
				d: b64(p.data),
			}),
		);
		const tenant = tenantOf(p);
		const iv = randomBytes(12);
		const c = createCipheriv(
			'aes-256-gcm',
			tenant ? this.tenantKey(this.newest.id, this.newest.key, tenant) : this.newest.key,
			iv,
		);
		c.setAAD(Buffer.from(tenant ? `${this.newest.id}/${tenant}` : this.newest.id));
		const body = Buffer.concat([c.update(plain), c.final()]);
		return {
			metadata: {
				encoding: te.encode(ENCRYPTED_ENCODING),
				[KEY_ID_METADATA]: te.encode(this.newest.id),
				...(tenant ? { [TENANT_METADATA]: te.encode(tenant) } : {}),
			},
			data: Buffer.concat([iv, body, c.getAuthTag()]),
		};
	}

	private tenantKey(id: string, key: Buffer, customerId: string): Buffer {
		const k = `${id}/${customerId}`;
		let t = this.tenantKeys.get(k);
		if (!t) {
			t = tenantTokenKey(key, customerId);
			// bounded: one entry per key and tenant, tenants are few thousand at most
			if (this.tenantKeys.size > 100_000) this.tenantKeys.clear();
			this.tenantKeys.set(k, t);
		}
		return t;
	}

	private open(p: Payload): Payload {
		const id = td.decode(p.metadata?.[KEY_ID_METADATA] ?? new Uint8Array());
		const key = this.byId.get(id);
		if (!key) throw new CodecKeyError(`no key '${id}' to decrypt a payload (add it back to the list)`);
		const tenant = p.metadata?.[TENANT_METADATA] ? td.decode(p.metadata[TENANT_METADATA]) : undefined;
		const d = Buffer.from(p.data ?? new Uint8Array());
		if (d.length < 28) throw new Error(`encrypted payload (key '${id}') is truncated`);
		const dc = createDecipheriv('aes-256-gcm', tenant ? this.tenantKey(id, key, tenant) : key, d.subarray(0, 12));
		dc.setAAD(Buffer.from(tenant ? `${id}/${tenant}` : id));
		dc.setAuthTag(d.subarray(d.length - 16));
		const plain = Buffer.concat([dc.update(d.subarray(12, d.length - 16)), dc.final()]);
		const o = JSON.parse(plain.toString('utf8')) as { m: Record<string, string>; d: string };
		return {
			metadata: Object.fromEntries(Object.entries(o.m).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
			data: Buffer.from(o.d, 'base64'),
		};
	}
}

/** DataConverter for the worker and the client: the sealed-payload codec when keys are configured. */
export const dataConverterFor = (keys: PayloadKey[] | undefined) =>
	keys ? { payloadCodecs: [new SealedPayloadCodec(keys)] } : undefined;
