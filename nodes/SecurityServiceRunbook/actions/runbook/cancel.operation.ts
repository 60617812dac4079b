import { RUNBOOK } from '../../../../api/catalog/labels';
import { runbookIdOf } from '../common/checks';
import type { OperationFn } from '../common/types';

/** Cancel: request cancellation (the runbook reverts its changes, then stops); By is the request's identity. */
export const execute: OperationFn = async (env) => {
	const { ctx, i } = env;
	const workflowId = runbookIdOf(env);
	const reason = env.text('Reason', ctx.getNodeParameter('reason', i, '')) || 'cancelled from n8n';
	await env.send('POST', `${env.wfUrl(workflowId)}/cancel`, {
		identity: env.text(RUNBOOK.fields.by, ctx.getNodeParameter('by', i, 'n8n')),
		reason,
	});
	return [{ json: { workflowId, cancelRequested: true } }];
};
