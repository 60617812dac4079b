import type { DecideRequest, VerifiedIdentity } from '../decideRules';
import type { RearmState, WaveState } from './waveRules';

/**
 * The runbook contract: what the workflows, the worker, the CLI and the n8n Runbook node agree on — workflow type
 * names (the one table of them), workflow ids and their rules, signal / query / Update names with their payload
 * types, phases and result types. Pure data and types (no SDK): workflows/ builds its defineSignal / defineQuery /
 * defineUpdate from these names (workflows/attackResponse/messages.mts, workflows/blocks/messages.mts), the Runbook node
 * sends them over Temporal's HTTP API. No secrets anywhere.
 */

/** Every workflow type the worker registers (workflows/index.mts exports a function of each name). */
export const WORKFLOW_TYPE = {
	attackResponse: 'attackResponse',
	attackWatch: 'attackWatch',
	attackReport: 'attackReport',
	blocks: 'blocks',
	offenders: 'offenders',
	driftAudit: 'driftAudit',
	durableCall: 'durableCall',
	fleetWatch: 'fleetWatch',
	rateBudget: 'rateBudget',
	siteCoordinator: 'siteCoordinator',
	tenant: 'tenant',
} as const;
export type WorkflowType = (typeof WORKFLOW_TYPE)[keyof typeof WORKFLOW_TYPE];

/** Workflow ids: the safe id alphabet (api/limits.ts), up to 256 characters. */
export const WORKFLOW_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,255}$/;
export const WORKFLOW_ID_RULE = 'must be 1–256 characters from A–Z a–z 0–9 . _ ~ - starting with a letter or a digit';

/** The runbook of a site: at most one runs per site (the server refuses a second start with the same id). */
export const workflowIdFor = (site: string) => `attack-response-${site}`;
/** A dry run's id: never the site's runbook id, so a dry run does not block a real one. */
export const dryRunIdFor = (site: string, nowMs: number) => `${workflowIdFor(site)}-dry-run-${nowMs}`;
/** A Runbook reference as operators give it: a site id (digits) means that site's runbook, anything else is the id. */
export const runbookIdFrom = (ref: string) => (/^\d+$/.test(ref) ? workflowIdFor(ref) : ref);
/** The schedules `secsvc schedule create KIND` makes (the playbook records say which playbook each starts). */
export type ScheduleKind = 'watch' | 'drift' | 'report';
export const scheduleIdFor = (kind: ScheduleKind, site: string) => `secsvc-${kind}-${site}`;

/** The attack response's signals (approve: older builds; Decide is the `decide` Update). */
export const RUNBOOK_SIGNAL = { approve: 'approve', abort: 'abort', extendCooldown: 'extendCooldown' } as const;
export const RUNBOOK_QUERY = {
	state: 'state',
	plan: 'plan',
	changes: 'changes',
	audit: 'audit',
	result: 'result',
} as const;
export const RUNBOOK_UPDATE = { decide: 'decide' } as const;

export interface ApproveSignalArgs {
	approved: boolean;
	by?: string;
	reason?: string;
}
export interface AbortSignalArgs {
	by?: string;
	reason?: string;
}
export interface ExtendCooldownArgs {
	seconds: number;
	by?: string;
}
export type { DecideRequest };
/** The `decide` Update's answer: the recorded decision. */
export type DecideResult = ApprovalRecord & { accepted: true };

/** The expiring blocks' messages (workflow `blocks-<site>-<dp>`, api/blockRules.ts blocksIdFor). */
export const BLOCKS_UPDATE = {
	add: 'addBlock',
	addMany: 'addBlocks',
	extend: 'extendBlock',
	remove: 'removeBlock',
} as const;
export const BLOCKS_QUERY = { blocks: 'blocks' } as const;

