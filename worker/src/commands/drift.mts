import { checkDesiredState } from '../../../api/runbook/desired.ts';
import { readJson, type Command } from './args.mts';

/** `secsvc drift --desired FILE [--enforce]`: one drift audit, its result printed. */
export const drift: Command = async ({ o, conn, t, out }) => {
	const desired = checkDesiredState(readJson(o.desired, 'desired'));
	const h = await (await conn()).workflow.start('driftAudit', {
		taskQueue: t.taskQueue,
		workflowId: `drift-audit-${desired.site_id}-${Date.now()}`,
		args: [{ desired, enforce: o.enforce === true }],
	});
	out(o.wait === false ? { workflowId: h.workflowId } : await h.result());
	return 0;
};
