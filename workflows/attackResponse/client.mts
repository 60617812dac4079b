import { sealed } from '../tenant/shared.mts';
import { printable } from '../../worker/src/temporal/printable.mts';
import { failureText } from '../../worker/src/temporal/failureText.mts';
import { Client, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import {
	WORKFLOW_TYPE,
	workflowIdFor,
	dryRunIdFor,
	runbookIdFrom,
	PHASES,
	type ApprovalRecord,
	type AttackResponseResult,
	type AuditEntry,
	type DecideRequest,
	type RunbookState,
} from '../../api/runbook/contract.ts';
import {
	abortSignal,
	approveSignal,
	auditQuery,
	changesQuery,
	extendCooldownSignal,
	stateQuery,
	decideUpdate,
} from './messages.mts';
import { parsePlan, type Plan } from '../../api/runbook/plan.ts';
import { MITIGATION_PHASES, SA } from './searchAttributes.mts';
import type { attackResponse } from './attackResponse.mts';

/** Client-side operations on runbooks and schedules (used by the CLI, the n8n bridge and the tests). */

/**
 * A token goes out only sealed: a client without the payload codec (SECSVC_PAYLOAD_KEYS) would send it in plain
 * text, and a start keeps its arguments in history. Refused before anything is sent.
 */
function requireSealing(client: Client, what: string, outcome: string): void {
	if (!client.options.loadedDataConverter.payloadCodecs.length)
		throw new Error(
			`SECSVC_PAYLOAD_KEYS: is required to send ${what} (without the payload key it would be kept in the runbook's history in plain text); ${outcome}`,
		);
}

/** Starts a runbook; `idToken` = the starter's ID token (sealed: separation of duties, docs/approvals.md). */
export async function startAttackResponse(
	client: Client,
	taskQueue: string,
	plan: unknown,
	opts: { dryRun?: boolean; workflowId?: string; idToken?: string; parsed?: Plan } = {},
) {
	const p = opts.parsed ?? parsePlan(plan); // clear errors before anything is sent (once: a caller that checked passes it)
	const workflowId = opts.workflowId ?? (opts.dryRun ? dryRunIdFor(p.site_id, Date.now()) : workflowIdFor(p.site_id));
	const input = { plan, dryRun: opts.dryRun };
	if (opts.idToken) requireSealing(client, "the starter's ID token", 'nothing was started');
	const args: Parameters<typeof attackResponse> = opts.idToken ? [input, sealed({ idToken: opts.idToken })] : [input];
	return client.workflow.start<typeof attackResponse>(WORKFLOW_TYPE.attackResponse, { taskQueue, workflowId, args });
}

/** The runbook's open approval gate (its nonce binds a decider's ID token to it), or undefined when none is open. */
export async function gateOf(client: Client, siteOrId: string): Promise<RunbookState['gate'] | undefined> {
	const st = await handleFor(client, siteOrId).query(stateQuery);
	return st.phase === 'awaiting-approval' ? st.gate : undefined;
}

export const handleFor = (client: Client, siteOrId: string): WorkflowHandle =>
	client.workflow.getHandle(runbookIdFrom(siteOrId));

/**
 * Approve / reject through the runbook's `decide` Update: the decision comes back (accepted, by whom, when, via), or
 * the refusal (not an approver, no reason for a rejection, nothing awaited any more) as a DecisionRefused — nothing
 * changed. A runbook started by a build without the Update gets the old `approve` signal (no answer).
 */
export async function decide(
	client: Client,
	siteOrId: string,
	req: DecideRequest,
): Promise<ApprovalRecord & { accepted: boolean; signalled?: boolean }> {
	const h = handleFor(client, siteOrId);
	try {
		// With a proof the whole request is sealed: the payload codec encrypts it, so the token is no plain text in history.
		return await h.executeUpdate(decideUpdate, { args: [req.idToken ? sealed(req) : req] });
	} catch (e) {
		if (e instanceof WorkflowUpdateFailedError) {
			const msg = String(e.cause?.message ?? e.message);
			if (/handler|unknown update/i.test(msg)) {
				if (req.idToken)
					throw new DecisionRefused("proof: this runbook's build takes no proof (it predates verified approvals)");
				await h.signal(approveSignal, { approved: req.approved, by: req.by, reason: req.reason });
				return {
					accepted: true,
					signalled: true,
					decision: req.approved ? 'approved' : 'rejected',
					by: req.by,
					at: new Date().toISOString(),
					via: 'signal',
				};
			}
			throw new DecisionRefused(msg);
		}
		throw e;
	}
}

export class DecisionRefused extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'DecisionRefused';
	}
}

export async function abort(client: Client, siteOrId: string, by?: string, reason?: string) {
	await handleFor(client, siteOrId).signal(abortSignal, { by, reason });
}

export async function extendCooldown(client: Client, siteOrId: string, seconds: number, by?: string) {
	await handleFor(client, siteOrId).signal(extendCooldownSignal, { seconds, by });
}

