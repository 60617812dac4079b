import type { ApproverPolicy } from '../../api/decideRules.ts';
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { endsFirstOption } from '../coordinator/claims.mts';
import type { Hold } from '../coordinator/coordination.mts';
import type {
	AttackResponseInput,
	AttackResponseResult,
	AuditEntry,
	Change,
	Phase,
	RunbookCarry,
	RunbookState,
} from '../../api/runbook/contract.ts';
import type { Plan } from '../../api/runbook/plan.ts';
import type { OperationActivities } from '../pure/activityTypes.mts';
import { observer, type Observer } from './observe.mts';

/**
 * What every step of the attack response shares: the run's state, its changes and audit trail, and the activity
 * proxies for reads, writes and reverts (options from the plan's `execution` block, see workflows/README.md).
 */

/** The catalog's operations as activities, typed from the catalog (params and results). */
export type Acts = OperationActivities;

/** `endsFirst`: a cancelled runbook waits for the activity's end and its answer (ownership.mts IN_FLIGHT_ENDS_FIRST_PATCH). */
function activities(timeoutSeconds: number, maximumAttempts: number, local = false, endsFirst = false): Acts {
	const options = {
		...endsFirstOption(endsFirst),
		startToCloseTimeout: `${timeoutSeconds}s` as const,
		retry: {
			initialInterval: '500ms' as const,
			backoffCoefficient: 2,
			maximumInterval: '10s' as const,
			maximumAttempts,
		},
	};
	return local ? proxyLocalActivities<Acts>(options) : proxyActivities<Acts>(options);
}

export const iso = (ms: number) => new Date(ms).toISOString();

export interface Runbook {
	/** This code's newer patches, asked before the run's first await (attackResponse.mts `askPatches`). */
	patches: {
		entriesOverlap: boolean;
		rearm: boolean;
		rearmFast: boolean;
		waves: boolean;
		exact: boolean;
		answered: boolean;
		continueAsNew: boolean;
		pollGrid: boolean;
		addEach: boolean;
		repeatUnanswered: boolean;
		reapplyWhileSeen: boolean;
		writeSteps: boolean;
		holdBeside: boolean;
		rearmEntriesLocal: boolean;
		entriesHoldInWrite: boolean;
		inFlightEndsFirst: boolean;
	};
	input: AttackResponseInput;
	started: number;
	dryRun: boolean;
	state: RunbookState;
	audit: AuditEntry[];
	changes: Change[];
	skipped: { source: string; reason: string }[];
	/** Settings the plan wanted that another playbook holds (left alone). */
	heldByOthers: Hold[];
	/** Seconds the mitigation writes and the revert waited for the API to answer again. */
	waitedForApiSeconds: number;
	approval?: RunbookCarry['approval'];
	/** plan.approval.approvers, once the gate is reached (empty = anyone). */
	approvers?: string[];
	/** The operator's approver policy (identity.policy at start; compatibility mode when absent). */
	policy?: ApproverPolicy;
	lastResult?: AttackResponseResult;
	/** Search attributes, metrics and traffic samples (workflows/attackResponse/observe.mts). */
	obs: Observer;
	eventTraffic?: AttackResponseResult['eventTraffic'];
	/** The wait's clock (wait.mts), carried across continue-as-new (continue.mts). */
	wait: { mitigatedMs?: number; endedAtMs?: number };
	log(step: AuditEntry['step'], what: string, why: string, extra?: Partial<AuditEntry>): void;
	phase(p: Phase): void;
	result(outcome: AttackResponseResult['outcome'], extra?: Partial<AttackResponseResult>): AttackResponseResult;
}

/** The audit keeps its first AUDIT_HEAD entries and its latest ones, AUDIT_MAX in all (result and carried state stay small). */
export const AUDIT_MAX = 1000;
export const AUDIT_HEAD = 100;

/** Appends an entry; beyond AUDIT_MAX the oldest entry after the head goes, counted in one "omitted" entry. */
export function appendAudit(audit: AuditEntry[], state: RunbookState, entry: AuditEntry): void {
	audit.push(entry);
	if (audit.length <= AUDIT_MAX) return;
	const why = `the audit keeps its first ${AUDIT_HEAD} and its latest ${AUDIT_MAX - AUDIT_HEAD - 1} entries`;
	if (state.auditOmitted) {
		// The entry at AUDIT_HEAD is the marker: the oldest entry after it goes.
		audit.splice(AUDIT_HEAD + 1, 1);
		state.auditOmitted++;
		audit[AUDIT_HEAD] = { ...audit[AUDIT_HEAD], what: `${state.auditOmitted} audit entries omitted` };
		return;
	}
	// First overflow: the two oldest entries after the head make room for the marker (with the first one's time).
	const first = audit[AUDIT_HEAD];
	audit.splice(AUDIT_HEAD, 2, {
		at: first.at,
		step: first.step,
		what: '2 audit entries omitted',
		why,
		result: 'omitted',
	});
	state.auditOmitted = 2;
}

/** Every patch off until attackResponse.mts `askPatches` asks them (before the run's first await). */
const NO_PATCHES: Runbook['patches'] = {
	entriesOverlap: false,
	rearm: false,
	rearmFast: false,
	waves: false,
	exact: false,
	answered: false,
	continueAsNew: false,
	pollGrid: false,
	addEach: false,
	repeatUnanswered: false,
	reapplyWhileSeen: false,
	writeSteps: false,
	holdBeside: false,
	rearmEntriesLocal: false,
	entriesHoldInWrite: false,
	inFlightEndsFirst: false,
};

