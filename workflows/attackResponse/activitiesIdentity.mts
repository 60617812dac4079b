import { ApplicationFailure } from '@temporalio/common';
import { planApproversProblem, type ApproverPolicy, type VerifiedIdentity } from '../../api/decideRules.ts';
import { IDENTITY_POLICY_ACTIVITY, IDENTITY_VERIFY_ACTIVITY, type PolicyInput, type VerifyInput } from './identity.mts';
import { NO_PROVIDER_SOURCE, policyFor, type IdentityConfig } from '../../worker/src/identity/config.mts';
import { createVerifier, ProofRefused } from '../../worker/src/identity/verify.mts';

/**
 * The runbook's identity steps, run as LOCAL activities (I/O outside the workflow sandbox; their results, never the
 * tokens, are recorded in history — the tokens arrive sealed, docs/approvals.md):
 *  - `identity.policy`: the operator's approver policy for the plan's customer (no provider and no opt-in to
 *    unverified approvals: a plan that requires approval is refused), the plan's approvers checked against
 *    it (a plan may only narrow it; someone must be able to approve), the starter's proof verified;
 *  - `identity.verify`: a decision's ID token verified against the provider and bound to the gate's nonce.
 * Refusals are non-retryable ValidationErrors `field: rule`.
 */
export function createIdentityActivities(cfg: IdentityConfig | undefined, unverified = false) {
	const verify = cfg ? createVerifier(cfg) : undefined;
	const refuse = (e: unknown): never => {
		if (e instanceof ProofRefused) throw ApplicationFailure.nonRetryable(e.message, 'ValidationError');
		throw e;
	};
	return {
		async [IDENTITY_POLICY_ACTIVITY](
			input: PolicyInput,
		): Promise<{ policy: ApproverPolicy; starter?: VerifiedIdentity }> {
			const policy = policyFor(cfg, input.customerId, unverified);
			if (policy.source === NO_PROVIDER_SOURCE && input.required)
				throw ApplicationFailure.nonRetryable(
					'approval: this worker cannot prove who approves: it has no identity provider (SECSVC_OIDC_ISSUER) and unverified approvals are off (SECSVC_UNVERIFIED_APPROVALS=1 lets a typed name decide, recorded unverified)',
					'ValidationError',
				);
			let starter: VerifiedIdentity | undefined;
			if (input.starter?.idToken) {
				if (!verify)
					throw ApplicationFailure.nonRetryable(
						"startedBy: this worker has no identity provider configured to verify the starter's proof",
						'ValidationError',
					);
				starter = await verify(input.starter.idToken).catch((e) =>
					refuse(e instanceof ProofRefused ? new ProofRefused(`startedBy ${e.message}`) : e),
				);
			} else if (input.parent) starter = { verified: 'workflow', name: input.parent };
			else if (policy.mode === 'oidc' && input.required)
				throw ApplicationFailure.nonRetryable(
					"startedBy: a runbook that requires approval must be started with the starter's ID token (separation of duties: the starter may not approve it)",
					'ValidationError',
				);
			const problem = planApproversProblem(input.approvers, input.required, policy, starter);
			if (problem) throw ApplicationFailure.nonRetryable(problem, 'ValidationError');
			return { policy, ...(starter ? { starter } : {}) };
		},
		async [IDENTITY_VERIFY_ACTIVITY](input: VerifyInput): Promise<VerifiedIdentity> {
			if (!verify)
				throw ApplicationFailure.nonRetryable(
					'proof: this worker has no identity provider configured to verify it',
					'ValidationError',
				);
			return verify(input.idToken, input.nonce).catch(refuse);
		},
	};
}
