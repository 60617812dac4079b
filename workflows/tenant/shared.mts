// Tenants: one customer the app acts for, its token owned by ONE entity workflow `tenant-<customer_id>`
// for the whole cluster. Definitions shared by the workflow, the worker (token requests, renewal activity) and the CLI.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { parseIpv4Entry } from '../../api/catalog/ipv4.ts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';

/**
 * Marks a value that carries a secret: a JSON object whose FIRST key is `$sealed`. The payload codec
 * (worker/src/temporal/codec.mts) encrypts exactly these payloads; nothing else changes on the wire or in history.
 * Always build secret-carrying workflow inputs, update arguments/results and activity inputs/results with it.
 */
export type Sealed<T> = { $sealed: 1 } & T;
export const sealed = <T extends object>(v: T): Sealed<T> => ({ $sealed: 1, ...v }) as Sealed<T>;
/**
 * A sealed value for ONE tenant's token readers: the codec encrypts it with that tenant's token key (derived from the
 * payload key and the customer id), which an n8n credential of that customer holds (docs/worker/tenants.md "Tenants in
 * n8n"). Only access-token grants are sealed this way; refresh tokens never are.
 */
export const sealedFor = <T extends object>(customerId: string, v: T): Sealed<T> & { $tenant: string } =>
	({ $sealed: 1, $tenant: customerId, ...v }) as Sealed<T> & { $tenant: string };

/** How a tenant's token is obtained: a user token from the install flow, or the app token (the operator says so). */
export type TenantKind = 'user' | 'app';
export type TenantStatus = 'ok' | 'needs-reinstall' | 'removed';

export const tenantWorkflowId = (customerId: string) => `tenant-${customerId}`;
export const TENANT_WORKFLOW = WORKFLOW_TYPE.tenant;
export const RENEW_ACTIVITY = 'tenants.renew';
/**
 * The workflow's bounds for a renewal (activitiesRenew.mts): a live attempt beats every 3 s through the worker's Temporal client
 * (stored at once, not throttled like the SDK's heartbeats to 0.8 × the timeout), so only a dead one misses the
 * heartbeat timeout; the start-to-close bound is a backstop far past one attempt (budget wait + HTTP timeout).
 */
export const RENEW_HEARTBEAT_TIMEOUT = '30 seconds';
export const RENEW_START_TO_CLOSE = '5 minutes';
/** Task queue of the tenant workflows and their renewals: polled only by workers that hold the payload key. */
export const tenantQueueFor = (taskQueue: string) => `${taskQueue}-tenants`;

export interface TenantState {
	customerId: string;
	kind: TenantKind;
	sites: string[];
	/**
	 * The customer's own networks and anything else never to block, declared by the operator at install (the spec
	 * shows no address of a site's networks and hosts): the blast-radius guard's protected ranges for this tenant.
	 */
	protectedRanges?: string[];
	status: TenantStatus;
	refreshToken?: string;
	accessToken?: string;
	/** Epoch ms at which the service stops accepting the access token (conservative: counted from the request). */
	expiresAt?: number;
	/** Epoch ms from which a request for a token renews it (expiresAt - min(60 s, lifetime / 5)). */
	renewAt?: number;
	/** Increases with every new access token; a worker names the generation the service rejected. */
	generation: number;
	installedAt: number;
	lastRenewal?: number;
	renewals: number;
	/** Why the tenant needs a re-install (the service's message; never a secret). */
	problem?: string;
	/** The install's connect parameters, kept (sealed with the state) for an automatic re-install (ReinstallPolicy). */
	connect?: ConnectParams;
	/** Refresh tokens the service refused, and how many of those lock-outs an automatic re-install ended. */
	lockouts?: number;
	autoReinstalls?: number;
	/** The last lock-out: when, why (never a secret) and whether it was re-installed automatically. */
	lastLockout?: { at: number; problem: string; reinstalled: boolean };
}

/** What GET /oauth/connect was sent at install besides the app's own id and a fresh state (§4.1, §5.3). */
export interface ConnectParams {
	redirectUri: string;
	xspe?: string;
}

/**
 * When a worker re-installs a tenant whose refresh token the service refused, by itself (SECSVC_TENANT_REINSTALL,
 * docs/worker/tenants.md): `lost-answer` (default) only when an earlier attempt of the same renewal sent that refresh
 * token and its answer never reached the workflow (our own loss, not the customer's or another holder's doing);
 * `always` on every refusal; `off` never (a person runs the install again).
 */
export type ReinstallPolicy = 'off' | 'lost-answer' | 'always';
export const REINSTALL_POLICIES: readonly ReinstallPolicy[] = ['off', 'lost-answer', 'always'];

/** What `secsvc tenants list/show` print: no secret. */
export interface TenantView {
	customerId: string;
	kind: TenantKind;
	sites: string[];
	protectedRanges?: string[];
	status: TenantStatus;
	validUntil?: string;
	lastRenewal?: string;
	installedAt: string;
	renewals: number;
	generation: number;
	problem?: string;
	/** Install parameters kept: an automatic re-install is possible (never the parameters themselves). */
	reinstallable: boolean;
	lockouts: number;
	autoReinstalls: number;
	lastLockout?: { at: string; problem: string; reinstalled: boolean };
}