export async function inspect(client: Client, siteOrId: string) {
	const h = handleFor(client, siteOrId);
	const d = await h.describe();
	const running = d.status.name === 'RUNNING';
	if (running) {
		return {
			workflowId: d.workflowId,
			runId: d.runId,
			status: d.status.name,
			state: await h.query(stateQuery),
			changes: await h.query(changesQuery),
		};
	}
	let result: AttackResponseResult | undefined;
	let error: string | undefined;
	try {
		result = (await h.result()) as AttackResponseResult;
	} catch (e) {
		error = failureText(e);
		const details = (e as { cause?: { details?: unknown[] } }).cause?.details;
		if (details?.[0]) result = details[0] as AttackResponseResult;
	}
	return { workflowId: d.workflowId, runId: d.runId, status: d.status.name, result, error };
}

/** The runbook's audit trail: queried while running, from the result (or failure details) once closed. */
export async function timeline(client: Client, siteOrId: string): Promise<AuditEntry[]> {
	const h = handleFor(client, siteOrId);
	const d = await h.describe();
	if (d.status.name === 'RUNNING') return h.query(auditQuery);
	const r = await inspect(client, siteOrId);
	return r.result?.audit ?? [];
}

export function formatTimeline(entries: AuditEntry[]): string {
	return entries
		.map((e) => {
			const ba =
				e.before !== undefined
					? `  ${JSON.stringify(e.before)} → ${JSON.stringify(e.after)}`
					: e.after !== undefined
						? `  ${JSON.stringify(e.after)}`
						: '';
			// Every field may carry a signal's text (an abort reason, a `by`): one entry stays one line, no escape sequences.
			return printable(`${e.at}  [${e.step}] ${e.what}${e.result ? ` (${e.result})` : ''} — ${e.why}${ba}`);
		})
		.join('\n');
}

export { WorkflowNotFoundError };

export class ListFilterError extends Error {}

/**
 * The visibility query of `secsvc list`: attack responses, optionally of one site, in one phase (`mitigation` =
 * any phase holding changes on the service: tightening, blacklisting, rate-limiting, waiting) and only running ones.
 * One row per runbook: the runs a runbook closed by continuing as new are left out.
 */
export function listQuery(o: { site?: string; phase?: string; running?: boolean } = {}): string {
	const q = [`WorkflowType = '${WORKFLOW_TYPE.attackResponse}'`];
	if (o.site !== undefined) {
		if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(o.site))
			throw new ListFilterError(`--site: must be a site id (letters, digits, . _ : -), got ${JSON.stringify(o.site)}`);
		q.push(`${SA.site.name} = '${o.site}'`);
	}
	if (o.phase !== undefined) {
		if (o.phase === 'mitigation') q.push(`${SA.phase.name} IN (${MITIGATION_PHASES.map((p) => `'${p}'`).join(', ')})`);
		else if ((PHASES as readonly string[]).includes(o.phase)) q.push(`${SA.phase.name} = '${o.phase}'`);
		else
			throw new ListFilterError(
				`--phase: must be one of ${PHASES.join(', ')} or mitigation, got ${JSON.stringify(o.phase)}`,
			);
	}
	// A runbook that continued as new during a long wait has one closed run per continue: list only its latest run.
	q.push(o.running ? `ExecutionStatus = 'Running'` : `ExecutionStatus != 'ContinuedAsNew'`);
	return q.join(' AND ');
}

export interface RunbookListEntry {
	workflowId: string;
	runId: string;
	status: string;
	site?: string;
	phase?: string;
	outcome?: string;
	eventId?: string;
	dryRun?: boolean;
	startTime: string;
	closeTime?: string;
}

/** Runbooks matching the filters, newest first (Temporal visibility; the search attributes of workflows/attackResponse/searchAttributes.mts). */
export async function listRunbooks(
	client: Client,
	o: { site?: string; phase?: string; running?: boolean; limit?: number } = {},
): Promise<RunbookListEntry[]> {
	const out: RunbookListEntry[] = [];
	for await (const w of client.workflow.list({ query: listQuery(o) })) {
		const sa = w.typedSearchAttributes;
		out.push({
			workflowId: w.workflowId,
			runId: w.runId,
			status: w.status.name,
			site: sa.get(SA.site),
			phase: sa.get(SA.phase),
			outcome: sa.get(SA.outcome),
			eventId: sa.get(SA.eventId),
			dryRun: sa.get(SA.dryRun),
			startTime: w.startTime.toISOString(),
			closeTime: w.closeTime?.toISOString(),
		});
		if (out.length >= (o.limit ?? 1000)) break;
	}
	return out;
}

export function formatRunbookList(rows: RunbookListEntry[]): string {
	if (!rows.length) return '(no runbooks match)';
	const cols = [
		['WORKFLOW ID', (r: RunbookListEntry) => r.workflowId],
		['STATUS', (r: RunbookListEntry) => r.status],
		['SITE', (r: RunbookListEntry) => r.site ?? ''],
		['PHASE', (r: RunbookListEntry) => r.phase ?? ''],
		['OUTCOME', (r: RunbookListEntry) => r.outcome ?? ''],
		['EVENT', (r: RunbookListEntry) => r.eventId ?? ''],
		['DRY RUN', (r: RunbookListEntry) => (r.dryRun ? 'yes' : '')],
		['STARTED', (r: RunbookListEntry) => r.startTime],
	] as const;
	const cells = [cols.map((c) => c[0]), ...rows.map((r) => cols.map((c) => printable(c[1](r))))];
	const width = cols.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
	return cells
		.map((row) =>
			row
				.map((v, i) => v.padEnd(width[i]))
				.join('  ')
				.trimEnd(),
		)
		.join('\n');
}