/** Phases of a runbook, in order. */
export const PHASES = [
	'validating',
	'snapshot',
	'planning',
	'awaiting-approval',
	'tightening',
	'blacklisting',
	'rate-limiting',
	'waiting',
	'reverting',
	'done',
] as const;
/** Phases before the approval gate: a decision sent then is refused with notWaitingMessage (Decide waits through them). */
export const BEFORE_GATE: readonly Phase[] = ['validating', 'snapshot', 'planning'];
/** The `decide` validator's refusal when the runbook does not wait for a decision, and how to read its phase. */
export const notWaitingMessage = (phase: Phase) =>
	`approval: the runbook is not waiting for a decision (phase ${phase}); nothing changed`;
export const NOT_WAITING_RE = /not waiting for a decision \(phase ([a-z-]+)\)/;

/** A setting held at a site's coordinator (workflows/coordinator/coordination.mts): who holds it, until when, why. */
export interface Hold {
	key: string;
	/** Workflow id of the owner (e.g. attack-response-20001, drift-audit-20001-…). */
	owner: string;
	mode: 'hold' | 'lease';
	since: string;
	/** When the coordinator lets it go by itself if the owner never releases it. */
	until: string;
	reason: string;
}

export type Phase = (typeof PHASES)[number];
export type ChangeKind = 'detectionMode' | 'detectionPolicy' | 'blacklistAdd' | 'ipAuth' | 'switch';

/**
 * What one write actually changed, as the write activity observed it at write time (worker/src/activities/
 * exactWrites.mts): the one shape every write of a setting or a list entry answers with. A playbook owns only
 * `wrote` and undoes only that.
 */
export interface WriteResult {
	/** The value this write set, or the list entries it POSTed and the service accepted; absent or [] when nothing was sent. */
	wrote?: unknown;
	/** A setting's value this write replaced, read at write time (absent: a retry found its own earlier write). */
	replaced?: unknown;
	/** Found already at the target and left as it was, not ours: a setting's value, or the list entries already present. */
	notOurs?: unknown;
	/**
	 * Outcome unknown: at the target, but whether by this write (an earlier attempt's answer lost) or by someone else
	 * meanwhile nothing can tell. Never reverted by a playbook (it may be someone else's), reported.
	 */
	unknown?: unknown;
	/**
	 * A conditional write (a revert's) found the setting neither at the value it expected (ours) nor at its target:
	 * someone else's value since, read by the write itself; nothing sent.
	 */
	theirs?: unknown;
}

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
	/**
	 * What the runbook's own writes changed (since `exact-ownership`; absent in runbooks recorded before it): the
	 * runbook owns only `written.wrote` and its revert restores `written.replaced`, never what was already there.
	 */
	written?: WriteResult;
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
	/** Ownership from what was written (each change's `written`); false or absent: runbooks recorded before it. */
	exact?: boolean;
	/** Since `owned-from-answers`: only what a write answered it wrote is the runbook's; no answer is outcome unknown. */
	answered?: boolean;
	/** Issue 39: waves answered during the wait (waveRules.ts); the re-arm from the site's last run (holdDownRules.ts). */
	waves?: WaveState;
	rearm?: RearmState;
}

export interface AttackResponseResult {
	/** max-duration-reverted: the mitigation was reverted because maxDurationSeconds ended it (the attack may not be over). */
	outcome:
		| 'reverted'
		| 'dry-run'
		| 'rejected'
		| 'aborted-reverted'
		| 'max-duration-reverted'
		| 'failed-reverted'
		| 'cancelled-reverted';
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
	/** The runbook's own `is_under_attack` answers (workflows/attackResponse/observe.mts). */
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
	approval?: {
		approved: boolean;
		by?: string;
		reason?: string;
		via?: string;
		at?: string;
		identity?: VerifiedIdentity;
	};
	approvers?: string[];
	samples: TrafficSample[];
	/** The wait's clock: when the mitigation was in place (maxDurationSeconds counts from it), when the cooldown began. */
	wait: { mitigatedMs: number; endedAtMs?: number };
}
