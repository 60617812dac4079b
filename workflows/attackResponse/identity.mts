/**
 * Names and inputs of the runbook's identity local activities (workflows/attackResponse/activitiesIdentity.mts), shared by the runbook and
 * the worker. Tokens travel only inside sealed values (`$sealed` first: the payload codec encrypts them in history).
 */
import type { Sealed } from '../tenant/shared.mts';

export const IDENTITY_POLICY_ACTIVITY = 'identity.policy';
export const IDENTITY_VERIFY_ACTIVITY = 'identity.verify';

export interface PolicyInput {
	customerId: string;
	approvers: string[];
	required: boolean;
	/** The starter's ID token (sealed), from the start input's `startedBy`. */
	starter?: Sealed<{ idToken: string }>;
	/** The workflow that started this runbook (attack watch, fleet): a playbook, not a person. */
	parent?: string;
}

export type VerifyInput = Sealed<{ idToken: string; nonce: string }>;
