import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadClientConfigProfile, type ClientConfigProfile } from '@temporalio/envconfig';
import type { ConfigDataSource } from '@temporalio/envconfig/lib/types.js';

/**
 * Temporal's own client configuration (@temporalio/envconfig, as the `temporal` CLI reads it) layered with ours.
 *
 * Order, lowest first: the TOML profile (TEMPORAL_CONFIG_FILE or ~/.config/temporalio/temporal.toml, profile
 * TEMPORAL_PROFILE or "default") → our JSON file (SECSVC_CONFIG, `temporal.*`) → the environment (Temporal's
 * names: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH/_DATA,
 * TEMPORAL_TLS_CLIENT_KEY_PATH/_DATA, TEMPORAL_TLS_SERVER_CA_CERT_PATH/_DATA, TEMPORAL_TLS_SERVER_NAME,
 * TEMPORAL_TLS_DISABLE_HOST_VERIFICATION, TEMPORAL_GRPC_META_*; and our older TEMPORAL_TLS_CERT/_KEY/_CA).
 * Each value remembers the setting it came from, so an error names that setting.
 */

export interface TlsSettings {
	serverName?: string;
	caFile?: string;
	certFile?: string;
	keyFile?: string;
	/** PEM text given inline (TEMPORAL_TLS_*_DATA or the profile's *_data). */
	caData?: string;
	certData?: string;
	keyData?: string;
	disableHostVerification?: boolean;
}

export type TlsField = 'serverName' | 'ca' | 'cert' | 'key' | 'disableHostVerification';
/** Where each effective value came from (a setting name a user can find). */
export type Sources = Partial<Record<'address' | 'namespace' | 'apiKey' | 'tls' | TlsField, string>>;

export class TemporalSettingError extends Error {
	constructor(
		readonly field: string,
		readonly rule: string,
	) {
		super(`${field}: ${rule}`);
		this.name = 'TemporalSettingError';
	}
}

interface Layer {
	address?: string;
	namespace?: string;
	apiKey?: string;
	tlsOn?: boolean;
	tls: TlsSettings;
	metadata?: Record<string, string>;
	from: Sources;
}

const src = (s: ConfigDataSource | undefined) =>
	s === undefined
		? {}
		: 'path' in s
			? { file: s.path }
			: { data: typeof s.data === 'string' ? s.data : Buffer.from(s.data).toString('utf8') };

/** A layer from an envconfig profile; `name(key, file)` gives the setting's name for messages. */
function fromProfile(p: ClientConfigProfile, name: (tomlKey: string) => string): Layer {
	const l: Layer = {
		address: p.address,
		namespace: p.namespace,
		apiKey: p.apiKey,
		tls: {},
		from: {},
		metadata: p.grpcMeta,
	};
	if (p.address !== undefined) l.from.address = name('address');
	if (p.namespace !== undefined) l.from.namespace = name('namespace');
	if (p.apiKey !== undefined) l.from.apiKey = name('api_key');
	const t = p.tls;
	if (t) {
		l.tlsOn = t.disabled === true ? false : true;
		l.from.tls = name('tls');
		const pem = (field: 'ca' | 'cert' | 'key', s: ConfigDataSource | undefined, key: string) => {
			const v = src(s) as { file?: string; data?: string };
			if (v.file !== undefined) {
				l.tls[`${field}File`] = v.file;
				l.from[field] = name(`${key}_path`);
			}
			if (v.data !== undefined) {
				l.tls[`${field}Data`] = v.data;
				l.from[field] = name(`${key}_data`);
			}
		};
		pem('ca', t.serverCACert, 'server_ca_cert');
		pem('cert', t.clientCert, 'client_cert');
		pem('key', t.clientKey, 'client_key');
		if (t.serverName !== undefined) {
			l.tls.serverName = t.serverName;
			l.from.serverName = name('server_name');
		}
	}
	return l;
}

const ENV_NAMES: Record<string, string> = {
	address: 'TEMPORAL_ADDRESS',
	namespace: 'TEMPORAL_NAMESPACE',
	api_key: 'TEMPORAL_API_KEY',
	tls: 'TEMPORAL_TLS',
	server_ca_cert_path: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
	server_ca_cert_data: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
	client_cert_path: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
	client_cert_data: 'TEMPORAL_TLS_CLIENT_CERT_DATA',
	client_key_path: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
	client_key_data: 'TEMPORAL_TLS_CLIENT_KEY_DATA',
	server_name: 'TEMPORAL_TLS_SERVER_NAME',
};

