import { checkDesiredState } from '../../api/runbook/desired.ts';
import { readJson, type Command } from '../../worker/src/commands/args.mts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { DesiredState, driftAudit } from './driftAudit.mts';

/** `secsvc drift --desired FILE [--enforce]`: one drift audit, its result printed. */
export const drift: Command = async ({ o, conn, t, out }) => {
	const desired = checkDesiredState(readJson(o.desired, 'desired'));
	const h = await (
		await conn()
	).workflow.start<typeof driftAudit>(WORKFLOW_TYPE.driftAudit, {
		taskQueue: t.taskQueue,
		workflowId: `drift-audit-${desired.site_id}-${Date.now()}`,
		// checked by the schema (its input form: "0"/"1" and booleans too); the workflow reads it with Number()/String()
		args: [{ desired: desired as DesiredState, enforce: o.enforce === true }],
	});
	out(o.wait === false ? { workflowId: h.workflowId } : await h.result());
	return 0;
};
