import type { IDataObject } from 'n8n-workflow';
import { runbookIdOf } from '../common/checks';
import type { OperationFn } from '../common/types';

/** Describe: status, run id, type, start and close time, task queue. */
export const execute: OperationFn = async (env) => {
	const workflowId = runbookIdOf(env);
	const r = await env.send('GET', env.wfUrl(workflowId));
	const info = (r.workflowExecutionInfo ?? {}) as IDataObject;
	const exec = (info.execution ?? {}) as IDataObject;
	return [
		{
			json: {
				workflowId,
				runId: exec.runId,
				status: String(info.status ?? '').replace(/^WORKFLOW_EXECUTION_STATUS_/, ''),
				type: (info.type as IDataObject | undefined)?.name,
				startTime: info.startTime,
				closeTime: info.closeTime,
				taskQueue: info.taskQueue,
			},
		},
	];
};
