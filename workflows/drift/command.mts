import { checkDesiredState } from '../../api/runbook/desired.ts';
import { readJson, type Command } from '../../worker/src/commands/args.mts';
import type { DesiredState } from './driftAudit.mts';
import { startDriftAudit } from './client.mts';

/** `secsvc drift --desired FILE [--enforce]`: one drift audit, its result printed. */
export const drift: Command = async ({ o, conn, t, out }) => {
	const desired = checkDesiredState(readJson(o.desired, 'desired'));
	// checked by the schema (its input form: "0"/"1" and booleans too); the workflow reads it with Number()/String()
	const h = await startDriftAudit(await conn(), t.taskQueue, {
		desired: desired as DesiredState,
		enforce: o.enforce === true,
	});
	out(o.wait === false ? { workflowId: h.workflowId } : await h.result());
	return 0;
};
