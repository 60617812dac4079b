import { sealedPayload, type PayloadKey } from './seal';
import { RUNBOOK } from '../../../api/catalog/labels';

/**
 * Temporal HTTP API shapes the Runbook node sends and reads (no SDK): payloads in full form (json/plain, base64) with
 * the header Temporal-Payload-Shorthand: false, Updates (UpdateWorkflowExecutionRequest, wait stage COMPLETED) and
 * their outcome, Update-with-start (ExecuteMultiOperationRequest).
 */

/**
 * Bounds of every Temporal HTTP API exchange: total time (an Update waits for its result; the runbook answers a
 * decision at once, so a minute is ample) and size (a described runbook with its timeline and report is far below).
 */
export const TEMPORAL_BOUNDS = { timeoutMs: 60_000, maxBytes: 16 * 1024 * 1024 };

/** A JSON object body ({} when empty); what is not JSON becomes `{ message }` (e.g. a proxy's HTML error page). */
export function parseJsonObject(text: string): Record<string, unknown> {
	if (!text.trim()) return {};
	try {
		const v = JSON.parse(text) as unknown;
		return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
	} catch {
		return { message: text.slice(0, 300) };
	}
}

/**
 * The HTTP API's JSON shorthand turns empty arrays into null, which the runbook's plan validation rejects. The answers
 * come in full form only when asked by content type (`Accept`: the server's JSON marshaler without shorthand; the
 * header alone left every answer in shorthand, e.g. a plan read back from history with `switches: null`); the
 * readers take either form (a proxy may still answer in shorthand).
 */
export const NO_SHORTHAND = {
	'Temporal-Payload-Shorthand': 'false',
	accept: 'application/json+no-payload-shorthand',
};

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
export const payloads = (values: unknown[]) => ({
	payloads: values.map((v) => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(v)) })),
});

export function decodePayload(p: unknown): unknown {
	const pl = p as { metadata?: { encoding?: string }; data?: string } | undefined;
	if (!pl || typeof pl !== 'object') return pl ?? null;
	const enc = pl.metadata?.encoding ? Buffer.from(pl.metadata.encoding, 'base64').toString('utf8') : '';
	if (enc === 'binary/null' || pl.data === undefined) return null;
	const text = Buffer.from(pl.data, 'base64').toString('utf8');
	return enc === 'json/plain' ? (JSON.parse(text) as unknown) : text;
}

/** The first value of a Payloads field: full form ({payloads: [...]}) or, when the server answers in shorthand, [value]. */
export function firstValue(v: unknown): unknown {
	if (Array.isArray(v)) return v[0] ?? null;
	const p = (v as { payloads?: unknown[] } | undefined)?.payloads;
	return Array.isArray(p) ? decodePayload(p[0]) : null;
}

const STAGE_COMPLETED = 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED';

/**
 * UpdateWorkflowExecutionRequest (POST …/workflows/{id}/update/{name}): waits until the Update has completed. With
 * `seal` the argument is encrypted in the worker's payload codec format (seal.ts): it is ciphertext in history.
 */
export function updateRequest(workflowId: string, name: string, arg: unknown, updateId: string, seal?: PayloadKey) {
	return {
		workflowExecution: { workflowId },
		waitPolicy: { lifecycleStage: STAGE_COMPLETED },
		request: {
			meta: { updateId, identity: 'n8n' },
			input: { name, args: seal ? { payloads: [sealedPayload(arg, seal)] } : payloads([arg]) },
		},
	};
}

/** ExecuteMultiOperationRequest: start (USE_EXISTING: a running workflow is reused) + Update, atomically. */
export function updateWithStartRequest(
	ns: string,
	start: { workflowId: string; workflowType: string; taskQueue: string; input: unknown; requestId: string },
	update: { name: string; arg: unknown; updateId: string },
) {
	return {
		namespace: ns,
		operations: [
			{
				startWorkflow: {
					namespace: ns,
					workflowId: start.workflowId,
					workflowType: { name: start.workflowType },
					taskQueue: { name: start.taskQueue },
					input: payloads([start.input]),
					workflowIdConflictPolicy: 'WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING',
					requestId: start.requestId,
					identity: 'n8n',
				},
			},
			{
				updateWorkflow: { namespace: ns, ...updateRequest(start.workflowId, update.name, update.arg, update.updateId) },
			},
		],
	};
}

export type Outcome = { ok: true; value: unknown } | { ok: false; message: string };

/** UpdateWorkflowExecutionResponse.outcome → the Update's result or its failure message (never the stack trace). */
export function outcomeOf(resp: unknown): Outcome | undefined {
	const o = (resp as { outcome?: { success?: unknown; failure?: { message?: string } } } | undefined)?.outcome;
	if (!o) return undefined;
	if (o.failure) return { ok: false, message: String(o.failure.message ?? 'refused') };
	return { ok: true, value: firstValue(o.success) };
}

/**
 * A refusal from a workflow's validator (`field: rule`) with the field as the node shows it, e.g.
 * `by: mallory is not in approval.approvers` → `By: mallory is not in approval.approvers`.
 */
export function refusalText(message: string): string {
	const m = /^([A-Za-z_]+): ([\s\S]*)$/.exec(message);
	if (!m) return message;
	return `${RUNBOOK.refusalFields[m[1]] ?? m[1]}: ${m[2]}`;
}
