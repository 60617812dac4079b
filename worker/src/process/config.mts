import { loadIdentityConfig, unverifiedApprovalsOptIn, type IdentityConfig } from '../identity/config.mts';
import { readFileSync } from 'node:fs';
import { parseProtectedRanges, DEFAULT_WIDEST_PREFIX } from '../../../api/blastRadius.ts';
import { loadRateLimit, type RateLimitConfig } from './rateLimitConfig.mts';
import { tokenSourceFrom, TokenSettingError, type TokenSource } from './temporalToken.mts';
import { resolveTemporal, TemporalSettingError, tlsMaterial, type Sources, type TlsSettings } from './temporalEnv.mts';

/**
 * Worker configuration from a JSON file (SECSVC_CONFIG or --config) and the environment (which wins). The Temporal
 * connection also reads Temporal's own client configuration (TOML profile, lowest; see temporalEnv.mts).
 * The app secret and tokens live here and in the client only: never in workflow inputs, results, signals,
 * memos or history.
 *
 * JSON shape (every key optional except the API credentials):
 * {
 *   "temporal": { "address": "127.0.0.1:7233", "namespace": "default", "taskQueue": "secsvc-runbooks",
 *                 "tls": false | true | { "serverName", "caFile", "certFile", "keyFile" }, "apiKey": "…",
 *                 "deploymentName": "secsvc", "workerVersioning": true },
 *   "api": { "baseUrl": "https://…", "appId": "…", "secret": "…" | "secretFile": "path",
 *            "tokenKind": "app" | "user", "refreshToken": "…", "tokenStoreFile": "path",
 *            "rateLimitCodes": [42901], "authFailureCodes": [40101], "timeoutMs": 15000, "retries": 2,
 *            "rateLimit": { "rps": 60, "burst": 10, "tenant": { "rps": 10, "burst": 5 } } },
 *            (the cluster's request budget, rateLimitConfig.mts; unset = none)
 *   "metrics": { "address": "127.0.0.1:9464" }     (Prometheus /metrics; off when unset)
 *   "guard": { "widestPrefix": 16, "protectedRanges": ["198.51.100.0/24"], "ownAddressLookup": true }
 *            (the blast-radius guard, api/blastRadius.ts; env SECSVC_WIDEST_PREFIX, SECSVC_PROTECTED_RANGES
 *            comma-separated, SECSVC_OWN_ADDRESS_LOOKUP=0)
 * }
 */

export type TlsConfig = TlsSettings;

export interface WorkerConfig {
	temporal: {
		address: string;
		namespace: string;
		taskQueue: string;
		tls?: boolean | TlsConfig;
		apiKey?: string;
		/** gRPC metadata from the profile or TEMPORAL_GRPC_META_* (e.g. Temporal Cloud's routing headers). */
		metadata?: Record<string, string>;
		/** Where the bearer token comes from (SECSVC_TEMPORAL_TOKEN_*: a cluster with Temporal's JWT authorization). */
		token?: TokenSource;
		/** Which setting gave each connection value (for error messages; never the values). */
		from?: Sources;
		/** Worker Deployment name (SECSVC_DEPLOYMENT_NAME; default `secsvc`); the build id comes from the workflow bundle. */
		deploymentName?: string;
		/** Worker Deployment Versioning (SECSVC_WORKER_VERSIONING=0 turns it off for clusters without it; default on). */
		workerVersioning?: boolean;
	};
	api: {
		baseUrl: string;
		appId: string;
		secret: string;
		tokenKind: 'app' | 'user';
		refreshToken?: string;
		authCode?: string;
		tokenStoreFile?: string;
		rateLimitCodes?: number[];
		retryableApiCodes?: number[];
		authFailureCodes?: number[];
		timeoutMs?: number;
		retries?: number;
		/** Largest API answer read, bytes (default 16 MiB, api/limits.ts MAX_RESPONSE_BYTES). */
		maxResponseBytes?: number;
		/** The cluster's request budget (rateLimitConfig.mts, docs/rate-budget.md); unset = none. */
		rateLimit?: RateLimitConfig;
	};
	/** Prometheus exporter (worker/src/process/metrics.mts); off when `address` is unset. */
	metrics?: { address?: string };
	/** The blast-radius guard's settings (api/blastRadius.ts). */
	guard?: GuardConfig;
	/** The identity provider and approver policy (worker/src/identity/config.mts); absent = compatibility mode. */
	identity?: IdentityConfig;
	/** The operator's opt-in to typed (unverified) approvals when there is no identity provider; default off. */
	unverifiedApprovals?: boolean;
}

export interface GuardConfig {
	widestPrefix: number;
	protectedRanges: { range: string; source: string }[];
	/** Read the site's own addresses before a block (api/ownAddresses.ts); default on. */
	ownAddressLookup: boolean;
}

