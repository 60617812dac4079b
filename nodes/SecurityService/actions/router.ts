import {
	NodeApiError,
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type JsonObject,
} from 'n8n-workflow';
import { getOperation, hasOperation } from '../../../api/catalog/index';
import { ApiError, SecurityServiceError, TransportError, ValidationError } from '../../../api/errors';
import { redactText } from '../../../api/redact';
import { getClient } from '../transport';
import * as authorizationToken from './authorization/token.operation';
import * as generic from './common/execute.operation';
import type { OperationFn } from './common/types';
import * as customerList from './customer/list.operation';
import * as windowed from './dashboard/windowed.operation';
import { collectParams, isPaged } from './fields';

/** Operations with their own flow; every other operation runs through the generic one. */
function operationFor(opId: string): OperationFn {
	const op = getOperation(opId);
	if (op.resource === 'authorization') return authorizationToken.execute;
	if (op.window) return windowed.execute;
	if (op.list?.paging === 'page') return customerList.execute;
	return generic.execute;
}

function toNodeError(exec: IExecuteFunctions, error: unknown, itemIndex: number): NodeOperationError | NodeApiError {
	if (error instanceof NodeOperationError || error instanceof NodeApiError) return error;
	if (error instanceof ValidationError) {
		return new NodeOperationError(exec.getNode(), error.message, {
			itemIndex,
			description: error.issues.map((i) => `${i.field}: ${i.rule}`).join('\n'),
		});
	}
	if (error instanceof ApiError) {
		return new NodeApiError(exec.getNode(), { code: error.code, msg: error.msg } as JsonObject, {
			itemIndex,
			message: error.message,
			description: `Envelope code ${error.code}: ${error.msg}`,
		});
	}
	if (error instanceof TransportError) {
		return new NodeApiError(exec.getNode(), error.toJSON() as JsonObject, {
			itemIndex,
			message: error.message,
			httpCode: error.status !== undefined ? String(error.status) : undefined,
		});
	}
	const message = error instanceof Error ? error.message : String(error);
	return new NodeOperationError(exec.getNode(), redactText(message), { itemIndex });
}

function errorJson(error: NodeOperationError | NodeApiError, cause: unknown): IDataObject {
	const out: IDataObject = { error: redactText(error.message) };
	if (error.description) out.description = redactText(error.description);
	if (cause instanceof ValidationError) out.issues = cause.issues as unknown as IDataObject[];
	if (cause instanceof ApiError) out.code = cause.code;
	if (cause instanceof SecurityServiceError) out.operation = cause.opId;
	return out;
}

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const out: INodeExecutionData[] = [];
	const client = await getClient(this);
	for (let i = 0; i < items.length; i++) {
		try {
			const resource = this.getNodeParameter('resource', i) as string;
			const operation = this.getNodeParameter('operation', i) as string;
			const opId = `${resource}.${operation}`;
			if (!hasOperation(opId)) {
				throw new NodeOperationError(this.getNode(), `Unknown operation '${operation}' for resource '${resource}'`, { itemIndex: i });
			}
			const op = getOperation(opId);
			const params = collectParams(op, (name) => this.getNodeParameter(name, i, null));
			const returnAll = isPaged(op) ? (this.getNodeParameter('returnAll', i, false) as boolean) : true;
			const limit = isPaged(op) && !returnAll ? (this.getNodeParameter('limit', i, 50) as number) : Infinity;
			const results = await operationFor(opId)({ exec: this, client, op, params, itemIndex: i, returnAll, limit });
			for (const json of results) out.push({ json, pairedItem: { item: i } });
		} catch (error) {
			const nodeError = toNodeError(this, error, i);
			if (this.continueOnFail()) {
				out.push({ json: errorJson(nodeError, error), pairedItem: { item: i } });
				continue;
			}
			throw nodeError;
		}
	}
	return [out];
}
