import { readFileSync } from 'node:fs';
import type { ApproverPolicy } from '../../../api/decideRules.ts';

/**
 * The identity provider and the approver policy (docs/approvals.md), from the JSON config (`identity`) and the
 * environment (wins). No issuer configured: no typed name decides, unless the operator opted in to unverified
 * approvals (unverifiedApprovalsOptIn: compatibility mode, typed `by` recorded "unverified").
 *
 *   "identity": { "issuer": "https://idp.example", "audience": ["secsvc-cli", "secsvc-n8n"], "clientId": "secsvc-cli",
 *                 "identityClaim": "email", "groupsClaim": "groups", "clockSkewSeconds": 60, "jwksCacheSeconds": 600,
 *                 "approverGroups": ["soc-oncall"], "approvers": ["lead@example.com"],
 *                 "tenants": { "<customer_id>": { "approverGroups": ["acme-soc"], "approvers": [] } } }
 */
export interface IdentityConfig {
	issuer: string;
	/** The `aud` values an ID token may carry: the client ids the SOC registered for secsvc (CLI, n8n login). */
	audience: string[];
	/** The client id `secsvc approve` logs in with (device code); default: the first audience. */
	clientId: string;
	identityClaim: string;
	groupsClaim: string;
	clockSkewSeconds: number;
	jwksCacheSeconds: number;
	approverGroups: string[];
	approvers: string[];
	tenants: Record<string, { approverGroups: string[]; approvers: string[] }>;
}

export class IdentityConfigError extends Error {
	constructor(field: string, rule: string) {
		super(`${field}: ${rule}`);
		this.name = 'ConfigError';
	}
}

const list = (v: unknown, field: string): string[] => {
	const a =
		typeof v === 'string'
			? v
					.split(',')
					.map((s) => s.trim())
					.filter(Boolean)
			: (v ?? []);
	if (!Array.isArray(a) || a.some((s) => typeof s !== 'string' || !s.trim() || s.length > 200) || a.length > 100)
		throw new IdentityConfigError(field, 'must be a list of at most 100 names (comma-separated in the environment)');
	return a.map((s: string) => s.trim());
};
const seconds = (v: unknown, field: string, dflt: number, max: number): number => {
	if (v === undefined || v === '') return dflt;
	const n = Number(v);
	if (!Number.isInteger(n) || n < 0 || n > max)
		throw new IdentityConfigError(field, `must be whole seconds from 0 to ${max}`);
	return n;
};

/** The identity configuration, or undefined (compatibility mode). Every problem names its setting. */
export function loadIdentityConfig(
	env: NodeJS.ProcessEnv = process.env,
	file = env.SECSVC_CONFIG,
): IdentityConfig | undefined {
	let j: Record<string, unknown> = {};
	if (file) {
		try {
			j = ((JSON.parse(readFileSync(file, 'utf8')) as { identity?: Record<string, unknown> }).identity ?? {}) as Record<
				string,
				unknown
			>;
		} catch {
			j = {}; // the worker's own config loader reports an unreadable file
		}
	}
	const issuer = (env.SECSVC_OIDC_ISSUER ?? (j.issuer as string | undefined) ?? '').replace(/\/+$/, '');
	if (!issuer) return undefined;
	let u: URL;
	try {
		u = new URL(issuer);
	} catch {
		throw new IdentityConfigError('SECSVC_OIDC_ISSUER (identity.issuer)', "must be the provider's issuer URL");
	}
	const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
	if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback))
		throw new IdentityConfigError('SECSVC_OIDC_ISSUER (identity.issuer)', 'must be https (http only on loopback)');
	const audience = list(env.SECSVC_OIDC_AUDIENCE ?? j.audience, 'SECSVC_OIDC_AUDIENCE (identity.audience)');
	if (!audience.length)
		throw new IdentityConfigError(
			'SECSVC_OIDC_AUDIENCE (identity.audience)',
			'is required with an issuer (the client id registered for secsvc)',
		);
	const tenantsRaw = (j.tenants ?? {}) as Record<string, { approverGroups?: unknown; approvers?: unknown }>;
	const tenants: IdentityConfig['tenants'] = {};
	for (const [id, t] of Object.entries(tenantsRaw))
		tenants[id] = {
			approverGroups: list(t?.approverGroups, `identity.tenants.${id}.approverGroups`),
			approvers: list(t?.approvers, `identity.tenants.${id}.approvers`),
		};
	return {
		issuer,
		audience,
		clientId: env.SECSVC_OIDC_CLIENT_ID ?? (j.clientId as string | undefined) ?? audience[0],
		identityClaim: env.SECSVC_OIDC_IDENTITY_CLAIM ?? (j.identityClaim as string | undefined) ?? 'email',
		groupsClaim: env.SECSVC_OIDC_GROUPS_CLAIM ?? (j.groupsClaim as string | undefined) ?? 'groups',
		clockSkewSeconds: seconds(
			env.SECSVC_OIDC_CLOCK_SKEW ?? j.clockSkewSeconds,
			'SECSVC_OIDC_CLOCK_SKEW (identity.clockSkewSeconds)',
			60,
			600,
		),
		jwksCacheSeconds: seconds(
			env.SECSVC_OIDC_JWKS_CACHE ?? j.jwksCacheSeconds,
			'SECSVC_OIDC_JWKS_CACHE (identity.jwksCacheSeconds)',
			600,
			86400,
		),
		approverGroups: list(
			env.SECSVC_APPROVER_GROUPS ?? j.approverGroups,
			'SECSVC_APPROVER_GROUPS (identity.approverGroups)',
		),
		approvers: list(env.SECSVC_APPROVERS ?? j.approvers, 'SECSVC_APPROVERS (identity.approvers)'),
		tenants,
	};
}