export interface TokenRequest {
	/** The generation the service refused (answered with an auth-failure code): renew unless already newer. */
	rejectedGeneration?: number;
}
export type TokenGrant = Sealed<{
	accessToken: string;
	expiresAt: number;
	renewAt: number;
	generation: number;
	/** The tenant's declared protected ranges, when any: an n8n credential of the customer guards with them too. */
	protectedRanges?: string[];
}>;

/** A token record from the install flow (authorization code exchanged) or, for app tenants, nothing. */
export type InstallRequest = Sealed<{
	kind: TenantKind;
	sites: string[];
	/** Replaces the tenant's protected ranges when given; a re-install without them (the entrance) keeps them. */
	protectedRanges?: string[];
	accessToken?: string;
	refreshToken?: string;
	/** Epoch ms at which the exchange was SENT (the lifetime counts from there). */
	issuedAt?: number;
	expiresIn?: number;
	/** The connect parameters of this install (kept for an automatic re-install); absent: the kept ones stay. */
	connect?: ConnectParams;
}>;

export type RenewInput = Sealed<{
	customerId: string;
	kind: TenantKind;
	refreshToken?: string;
	connect?: ConnectParams;
}>;
export type RenewResult = Sealed<{
	/** The service refused the refresh token and the worker re-installed the tenant: the refusal (never a secret). */
	reinstalled?: string;
	accessToken: string;
	expiresIn: number;
	refreshToken?: string;
	/** Epoch ms: request sent / answer read (the window in which a crash loses a rotated refresh token starts here). */
	sentAt: number;
	answeredAt: number;
}>;

export const tokenUpdate = defineUpdate<TokenGrant, [TokenRequest]>('token');
export const installUpdate = defineUpdate<TenantView, [InstallRequest]>('install');
export const removeUpdate = defineUpdate<TenantView, []>('remove');
export const viewQuery = defineQuery<TenantView>('view');

/** Renew this long before expiry: 60 s, or a fifth of the token's lifetime when that is shorter. */
export const renewBeforeMs = (lifetimeMs: number) => Math.min(60_000, Math.floor(lifetimeMs / 5));

/** The state with a new access token (and the rotated refresh token, if any): the lifetime counts from `sentAt`. */
export function withToken(
	s: TenantState,
	t: { accessToken: string; expiresIn: number; sentAt: number; refreshToken?: string },
): TenantState {
	const lifetime = t.expiresIn * 1000;
	const expiresAt = t.sentAt + lifetime;
	return {
		...s,
		accessToken: t.accessToken,
		expiresAt,
		renewAt: expiresAt - renewBeforeMs(lifetime),
		...(t.refreshToken ? { refreshToken: t.refreshToken } : {}),
		generation: s.generation + 1,
	};
}

export const MAX_SITES = 10_000;
export const MAX_PROTECTED = 1000;
const ID = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/;
/** Input rules shared by the entrance, the CLI and the workflow's validators: field + rule, nothing sent. */
export function tenantInputProblem(p: {
	customerId?: unknown;
	sites?: unknown;
	kind?: unknown;
	protectedRanges?: unknown;
}): string | undefined {
	if (p.customerId !== undefined && (typeof p.customerId !== 'string' || !ID.test(p.customerId)))
		return 'customer_id: must be 1-128 characters A-Z a-z 0-9 . _ ~ -, starting with a letter or digit';
	if (p.kind !== undefined && p.kind !== 'user' && p.kind !== 'app') return "kind: must be 'user' or 'app'";
	if (p.sites !== undefined) {
		if (!Array.isArray(p.sites)) return 'sites: must be a list of site ids';
		if (p.sites.length > MAX_SITES) return `sites: at most ${MAX_SITES} sites`;
		const bad = p.sites.findIndex((s) => typeof s !== 'string' || !ID.test(s));
		if (bad >= 0) return `sites[${bad}]: must be 1-128 characters A-Z a-z 0-9 . _ ~ -, starting with a letter or digit`;
	}
	const pr = p.protectedRanges;
	if (pr !== undefined) {
		if (!Array.isArray(pr)) return 'protectedRanges: must be a list of IPv4 addresses, start-end ranges or CIDRs';
		if (pr.length > MAX_PROTECTED) return `protectedRanges: at most ${MAX_PROTECTED} entries`;
		const bad = pr.findIndex((r) => typeof r !== 'string' || r.length > 64 || !parseIpv4Entry(r));
		if (bad >= 0) return `protectedRanges[${bad}]: must be an IPv4 address, start-end range or CIDR`;
	}
	return undefined;
}

export function viewOf(s: TenantState): TenantView {
	const iso = (ms?: number) => (ms === undefined ? undefined : new Date(ms).toISOString());
	return {
		customerId: s.customerId,
		kind: s.kind,
		sites: s.sites,
		...(s.protectedRanges?.length ? { protectedRanges: s.protectedRanges } : {}),
		status: s.status,
		validUntil: iso(s.expiresAt),
		lastRenewal: iso(s.lastRenewal),
		installedAt: iso(s.installedAt) as string,
		renewals: s.renewals,
		generation: s.generation,
		...(s.problem ? { problem: s.problem } : {}),
		reinstallable: s.connect !== undefined,
		lockouts: s.lockouts ?? 0,
		autoReinstalls: s.autoReinstalls ?? 0,
		...(s.lastLockout ? { lastLockout: { ...s.lastLockout, at: iso(s.lastLockout.at) as string } } : {}),
	};
}