/** The guard's settings (the CLI needs them without API credentials: `secsvc call` checks before starting anything). */
export function loadGuardConfig(env: NodeJS.ProcessEnv = process.env, file = env.SECSVC_CONFIG): GuardConfig {
	const g = (readJson(file).guard ?? {}) as {
		widestPrefix?: unknown;
		protectedRanges?: unknown;
		ownAddressLookup?: unknown;
	};
	const issues: { field: string; rule: string }[] = [];
	const rawPrefix = env.SECSVC_WIDEST_PREFIX ?? g.widestPrefix ?? DEFAULT_WIDEST_PREFIX;
	const widestPrefix = Number(rawPrefix);
	if (!Number.isInteger(widestPrefix) || widestPrefix < 0 || widestPrefix > 32 || String(rawPrefix).trim() === '')
		issues.push({ field: 'guard.widestPrefix (SECSVC_WIDEST_PREFIX)', rule: 'must be an integer 0–32' });
	const fromEnv = env.SECSVC_PROTECTED_RANGES !== undefined && env.SECSVC_PROTECTED_RANGES !== '';
	const field = fromEnv ? 'SECSVC_PROTECTED_RANGES' : 'guard.protectedRanges';
	const p = parseProtectedRanges(fromEnv ? env.SECSVC_PROTECTED_RANGES : (g.protectedRanges ?? []), `worker ${field}`);
	if (p.invalid.length)
		issues.push({
			field,
			rule: `${p.invalid
				.slice(0, 3)
				.map((x) => JSON.stringify(x.slice(0, 40)))
				.join(', ')}: must be IPv4 addresses, start-end ranges or CIDRs`,
		});
	const look = env.SECSVC_OWN_ADDRESS_LOOKUP;
	if (look !== undefined && look !== '' && !['0', '1', 'true', 'false'].includes(look))
		issues.push({ field: 'SECSVC_OWN_ADDRESS_LOOKUP', rule: 'must be 1 or 0 (true or false)' });
	if (issues.length) throw new ConfigError(issues);
	const ownAddressLookup =
		look !== undefined && look !== '' ? look === '1' || look === 'true' : g.ownAddressLookup !== false;
	return { widestPrefix, protectedRanges: p.ranges, ownAddressLookup };
}

export class ConfigError extends Error {
	constructor(readonly issues: { field: string; rule: string }[]) {
		super(`invalid worker configuration — ${issues.map((i) => `${i.field}: ${i.rule}`).join('; ')}`);
		this.name = 'ConfigError';
	}
}

export const DEFAULT_TASK_QUEUE = 'secsvc-runbooks';
export const DEFAULT_DEPLOYMENT_NAME = 'secsvc';

const codes = (s: string | undefined) =>
	s === undefined || s === ''
		? undefined
		: s
				.split(',')
				.map((x) => Number(x.trim()))
				.filter((n) => Number.isInteger(n));