/**
 * Whether the operator opted in to unverified approvals (a typed name decides, recorded `unverified`):
 * SECSVC_UNVERIFIED_APPROVALS=1 or `identity.unverifiedApprovals: true`. Off by default: without an identity
 * provider a runbook that requires approval is refused at start. Ignored when an issuer is configured.
 */
export function unverifiedApprovalsOptIn(env: NodeJS.ProcessEnv = process.env, file = env.SECSVC_CONFIG): boolean {
	const v = env.SECSVC_UNVERIFIED_APPROVALS;
	if (v !== undefined && v !== '') {
		if (!['0', '1', 'true', 'false'].includes(v))
			throw new IdentityConfigError('SECSVC_UNVERIFIED_APPROVALS', 'must be 1 or 0 (true or false)');
		return v === '1' || v === 'true';
	}
	if (!file) return false;
	try {
		const j = JSON.parse(readFileSync(file, 'utf8')) as { identity?: { unverifiedApprovals?: unknown } };
		return j.identity?.unverifiedApprovals === true;
	} catch {
		return false; // the worker's own config loader reports an unreadable file
	}
}

/** Where an approver policy without a provider says it comes from (the refusals name it). */
export const NO_PROVIDER_SOURCE =
	'no identity provider (SECSVC_OIDC_ISSUER) and unverified approvals off (SECSVC_UNVERIFIED_APPROVALS)';

/**
 * The approver policy for a customer: its tenant's entry when there is one, else the worker's. Without a provider:
 * compatibility mode when the operator opted in, else a policy that nobody can satisfy (no typed name decides).
 */
export function policyFor(cfg: IdentityConfig | undefined, customerId: string, unverified = false): ApproverPolicy {
	if (!cfg)
		return unverified
			? { mode: 'unverified', groups: [], identities: [], source: 'compatibility mode (no identity provider)' }
			: { mode: 'oidc', groups: [], identities: [], source: NO_PROVIDER_SOURCE };
	const t = cfg.tenants[customerId];
	return t
		? {
				mode: 'oidc',
				issuer: cfg.issuer,
				groups: t.approverGroups,
				identities: t.approvers,
				source: `tenant ${customerId}`,
			}
		: { mode: 'oidc', issuer: cfg.issuer, groups: cfg.approverGroups, identities: cfg.approvers, source: 'worker' };
}

/** The worker's start-up line about approvals: a loud warning when typed names decide, a note when nothing can. */
export function approvalsNotice(cfg: IdentityConfig | undefined, unverified: boolean): string {
	if (cfg)
		return unverified
			? `approvals: proven by ${cfg.issuer} (SECSVC_UNVERIFIED_APPROVALS is ignored: an identity provider is configured)`
			: `approvals: proven by ${cfg.issuer}`;
	if (unverified)
		return [
			'WARNING: UNVERIFIED APPROVALS ARE ON (SECSVC_UNVERIFIED_APPROVALS): a typed name decides a runbook and nobody',
			"proves who it is: anyone who can reach this namespace can approve as anyone. Every decision is recorded 'unverified'.",
			'Configure SECSVC_OIDC_ISSUER (docs/approvals.md) and turn this off.',
		].join(' ');
	return 'approvals: no identity provider (SECSVC_OIDC_ISSUER): runbooks that require approval are refused at start (docs/approvals.md)';
}
