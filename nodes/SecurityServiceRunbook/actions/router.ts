import { NodeApiError, NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import { temporalTransport } from '../transport';
import * as blockAdd from './blocks/add.operation';
import * as blockExtend from './blocks/extend.operation';
import * as blockList from './blocks/list.operation';
import * as blockRemove from './blocks/remove.operation';
import { boundedText, fail } from './common/checks';
import type { OperationFn } from './common/types';
import * as cancel from './runbook/cancel.operation';
import * as decide from './runbook/decide.operation';
import * as describe from './runbook/describe.operation';
import * as query from './runbook/query.operation';
import * as signal from './runbook/signal.operation';
import * as start from './runbook/start.operation';

/** Operation value (RUNBOOK.operations) → its execute. */
const OPERATIONS: Record<string, OperationFn> = {
	start: start.execute,
	decide: decide.execute,
	signal: signal.execute,
	query: query.execute,
	cancel: cancel.execute,
	describe: describe.execute,
	blockAdd: blockAdd.execute,
	blockExtend: blockExtend.execute,
	blockRemove: blockRemove.execute,
	blockList: blockList.execute,
};

/** Runs each input item's operation in order; a failed item is an error item under Continue On Fail. */
export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const out: INodeExecutionData[] = [];
	const credentials = await this.getCredentials('temporalApi');
	const temporal = temporalTransport(this, credentials);
	const payloadKey = typeof credentials.payloadSecretKey === 'string' ? credentials.payloadSecretKey : '';
	for (let i = 0; i < items.length; i++) {
		try {
			if (temporal.tlsProblem)
				throw new NodeOperationError(this.getNode(), `Temporal API credential › ${temporal.tlsProblem}`, {
					itemIndex: i,
					description: 'Nothing was sent to Temporal.',
				});
			const operation = this.getNodeParameter('operation', i) as string;
			const run = Object.hasOwn(OPERATIONS, operation) ? OPERATIONS[operation] : undefined;
			if (!run)
				throw new NodeOperationError(this.getNode(), `Operation: '${operation}' is not supported`, { itemIndex: i });
			const results = await run({
				ctx: this,
				i,
				ns: temporal.ns,
				workflowsUrl: temporal.workflowsUrl,
				wfUrl: temporal.wfUrl,
				call: (method, url, body, qs) => temporal.call(i, method, url, body, qs),
				send: (method, url, body) => temporal.send(i, method, url, body),
				payloadKey,
				fail: (field, rule) => fail(this, field, rule, i),
				text: (field, v) => boundedText(this, field, v, i),
			});
			for (const r of results) out.push({ ...r, pairedItem: { item: i } });
		} catch (error) {
			const nodeError =
				error instanceof NodeOperationError || error instanceof NodeApiError
					? error
					: new NodeOperationError(this.getNode(), error as Error, { itemIndex: i });
			if (this.continueOnFail()) {
				out.push({ json: { error: nodeError.message }, pairedItem: { item: i } });
				continue;
			}
			throw nodeError;
		}
	}
	return [out];
}
