import type { VerifiedIdentity } from '../api/decideRules.ts';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Hold } from './coordination.mts';

/** Signals, queries and result types shared by the workflows, the CLI and the tests. No secrets anywhere. */

export const approveSignal = defineSignal<[{ approved: boolean; by?: string; reason?: string }]>('approve');
export const abortSignal = defineSignal<[{ by?: string; reason?: string }]>('abort');
export const extendCooldownSignal = defineSignal<[{ seconds: number; by?: string }]>('extendCooldown');

export const stateQuery = defineQuery<RunbookState>('state');
export const planQuery = defineQuery<unknown>('plan');
export const changesQuery = defineQuery<Change[]>('changes');
export const auditQuery = defineQuery<AuditEntry[]>('audit');
/** The result once the runbook has finished (also after a cancellation, whose failure carries no result). */
export const resultQuery = defineQuery<AttackResponseResult | undefined>('result');

export type Phase =
	| 'validating'
	| 'snapshot'
	| 'planning'
	| 'awaiting-approval'
	| 'tightening'
	| 'blacklisting'
	| 'rate-limiting'
	| 'waiting'
	| 'reverting'
	| 'done';

export type ChangeKind = 'detectionMode' | 'detectionPolicy' | 'blacklistAdd' | 'ipAuth' | 'switch';

export interface Change {
	id: string;
	kind: ChangeKind;
	what: string;
	/** Path parameters of the setting (site, domain-port, customer …). */
	target: Record<string, string>;
	before: unknown;
	after: unknown;
	why: string;
	/** planned → pending (write sent, outcome unknown) → applied; then restored / unchanged / conflict / revert-failed. */
	status: 'planned' | 'pending' | 'applied' | 'restored' | 'unchanged' | 'conflict' | 'revert-failed';
	appliedAt?: string;
	revertedAt?: string;
	/** Times the runbook wrote its value again during the wait because the setting was back at the snapshot's value. */
	reapplied?: number;
	/** On conflict: the operator's value that was kept. */
	live?: unknown;
	note?: string;
}

export interface AuditEntry {
	at: string;
	step: Phase | 'signal';
	what: string;
	before?: unknown;
	after?: unknown;
	why: string;
	result?: string;
}

export interface RunbookState {
	phase: Phase;
	dryRun: boolean;
	startedAt: string;
	eventId?: string;
	eventStart?: number;
	decision?: 'approved' | 'rejected' | 'timeout-approved' | 'timeout-rejected' | 'not-required';
	aborted: boolean;
	abortReason?: string;
	extraCooldownSeconds: number;
	lastAttackSeenAt?: string;
	attackEndedAt?: string;
	mitigatedAt?: string;
	revertedAt?: string;
	error?: string;
	changes: number;
	conflicts: number;
	/** Settings held at the site's coordinator (one owner per setting). */
	holding?: number;
	/** Since when the runbook cannot tell whether the attack goes on (API down, timeouts, auth failures); the mitigation stays. */
	blindSince?: string;
	/** Seconds spent blind so far (finished blind periods). */
	blindSeconds: number;
	/** Writes repeated during the wait because a setting was found back at its snapshot value. */
	reapplied: number;
	/** Who decided the approval gate, when, through which interface (cli, n8n, http, api; signal = old builds; timeout; abort). */
	approval?: ApprovalRecord;
	/** The open approval gate: the nonce a decider's ID token must carry (binds a proof to this runbook and this gate). */
	gate?: { nonce: string; openedAt: string; issuer?: string; policy: string };
	/** Who started the runbook, as verified at its start (separation of duties). */
	startedBy?: VerifiedIdentity;
	/** Why the wait ended: cooldown observed attack-free, an operator's abort, or the maxDurationSeconds bound. */
	endedBy?: 'cooldown' | 'abort' | 'max-duration';
	/** Times this runbook continued as new during its wait (same workflow id, state carried; history stays short). */
	continuedAsNew?: number;
	/** Signals refused (a rule broken: not an approver, nothing awaited, bad input); nothing changed by them. */
	refusedSignals?: number;
	/** Audit entries left out of the middle of a very long audit (the first and the latest are kept; bounded payloads). */
	auditOmitted?: number;
}