/** Only the Temporal part (the CLI needs no API credentials). */
export function loadTemporalConfig(
	env: NodeJS.ProcessEnv = process.env,
	file = env.SECSVC_CONFIG,
): WorkerConfig['temporal'] {
	const j = readJson(file);
	const t = (j.temporal ?? {}) as Partial<WorkerConfig['temporal']>;
	let r: ReturnType<typeof resolveTemporal>;
	try {
		r = resolveTemporal(env, t);
	} catch (e) {
		if (e instanceof TemporalSettingError) throw new ConfigError([{ field: e.field, rule: e.rule }]);
		throw e;
	}
	const deploymentName = env.SECSVC_DEPLOYMENT_NAME || t.deploymentName || DEFAULT_DEPLOYMENT_NAME;
	// The server joins deployment name and build id as `name:build` (and `name.build` in older APIs).
	if (!/^[A-Za-z0-9_-]{1,200}$/.test(deploymentName))
		throw new ConfigError([
			{ field: 'temporal.deploymentName (SECSVC_DEPLOYMENT_NAME)', rule: 'must be 1–200 letters, digits, - or _' },
		]);
	const v = env.SECSVC_WORKER_VERSIONING;
	if (v !== undefined && v !== '' && !['0', '1', 'true', 'false'].includes(v))
		throw new ConfigError([{ field: 'SECSVC_WORKER_VERSIONING', rule: 'must be 1 or 0 (true or false)' }]);
	const workerVersioning = v !== undefined && v !== '' ? v === '1' || v === 'true' : t.workerVersioning !== false;
	let token: TokenSource | undefined;
	try {
		token = tokenSourceFrom(env);
	} catch (e) {
		if (e instanceof TokenSettingError) throw new ConfigError([{ field: e.field, rule: e.rule }]);
		throw e;
	}
	return {
		address: r.address ?? '127.0.0.1:7233',
		...(token ? { token } : {}),
		namespace: r.namespace ?? 'default',
		taskQueue: env.TEMPORAL_TASK_QUEUE ?? t.taskQueue ?? DEFAULT_TASK_QUEUE,
		tls: r.tls,
		apiKey: r.apiKey,
		...(r.metadata ? { metadata: r.metadata } : {}),
		from: r.from,
		deploymentName,
		workerVersioning,
	};
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, file = env.SECSVC_CONFIG): WorkerConfig {
	const j = readJson(file);
	const a = (j.api ?? {}) as Partial<WorkerConfig['api']> & { secretFile?: string };
	let secret = env.SECSVC_SECRET ?? a.secret;
	const secretFile = env.SECSVC_SECRET_FILE ?? a.secretFile;
	if (!secret && secretFile) secret = readFileSync(secretFile, 'utf8').trim();
	const api = {
		baseUrl: env.SECSVC_BASE_URL ?? a.baseUrl ?? '',
		appId: env.SECSVC_APP_ID ?? a.appId ?? '',
		secret: secret ?? '',
		tokenKind: (env.SECSVC_TOKEN_KIND ?? a.tokenKind ?? 'app') as 'app' | 'user',
		refreshToken: env.SECSVC_REFRESH_TOKEN ?? a.refreshToken,
		authCode: env.SECSVC_AUTH_CODE ?? a.authCode,
		tokenStoreFile: env.SECSVC_TOKEN_STORE ?? a.tokenStoreFile,
		rateLimitCodes: codes(env.SECSVC_RATE_LIMIT_CODES) ?? a.rateLimitCodes,
		retryableApiCodes: codes(env.SECSVC_RETRYABLE_API_CODES) ?? a.retryableApiCodes,
		authFailureCodes: codes(env.SECSVC_AUTH_FAILURE_CODES) ?? a.authFailureCodes,
		timeoutMs: env.SECSVC_TIMEOUT_MS ? Number(env.SECSVC_TIMEOUT_MS) : a.timeoutMs,
		retries: env.SECSVC_RETRIES ? Number(env.SECSVC_RETRIES) : a.retries,
		maxResponseBytes: env.SECSVC_MAX_RESPONSE_BYTES ? Number(env.SECSVC_MAX_RESPONSE_BYTES) : a.maxResponseBytes,
	};
	const issues: { field: string; rule: string }[] = [];
	if (!/^https?:\/\/[^\s]+$/.test(api.baseUrl))
		issues.push({ field: 'api.baseUrl (SECSVC_BASE_URL)', rule: 'is required and must be an http(s) URL' });
	if (
		api.maxResponseBytes !== undefined &&
		!(Number.isSafeInteger(api.maxResponseBytes) && api.maxResponseBytes >= 1024)
	)
		issues.push({
			field: 'api.maxResponseBytes (SECSVC_MAX_RESPONSE_BYTES)',
			rule: 'must be an integer number of bytes, at least 1024',
		});
	if (!api.appId) issues.push({ field: 'api.appId (SECSVC_APP_ID)', rule: 'is required' });
	if (!api.secret) issues.push({ field: 'api.secret (SECSVC_SECRET or SECSVC_SECRET_FILE)', rule: 'is required' });
	if (api.tokenKind !== 'app' && api.tokenKind !== 'user')
		issues.push({ field: 'api.tokenKind (SECSVC_TOKEN_KIND)', rule: "must be 'app' or 'user'" });
	if (api.tokenKind === 'user' && !api.refreshToken && !api.tokenStoreFile)
		issues.push({
			field: 'api.refreshToken (SECSVC_REFRESH_TOKEN)',
			rule: 'is required for user tokens (or a token store file holding one)',
		});
	const m = (j.metrics ?? {}) as { address?: string };
	const metricsAddress = env.SECSVC_METRICS_ADDRESS || m.address || undefined;
	if (metricsAddress !== undefined && !/^[^\s:]+:\d{1,5}$/.test(metricsAddress))
		issues.push({ field: 'metrics.address (SECSVC_METRICS_ADDRESS)', rule: 'must be host:port, e.g. 127.0.0.1:9464' });
	const rl = loadRateLimit(env, a.rateLimit);
	issues.push(...rl.issues);
	if (issues.length) throw new ConfigError(issues);
	if (rl.config) Object.assign(api, { rateLimit: rl.config });
	const identity = loadIdentityConfig(env, file);
	const unverifiedApprovals = unverifiedApprovalsOptIn(env, file);
	return {
		...(unverifiedApprovals ? { unverifiedApprovals } : {}),
		temporal: loadTemporalConfig(env, file),
		api,
		guard: loadGuardConfig(env, file),
		...(identity ? { identity } : {}),
		...(metricsAddress ? { metrics: { address: metricsAddress } } : {}),
	};
}

function readJson(file: string | undefined): Record<string, unknown> {
	if (!file) return {};
	try {
		return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
	} catch (e) {
		throw new ConfigError([{ field: `config file ${file}`, rule: `must be readable JSON (${(e as Error).message})` }]);
	}
}

/**
 * Connection options for @temporalio/client Connection and @temporalio/worker NativeConnection. The TLS files are
 * read and checked here: a bad one is a ConfigError naming its setting, before anything connects.
 */
export function connectionOptions(t: WorkerConfig['temporal']) {
	let tls: ReturnType<typeof tlsMaterial>;
	try {
		tls = tlsMaterial(t.tls, t.from ?? {});
	} catch (e) {
		if (e instanceof TemporalSettingError) throw new ConfigError([{ field: e.field, rule: e.rule }]);
		throw e;
	}
	return { address: t.address, tls, apiKey: t.apiKey, ...(t.metadata ? { metadata: t.metadata } : {}) };
}
