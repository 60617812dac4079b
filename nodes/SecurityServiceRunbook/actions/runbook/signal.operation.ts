import type { IDataObject } from 'n8n-workflow';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { RUNBOOK_SIGNAL } from '../../../../api/runbook/contract';
import { abortInputProblem, extendInputProblem } from '../../../../api/signalRules';
import { payloads } from '../../transport/http';
import { runbookIdOf } from '../common/checks';
import type { OperationFn } from '../common/types';
import { decideAs } from './decide.operation';

/**
 * Signal: abort or extend the cooldown (a signal the runbook would refuse silently is refused here, naming the field:
 * api/signalRules.ts). Approve / Reject are sent as Decide (kept for saved workflows; By and Reason are "By" and
 * "Reason").
 */
export const execute: OperationFn = async (env) => {
	const { ctx, i } = env;
	const workflowId = runbookIdOf(env);
	const signal = ctx.getNodeParameter('signal', i) as string;
	if (signal === 'approve' || signal === 'reject')
		return [
			{
				json: {
					signal,
					sent: true,
					...(await decideAs(env, workflowId, signal, { by: RUNBOOK.fields.by, reason: 'Reason' })),
				},
			},
		];
	const by = env.text(RUNBOOK.fields.by, ctx.getNodeParameter('by', i, 'n8n'));
	const reason = env.text('Reason', ctx.getNodeParameter('reason', i, '')) || undefined;
	let name = signal;
	let arg: IDataObject;
	if (signal === 'extend') {
		const seconds = ctx.getNodeParameter('seconds', i) as number;
		name = RUNBOOK_SIGNAL.extendCooldown;
		arg = { seconds, by };
	} else arg = { by, reason };
	const problem = signal === 'extend' ? extendInputProblem(arg) : abortInputProblem(arg);
	if (problem) {
		const [field, ...rule] = problem.split(': ');
		env.fail({ seconds: 'Seconds', by: RUNBOOK.fields.by, reason: 'Reason' }[field] ?? field, rule.join(': '));
	}
	await env.send('POST', `${env.wfUrl(workflowId)}/signal/${name}`, { input: payloads([arg]), identity: 'n8n' });
	return [{ json: { workflowId, signal, sent: true, ...arg } }];
};
