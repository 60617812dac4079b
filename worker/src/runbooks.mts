import { Client, Connection, ScheduleOverlapPolicy, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { decideUpdate, type DecideRequest } from '../../workflows/attackResponse/approval.mts';
import {
	abortSignal,
	approveSignal,
	auditQuery,
	changesQuery,
	extendCooldownSignal,
	scheduleIdFor,
	stateQuery,
	workflowIdFor,
	type ApprovalRecord,
	type AttackResponseResult,
	type AuditEntry,
} from '../../workflows/defs.mts';
import { parsePlan } from '../../workflows/plan.mts';
import { connectionOptions, type WorkerConfig } from './config.mts';

/** Client-side operations on runbooks and schedules (used by the CLI, the n8n bridge and the tests). */

export async function temporalClient(t: WorkerConfig['temporal']): Promise<Client> {
	const connection = await Connection.connect(connectionOptions(t));
	return new Client({ connection, namespace: t.namespace });
}

/** Accepts a site id or a full workflow id. */
export const runbookId = (siteOrId: string) => (siteOrId.startsWith('attack-response-') ? siteOrId : workflowIdFor(siteOrId));

export async function startAttackResponse(client: Client, taskQueue: string, plan: unknown, opts: { dryRun?: boolean; workflowId?: string } = {}) {
	const p = parsePlan(plan); // clear errors before anything is sent
	const workflowId = opts.workflowId ?? (opts.dryRun ? `${workflowIdFor(p.site_id)}-dry-run-${Date.now()}` : workflowIdFor(p.site_id));
	return client.workflow.start('attackResponse', { taskQueue, workflowId, args: [{ plan, dryRun: opts.dryRun }] });
}

export const handleFor = (client: Client, siteOrId: string): WorkflowHandle => client.workflow.getHandle(runbookId(siteOrId));

/**
 * Approve / reject through the runbook's `decide` Update: the decision comes back (accepted, by whom, when, via), or
 * the refusal (not an approver, no reason for a rejection, nothing awaited any more) as a DecisionRefused — nothing
 * changed. A runbook started by a build without the Update gets the old `approve` signal (no answer).
 */
export async function decide(client: Client, siteOrId: string, req: DecideRequest): Promise<ApprovalRecord & { accepted: boolean; signalled?: boolean }> {
	const h = handleFor(client, siteOrId);
	try {
		return await h.executeUpdate(decideUpdate, { args: [req] });
	} catch (e) {
		if (e instanceof WorkflowUpdateFailedError) {
			const msg = String(e.cause?.message ?? e.message);
			if (/handler|unknown update/i.test(msg)) {
				await h.signal(approveSignal, { approved: req.approved, by: req.by, reason: req.reason });
				return { accepted: true, signalled: true, decision: req.approved ? 'approved' : 'rejected', by: req.by, at: new Date().toISOString(), via: 'signal' };
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

/** Old entry point (signal semantics kept for callers): now the Update, via 'api'. */
export async function approve(client: Client, siteOrId: string, approved: boolean, by?: string, reason?: string) {
	return decide(client, siteOrId, { approved, by: by ?? '', reason, via: 'api' });
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
		return { workflowId: d.workflowId, runId: d.runId, status: d.status.name, state: await h.query(stateQuery), changes: await h.query(changesQuery) };
	}
	let result: AttackResponseResult | undefined;
	let error: string | undefined;
	try {
		result = (await h.result()) as AttackResponseResult;
	} catch (e) {
		error = (e as Error).message;
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
				e.before !== undefined ? `  ${JSON.stringify(e.before)} → ${JSON.stringify(e.after)}` : e.after !== undefined ? `  ${JSON.stringify(e.after)}` : '';
			return `${e.at}  [${e.step}] ${e.what}${e.result ? ` (${e.result})` : ''} — ${e.why}${ba}`;
		})
		.join('\n');
}

export type ScheduleKind = 'watch' | 'drift' | 'report';

export async function createSchedule(
	client: Client,
	taskQueue: string,
	kind: ScheduleKind,
	site: string,
	every: string,
	input: unknown,
) {
	const workflowType = kind === 'watch' ? 'attackWatch' : kind === 'drift' ? 'driftAudit' : 'attackReport';
	const scheduleId = scheduleIdFor(kind, site);
	return client.schedule.create({
		scheduleId,
		spec: { intervals: [{ every: every as `${number}s` }] },
		action: { type: 'startWorkflow', workflowType, taskQueue, workflowId: `${scheduleId}-run`, args: [input] },
		policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
	});
}

export async function deleteSchedule(client: Client, scheduleId: string) {
	await client.schedule.getHandle(scheduleId).delete();
}

export async function listSchedules(client: Client): Promise<string[]> {
	const out: string[] = [];
	for await (const s of client.schedule.list()) out.push(s.scheduleId);
	return out;
}

export { WorkflowNotFoundError };