export function newRunbook(input: AttackResponseInput): Runbook {
	const carry = input?.carry;
	const started = carry ? carry.startedMs : Date.now();
	const dryRun = Boolean(input?.dryRun);
	const site = String((input?.plan as { site_id?: unknown } | undefined)?.site_id ?? '');
	const rb: Runbook = {
		input,
		started,
		dryRun,
		patches: { ...NO_PATCHES },
		state: carry
			? { ...carry.state }
			: {
					phase: 'validating',
					dryRun,
					startedAt: iso(started),
					aborted: false,
					extraCooldownSeconds: 0,
					changes: 0,
					conflicts: 0,
					blindSeconds: 0,
					reapplied: 0,
				},
		audit: carry ? [...carry.audit] : [],
		changes: carry ? [...carry.changes] : [],
		skipped: carry ? [...carry.skipped] : [],
		obs: observer(
			site,
			dryRun,
			carry
				? { samples: carry.samples, conflicts: carry.changes.filter((c) => c.status === 'conflict').map((c) => c.id) }
				: {},
		),
		heldByOthers: carry ? [...carry.heldByOthers] : [],
		waitedForApiSeconds: carry?.waitedForApiSeconds ?? 0,
		...(carry?.approval ? { approval: carry.approval } : {}),
		...(carry?.approvers ? { approvers: carry.approvers } : {}),
		wait: carry ? { ...carry.wait } : {},
		log: (step, what, why, extra = {}) =>
			appendAudit(rb.audit, rb.state, { at: iso(Date.now()), step, what, why, ...extra }),
		phase: (p) => {
			rb.state.phase = p;
			rb.obs.phase(p);
		},
		result: (outcome, extra = {}) => ({
			outcome,
			site_id: site,
			eventId: rb.state.eventId,
			changes: rb.changes,
			conflicts: rb.changes.filter((c) => c.status === 'conflict'),
			skipped: rb.skipped,
			heldByOthers: rb.heldByOthers,
			blindSeconds: rb.state.blindSeconds,
			waitedForApiSeconds: rb.waitedForApiSeconds,
			...(rb.state.approval ? { approval: rb.state.approval } : {}),
			audit: rb.audit,
			marks: pick(rb.state),
			traffic: rb.obs.samples(),
			...(rb.eventTraffic ? { eventTraffic: rb.eventTraffic } : {}),
			...extra,
		}),
	};
	return rb;
}

const pick = (s: RunbookState): AttackResponseResult['marks'] => ({
	startedAt: s.startedAt,
	eventStart: s.eventStart,
	mitigatedAt: s.mitigatedAt,
	attackEndedAt: s.attackEndedAt,
	revertedAt: s.revertedAt,
	decision: s.decision,
});

/** The plan-dependent part: the parsed plan, its targets, and the activity proxies. */
export interface PlanContext {
	plan: Plan;
	site: string;
	/** Target of the detection operations. */
	op: { customer_id: string; site_id: string; network_id: string; host_id: string };
	dpParams(dp: string): { site_id: string; domain_port_id: string };
	/** Regular activities (writes: the first write group, waves, hold-the-line's re-applies). */
	acts: Acts;
	/** Reads (snapshot, event lookup, polls): local unless plan.execution.localActivities is 'none'. */
	readActs: Acts;
	/** Writes after the first group: local when plan.execution.localActivities is 'all'. */
	laterWrites: Acts;
	/** is_under_attack polls and the checks of the applied settings: few attempts; a failed poll means "blind", not "over". */
	pollActs: Acts;
	/** Revert writes: always regular activities (a failure is retried by withPatience, see patience.mts). */
	revertActs: Acts;
	revertReads: Acts;
	/** Independent calls at once (plan.execution.parallel) or one after another; results in a fixed order. */
	all<T>(fns: (() => Promise<T>)[]): Promise<T[]>;
}

export function planContext(plan: Plan, endsFirst = false): PlanContext {
	const ex = plan.execution;
	const site = plan.site_id;
	const acts = activities(plan.activityTimeoutSeconds, 8, false, endsFirst);
	const readActs = ex.localActivities === 'none' ? acts : activities(plan.activityTimeoutSeconds, 8, true);
	// Revert writes are always regular activities, so each live read before a write is recorded in history before the
	// write is sent. Few attempts each: withPatience (patience.mts) repeats them for as long as the API is down.
	const revertActs = activities(plan.activityTimeoutSeconds, 4);
	return {
		plan,
		site,
		op: { customer_id: plan.customer_id, site_id: site, network_id: plan.network_id, host_id: plan.host_id },
		dpParams: (dp) => ({ site_id: site, domain_port_id: dp }),
		acts,
		readActs,
		laterWrites: ex.localActivities === 'all' ? readActs : acts,
		pollActs: activities(Math.min(plan.activityTimeoutSeconds, 10), 3, ex.localActivities !== 'none'),
		revertActs,
		revertReads: ex.localActivities === 'none' ? revertActs : activities(plan.activityTimeoutSeconds, 4, true),
		all: <T,>(fns: (() => Promise<T>)[]): Promise<T[]> =>
			ex.parallel
				? Promise.all(fns.map((f) => f()))
				: fns.reduce<Promise<T[]>>(async (acc, f) => [...(await acc), await f()], Promise.resolve([])),
	};
}