/** The TOML profile (file only). A broken file or a missing named profile is an error naming it. */
function profileLayer(env: NodeJS.ProcessEnv): Layer {
	const vars = env as Record<string, string>;
	const profile = env.TEMPORAL_PROFILE || 'default';
	const where = env.TEMPORAL_CONFIG_FILE
		? `TEMPORAL_CONFIG_FILE ${env.TEMPORAL_CONFIG_FILE}`
		: 'the Temporal config file (~/.config/temporalio/temporal.toml)';
	let p: ClientConfigProfile;
	try {
		p = loadClientConfigProfile({ disableEnv: true, overrideEnvVars: vars });
	} catch (e) {
		const msg = (e as Error).message;
		if (/Profile '.*' not found/.test(msg))
			throw new TemporalSettingError(`TEMPORAL_PROFILE ${profile}`, `no such profile in ${where}`);
		throw new TemporalSettingError(where, `must be readable TOML (${msg})`);
	}
	const top = ['address', 'namespace', 'api_key', 'tls'];
	return fromProfile(p, (k) => `${top.includes(k) ? k : `tls.${k}`} of profile ${profile} in ${where}`);
}

function envLayer(env: NodeJS.ProcessEnv): Layer {
	const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')) as Record<
		string,
		string
	>;
	let p: ClientConfigProfile;
	try {
		p = loadClientConfigProfile({ disableFile: true, overrideEnvVars: vars });
	} catch (e) {
		throw new TemporalSettingError('TEMPORAL_TLS_* environment', (e as Error).message);
	}
	const l = fromProfile(p, (k) => ENV_NAMES[k] ?? `TEMPORAL_${k.toUpperCase()}`);
	// TLS implied by a file or name setting: name that setting, not TEMPORAL_TLS which nobody set.
	if (l.tlsOn !== undefined && vars.TEMPORAL_TLS === undefined)
		l.from.tls = l.from.cert ?? l.from.ca ?? l.from.key ?? l.from.serverName;
	if (vars.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION !== undefined) {
		l.tls.disableHostVerification = ['1', 'true'].includes(vars.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION.toLowerCase());
		l.from.disableHostVerification = 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION';
	}
	// Our older names (kept): the same settings under TEMPORAL_TLS_CERT / _KEY / _CA. Both forms set differently is refused.
	const legacy = [
		['cert', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_CLIENT_CERT_PATH'],
		['key', 'TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CLIENT_KEY_PATH'],
		['ca', 'TEMPORAL_TLS_CA', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
	] as const;
	for (const [field, old, current] of legacy) {
		const v = vars[old];
		if (v === undefined) continue;
		if (vars[current] !== undefined && vars[current] !== v)
			throw new TemporalSettingError(`${old} and ${current}`, 'name the same setting with different values: set one');
		l.tls[`${field}File`] = v;
		l.from[field] = vars[current] !== undefined ? current : old;
		if (l.tlsOn === undefined) {
			l.tlsOn = true;
			l.from.tls = old;
		}
	}
	return l;
}

/** A layer from our JSON file's `temporal` object. */
export function jsonLayer(t: {
	address?: string;
	namespace?: string;
	apiKey?: string;
	tls?: boolean | TlsSettings;
}): Layer {
	const n = (k: string) => `temporal.${k} (SECSVC_CONFIG)`;
	const l: Layer = { address: t.address, namespace: t.namespace, apiKey: t.apiKey, tls: {}, from: {} };
	for (const k of ['address', 'namespace', 'apiKey'] as const) if (t[k] !== undefined) l.from[k] = n(k);
	if (t.tls !== undefined) {
		l.from.tls = n('tls');
		if (typeof t.tls === 'boolean') l.tlsOn = t.tls;
		else if (t.tls && typeof t.tls === 'object') {
			l.tlsOn = true;
			l.tls = { ...t.tls };
			for (const [f, k] of [
				['ca', 'caFile'],
				['cert', 'certFile'],
				['key', 'keyFile'],
				['serverName', 'serverName'],
			] as const)
				if (t.tls[k] !== undefined) l.from[f] = n(`tls.${k}`);
		} else throw new TemporalSettingError(n('tls'), 'must be true, false or { serverName, caFile, certFile, keyFile }');
	}
	return l;
}

export interface Resolved {
	address?: string;
	namespace?: string;
	apiKey?: string;
	tls?: boolean | TlsSettings;
	metadata?: Record<string, string>;
	from: Sources;
}

/** Profile → JSON → environment; each field from the highest layer that sets it. */
export function resolveTemporal(env: NodeJS.ProcessEnv, json: Parameters<typeof jsonLayer>[0]): Resolved {
	const layers = [profileLayer(env), jsonLayer(json), envLayer(env)];
	const r: Resolved = { from: {} };
	let tlsOn: boolean | undefined;
	const tls: TlsSettings = {};
	for (const l of layers) {
		for (const k of ['address', 'namespace', 'apiKey'] as const)
			if (l[k] !== undefined) {
				r[k] = l[k];
				r.from[k] = l.from[k];
			}
		if (l.tlsOn !== undefined) {
			tlsOn = l.tlsOn;
			r.from.tls = l.from.tls;
		}
		for (const [f, keys] of [
			['ca', ['caFile', 'caData']],
			['cert', ['certFile', 'certData']],
			['key', ['keyFile', 'keyData']],
		] as const)
			if (l.tls[keys[0]] !== undefined || l.tls[keys[1]] !== undefined) {
				tls[keys[0]] = l.tls[keys[0]];
				tls[keys[1]] = l.tls[keys[1]];
				r.from[f] = l.from[f];
			}
		for (const f of ['serverName', 'disableHostVerification'] as const)
			if (l.tls[f] !== undefined) {
				(tls as Record<string, unknown>)[f] = l.tls[f];
				r.from[f] = l.from[f];
			}
		if (l.metadata) r.metadata = { ...r.metadata, ...l.metadata };
	}
	const set = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)) as TlsSettings;
	// As Temporal's clients do: TLS when configured, or when an API key is given (Temporal Cloud), unless turned off.
	if (tlsOn === false) r.tls = false;
	else if (Object.keys(set).length) r.tls = set;
	else if (tlsOn === true || r.apiKey) r.tls = true;
	return r;
}

