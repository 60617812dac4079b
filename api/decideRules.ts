/**
 * Approvals: the rules of a `decide` Update, shared by the runbook (workflows/attackResponse/approval.mts adds the
 * state rules: already decided, not waiting) and the n8n Runbook node, which checks the input rules before sending.
 * Who may decide (docs/approvals.md): the operator's approver policy (worker configuration), narrowed by the plan's
 * `approval.approvers`, never the person who started the runbook; with an identity provider configured the
 * identity is the one its ID token proves, verified by the worker. Pure: no imports.
 */
export type DecideVia = 'cli' | 'n8n' | 'http' | 'api';
export const DECIDE_VIAS: readonly DecideVia[] = ['cli', 'n8n', 'http', 'api'];
/** Longest ID token taken (a JWT with a generous groups claim). */
export const MAX_ID_TOKEN_CHARS = 16384;
/** A plan's approvers entry naming a group of the identity provider instead of a person. */
export const GROUP_PREFIX = 'group:';

export interface DecideRequest {
	approved: boolean;
	/** Who decides: typed (compatibility mode, recorded "unverified"); with an identity provider the ID token names the person. */
	by?: string;
	reason?: string;
	/** Which interface the decision came through (recorded in the audit and the result). */
	via?: DecideVia;
	/** The decider's OpenID Connect ID token (its nonce = the runbook's gate nonce); only inside a sealed request. */
	idToken?: string;
	/** Set when the request is a sealed payload (`$sealed` first: the payload codec encrypts it in history). */
	$sealed?: 1;
}

/** Who decided, as the worker established it: never the token itself. */
export interface VerifiedIdentity {
	/** `oidc`: an ID token verified by the worker; `unverified`: typed (no identity provider configured); `workflow`: started by a playbook. */
	verified: 'oidc' | 'unverified' | 'workflow';
	/** The person: the configured identity claim (e.g. email) or the typed `by`. */
	name: string;
	/** Which claim gave the name (e.g. `email`). */
	claim?: string;
	subject?: string;
	issuer?: string;
	groups?: string[];
	/** SHA-256 of the token (hex, first 16 characters): tells two proofs apart in the audit without keeping one. */
	tokenHash?: string;
	/** When the token was issued / expires (ISO). */
	issuedAt?: string;
	expiresAt?: string;
}

/** The operator's approver policy (worker configuration, per tenant where tenants exist). */
export interface ApproverPolicy {
	/** `oidc`: decisions must carry an ID token of `issuer`; `unverified`: compatibility mode (typed `by`). */
	mode: 'oidc' | 'unverified';
	issuer?: string;
	/** Groups (the groups claim) whose members may decide. */
	groups: string[];
	/** People (the identity claim) who may decide besides the groups. */
	identities: string[];
	/** Where the policy comes from (`worker` or `tenant <customer_id>`), for refusals. */
	source: string;
}

/** The first problem of a decision's input as `field: rule`, or undefined. */
export function decideInputProblem(req: unknown, mode: ApproverPolicy['mode'] = 'unverified'): string | undefined {
	if (!req || typeof req !== 'object') return 'decision: must be an object';
	const r = req as Partial<DecideRequest>;
	if (typeof r.approved !== 'boolean') return 'approved: must be true or false';
	if (r.idToken !== undefined) {
		if (
			typeof r.idToken !== 'string' ||
			!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(r.idToken) ||
			r.idToken.length > MAX_ID_TOKEN_CHARS
		)
			return `proof: must be an ID token (a signed JWT of at most ${MAX_ID_TOKEN_CHARS} characters)`;
		if (r.$sealed !== 1)
			return 'proof: must travel in a sealed request (the payload codec keeps it out of the history in plain text)';
		if (mode !== 'oidc') return 'proof: this worker has no identity provider configured to verify it';
	} else if (mode === 'oidc')
		return 'proof: an ID token from the identity provider is required (this worker refuses unverified decisions)';
	if (r.by !== undefined || mode !== 'oidc')
		if (typeof r.by !== 'string' || !r.by.trim() || r.by.length > 200)
			return 'by: is required (the identity of the person deciding, at most 200 characters)';
	if (r.via !== undefined && !DECIDE_VIAS.includes(r.via)) return `via: must be one of ${DECIDE_VIAS.join(', ')}`;
	if (!r.approved && (typeof r.reason !== 'string' || !r.reason.trim())) return 'reason: is required to reject';
	if (r.reason !== undefined && (typeof r.reason !== 'string' || r.reason.length > 1000))
		return 'reason: must be text of at most 1000 characters';
	return undefined;
}