export interface AttackResponseResult {
	/** max-duration-reverted: the mitigation was reverted because maxDurationSeconds ended it (the attack may not be over). */
	outcome: 'reverted' | 'dry-run' | 'rejected' | 'aborted-reverted' | 'max-duration-reverted' | 'failed-reverted' | 'cancelled-reverted';
	site_id: string;
	eventId?: string;
	/** Seconds from the event's start_time to the runbook's start (undefined when no event was found). */
	timeToDetectSeconds?: number;
	/** Seconds from the event's start (or runbook start) to the last mitigation write. */
	timeToMitigateSeconds?: number;
	/** Seconds from the end of the attack (first poll that saw no attack) to the end of the revert. */
	timeToRevertSeconds?: number;
	changes: Change[];
	conflicts: Change[];
	diff?: { what: string; target: Record<string, string>; before: unknown; after: unknown; why: string }[];
	skipped: { source: string; reason: string }[];
	/** Settings the plan wanted that another playbook held: left alone. */
	heldByOthers: Hold[];
	/** Seconds the runbook could not tell whether the attack went on (mitigation kept meanwhile). */
	blindSeconds: number;
	/** Seconds the mitigation writes and the revert waited for the API to answer again. */
	waitedForApiSeconds: number;
	/** The approval gate's decision: who, when, through which interface. */
	approval?: ApprovalRecord;
	audit: AuditEntry[];
	error?: string;
	/** When things happened (the attack report's markers): runbook start, event start (unix s), mitigated, attack over, reverted, approval. */
	marks?: Pick<RunbookState, 'startedAt' | 'eventStart' | 'mitigatedAt' | 'attackEndedAt' | 'revertedAt' | 'decision'>;
	/** The runbook's own `is_under_attack` answers (workflows/observe.mts). */
	traffic?: TrafficSample[];
	/** The event's `traffic` module (attack and clean series, [unix s, value] pairs), read after the revert. */
	eventTraffic?: EventTraffic;
}

export interface TrafficSample {
	at: string;
	underAttack: boolean;
	bps?: number;
}

export interface EventTraffic {
	bps?: Record<string, number[][]>;
	pps?: Record<string, number[][]>;
}

export interface ApprovalRecord {
	decision: NonNullable<RunbookState['decision']>;
	by?: string;
	/** Who decided as the worker established it (verified ID token, or typed in compatibility mode); never the token. */
	identity?: VerifiedIdentity;
	at: string;
	via: string;
	reason?: string;
}

export interface AttackResponseInput {
	plan: unknown;
	dryRun?: boolean;
	/** Set only by the runbook itself when it continues as new during its wait (workflows/attackResponse/continue.mts). */
	carry?: RunbookCarry;
}

/** Everything a runbook continued as new needs to go on waiting exactly where the previous run stopped. */
export interface RunbookCarry {
	v: 1;
	/** The first run's start (ms): times to detect / mitigate are measured from it. */
	startedMs: number;
	state: RunbookState;
	changes: Change[];
	audit: AuditEntry[];
	skipped: { source: string; reason: string }[];
	heldByOthers: Hold[];
	waitedForApiSeconds: number;
	approval?: { approved: boolean; by?: string; reason?: string; via?: string; at?: string };
	approvers?: string[];
	samples: TrafficSample[];
	/** The wait's clock: when the mitigation was in place (maxDurationSeconds counts from it), when the cooldown began. */
	wait: { mitigatedMs: number; endedAtMs?: number };
}

export const workflowIdFor = (site: string) => `attack-response-${site}`;
export const scheduleIdFor = (kind: 'watch' | 'drift' | 'report', site: string) => `secsvc-${kind}-${site}`;