export interface TlsMaterial {
	serverNameOverride?: string;
	serverRootCACertificate?: Buffer;
	clientCertPair?: { crt: Buffer; key: Buffer };
}

/**
 * Reads and checks the TLS files before any connection: unreadable, not PEM, a certificate without its key (or the
 * reverse), a key that does not belong to the certificate — each an error naming the setting. Contents never appear.
 */
export function tlsMaterial(tls: Resolved['tls'], from: Sources): TlsMaterial | boolean | undefined {
	if (tls === undefined || typeof tls === 'boolean') return tls;
	const read = (field: 'ca' | 'cert' | 'key', file?: string, data?: string): Buffer | undefined => {
		if (data !== undefined) return Buffer.from(data);
		if (file === undefined) return undefined;
		try {
			return readFileSync(file);
		} catch (e) {
			throw new TemporalSettingError(
				from[field] ?? field,
				`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
			);
		}
	};
	const ca = read('ca', tls.caFile, tls.caData);
	const crt = read('cert', tls.certFile, tls.certData);
	const key = read('key', tls.keyFile, tls.keyData);
	const pemCert = (field: 'ca' | 'cert', b: Buffer) => {
		try {
			return new X509Certificate(b);
		} catch {
			throw new TemporalSettingError(from[field] ?? field, 'must hold a PEM certificate (-----BEGIN CERTIFICATE-----)');
		}
	};
	if (ca) pemCert('ca', ca);
	if (crt && !key)
		throw new TemporalSettingError(
			from.key ?? 'TEMPORAL_TLS_CLIENT_KEY_PATH',
			`is required with the client certificate (${from.cert})`,
		);
	if (key && !crt)
		throw new TemporalSettingError(
			from.cert ?? 'TEMPORAL_TLS_CLIENT_CERT_PATH',
			`is required with the client key (${from.key})`,
		);
	if (crt && key) {
		const cert = pemCert('cert', crt);
		let k;
		try {
			k = createPrivateKey(key);
		} catch {
			throw new TemporalSettingError(from.key ?? 'key', 'must hold a PEM private key (unencrypted)');
		}
		if (!cert.checkPrivateKey(k))
			throw new TemporalSettingError(from.key ?? 'key', `is not the key of the client certificate (${from.cert})`);
	}
	if (tls.disableHostVerification)
		throw new TemporalSettingError(
			from.disableHostVerification ?? 'disableHostVerification',
			'is not supported by the TypeScript SDK: set the server name (TEMPORAL_TLS_SERVER_NAME) instead',
		);
	return {
		serverNameOverride: tls.serverName,
		serverRootCACertificate: ca,
		clientCertPair: crt && key ? { crt, key } : undefined,
	};
}