const sameIdentity = (a: VerifiedIdentity, b: VerifiedIdentity) =>
	a.subject && b.subject && a.issuer === b.issuer
		? a.subject === b.subject
		: a.name.trim().toLowerCase() === b.name.trim().toLowerCase();

const inPolicy = (who: VerifiedIdentity, p: ApproverPolicy) =>
	p.identities.includes(who.name) || (who.groups ?? []).some((g) => p.groups.includes(g));
const inPlan = (who: VerifiedIdentity, approvers: string[]) =>
	approvers.includes(who.name) || (who.groups ?? []).some((g) => approvers.includes(GROUP_PREFIX + g));

/**
 * Whether this person may take this decision, as `field: rule` or undefined: the operator's policy (oidc mode),
 * the plan's narrowing (`approval.approvers`: people, or `group:NAME`), separation of duties (the starter may not
 * approve their own runbook; rejecting, which changes nothing, stays open to them).
 */
export function deciderProblem(
	who: VerifiedIdentity,
	approved: boolean,
	policy: ApproverPolicy,
	planApprovers: string[],
	starter?: VerifiedIdentity,
): string | undefined {
	if (policy.mode === 'oidc') {
		if (who.verified !== 'oidc') return 'proof: this worker refuses unverified decisions';
		if (!inPolicy(who, policy))
			return `approver: ${who.name} is in none of the operator's approver groups (${policy.groups.join(', ') || 'none'}${policy.identities.length ? `; people: ${policy.identities.join(', ')}` : ''}; ${policy.source} policy)`;
	}
	if (planApprovers.length && !inPlan(who, planApprovers)) return `by: ${who.name} is not in approval.approvers`;
	if (approved && starter && starter.verified !== 'workflow' && sameIdentity(who, starter))
		return `approver: ${who.name} started this runbook and cannot approve it (separation of duties)`;
	return undefined;
}

/**
 * Start-time rule of a plan's approvers under the operator's policy (oidc mode): a plan may only narrow the
 * operator's approvers, and a plan that requires approval must leave somebody able to approve. `field: rule` or undefined.
 */
export function planApproversProblem(
	planApprovers: string[],
	required: boolean,
	policy: ApproverPolicy,
	starter?: VerifiedIdentity,
): string | undefined {
	if (policy.mode !== 'oidc') return undefined;
	for (const [i, a] of planApprovers.entries()) {
		if (a.startsWith(GROUP_PREFIX)) {
			if (!policy.groups.includes(a.slice(GROUP_PREFIX.length)))
				return `approval.approvers.${i}: ${a} is not an approver group of this worker (${policy.groups.join(', ') || 'none'}; ${policy.source} policy): a plan may only narrow the operator's approvers`;
		} else if (!policy.groups.length && !policy.identities.includes(a))
			return `approval.approvers.${i}: ${a} is not an approver of this worker (${policy.source} policy): a plan may only narrow the operator's approvers`;
	}
	if (!required) return undefined;
	if (!policy.groups.length && !policy.identities.length)
		return `approval: no approver policy can approve: the worker's approver groups are empty (SECSVC_APPROVER_GROUPS / identity.approverGroups; ${policy.source} policy)`;
	if (
		starter &&
		planApprovers.length &&
		planApprovers.every(
			(a) => !a.startsWith(GROUP_PREFIX) && a.trim().toLowerCase() === starter.name.trim().toLowerCase(),
		)
	)
		return `approval.approvers: only ${starter.name}, who starts this runbook, could approve it (separation of duties)`;
	return undefined;
}

/** How a decision's identity reads in the audit, the report and the CLI: `alice@soc (verified: oidc https://idp …, sub 123)`. */
export function identityText(who: VerifiedIdentity | undefined): string {
	if (!who) return 'unverified';
	if (who.verified === 'oidc')
		return `verified: oidc ${who.issuer ?? ''} ${who.claim ?? 'name'}, sub ${who.subject ?? '?'}`.replace('  ', ' ');
	return who.verified === 'workflow' ? 'started by a playbook' : 'unverified: typed, no identity provider';
}
