import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import {
	RUNBOOK_QUERY,
	RUNBOOK_SIGNAL,
	RUNBOOK_UPDATE,
	type AbortSignalArgs,
	type ApproveSignalArgs,
	type AttackResponseResult,
	type AuditEntry,
	type Change,
	type DecideRequest,
	type DecideResult,
	type ExtendCooldownArgs,
	type RunbookState,
} from '../../api/runbook/contract.ts';

/** The attack response's signals, queries and Update, built from the contract's names (api/runbook/contract.ts). */

export const approveSignal = defineSignal<[ApproveSignalArgs]>(RUNBOOK_SIGNAL.approve);
export const abortSignal = defineSignal<[AbortSignalArgs]>(RUNBOOK_SIGNAL.abort);
export const extendCooldownSignal = defineSignal<[ExtendCooldownArgs]>(RUNBOOK_SIGNAL.extendCooldown);

export const stateQuery = defineQuery<RunbookState>(RUNBOOK_QUERY.state);
export const planQuery = defineQuery<unknown>(RUNBOOK_QUERY.plan);
export const changesQuery = defineQuery<Change[]>(RUNBOOK_QUERY.changes);
export const auditQuery = defineQuery<AuditEntry[]>(RUNBOOK_QUERY.audit);
/** The result once the runbook has finished (also after a cancellation, whose failure carries no result). */
export const resultQuery = defineQuery<AttackResponseResult | undefined>(RUNBOOK_QUERY.result);

/** Approve / reject: the caller gets the decision back, or the validator's refusal (attackResponse/approval.mts). */
export const decideUpdate = defineUpdate<DecideResult, [DecideRequest]>(RUNBOOK_UPDATE.decide);
