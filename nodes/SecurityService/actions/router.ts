import {
	NodeApiError,
	NodeOperationError,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type JsonObject,
} from 'n8n-workflow';
import { getOperation, hasOperation } from '../../../api/catalog/index';
import { errorText, fieldWords, operationTitle } from '../../../api/catalog/labels';
import type { CatalogEntry } from '../../../api/catalog/types';
import { ApiError, SecurityServiceError, TransportError, ValidationError } from '../../../api/errors';
import { guardRuleIn } from '../../../api/blastRadius';
import { OVERRIDE_PARAM } from '../../../api/client';
import { redactText } from '../../../api/redact';
import { getClient } from '../transport';
import * as authorizationToken from './authorization/token.operation';
import * as generic from './common/execute.operation';
import type { OperationFn } from './common/types';
import * as customerList from './customer/list.operation';
import * as windowed from './dashboard/windowed.operation';
import * as ipBlacklistAdd from './ipBlacklist/add.operation';
import { isPaged } from './fieldTables';
import { collectParams } from './fieldValues';
import { createParamReader } from './params';
import { TEST_EVENT_PARAM } from './versionDescription';
import { withReadableForms } from './readable';

/** Operations with their own flow; every other operation runs through the generic one. */
function operationFor(opId: string): OperationFn {
	const op = getOperation(opId);
	if (op.resource === 'authorization') return authorizationToken.execute;
	if (opId === 'applicationProtection.ipBlacklist.add') return ipBlacklistAdd.execute;
	if (op.window) return windowed.execute;
	if (op.list?.paging === 'page') return customerList.execute;
	return generic.execute;
}

function toNodeError(
	exec: IExecuteFunctions,
	error: unknown,
	itemIndex: number,
	opId?: string,
): NodeOperationError | NodeApiError {
	if (error instanceof NodeOperationError || error instanceof NodeApiError) return error;
	const title = opId && hasOperation(opId) ? operationTitle(opId) : 'Security Service';
	if (error instanceof ValidationError) {
		const issues = labelledIssues(error, opId);
		// The message names the first rule broken; the details list every one, once each.
		const more = issues.length - 1 + error.moreIssues;
		const first = `${issues[0] ?? error.message}${more > 0 ? ` (and ${more} more: see the details)` : ''}`;
		return new NodeOperationError(exec.getNode(), errorText.invalidInput(title, first), {
			itemIndex,
			description: issues.length > 1 ? issues.join('\n') : undefined,
		});
	}
	if (error instanceof ApiError) {
		// A refused token call during another operation: the credential is wrong, not the request.
		const tokenCall = error.opId === 'authorization.appToken' || error.opId === 'authorization.refreshToken';
		if (tokenCall && opId !== error.opId) {
			return new NodeApiError(exec.getNode(), { code: error.code, msg: error.msg } as JsonObject, {
				itemIndex,
				message: errorText.credentialRefused(error.msg, error.code),
				description: errorText.credentialRefusedHint(title),
			});
		}
		return new NodeApiError(exec.getNode(), { code: error.code, msg: error.msg } as JsonObject, {
			itemIndex,
			message: errorText.refused(title, serviceWords(error.msg, opId), error.code),
			description: `Service code ${error.code}: ${error.msg}`,
		});
	}
	if (error instanceof TransportError) {
		return new NodeApiError(exec.getNode(), error.toJSON() as JsonObject, {
			itemIndex,
			message: `${title}: ${error.message.replace(/^[\w.]+: /, '')}`,
			httpCode: error.status !== undefined ? String(error.status) : undefined,
		});
	}
	const message = error instanceof Error ? error.message : String(error);
	return new NodeOperationError(exec.getNode(), redactText(message), { itemIndex });
}

/** The service's message with a leading `field:` it names shown as the field's label (`Site ID: site '9' …`). */
export function serviceWords(msg: string, opId?: string): string {
	const m = /^([a-z][a-z0-9_]*): /.exec(msg);
	if (!m || !opId) return msg;
	const label = fieldWords(opId, m[1]).label;
	return label === m[1] ? msg : `${label}: ${msg.slice(m[0].length)}`;
}

/** Each issue in the node's words: the field's label (never the catalog's name), the guard's settings by label. */
function labelledIssues(error: ValidationError, opId?: string): string[] {
	const words = (field: string) => {
		const top = field.split('.')[0];
		const label = opId ? fieldWords(opId, top).label : top;
		return label === top ? field : `${label}${field !== top ? ` (${field})` : ''}`;
	};
	const override = opId ? fieldWords(opId, OVERRIDE_PARAM).label : OVERRIDE_PARAM;
	const lift = override === OVERRIDE_PARAM ? 'no override lifts it here' : `fill ${override} to lift this rule`;
	return error.issues.map((i) => errorText.issue(words(i.field), guardRuleIn(i.rule, { override: lift })));
}

function errorJson(error: NodeOperationError | NodeApiError, cause: unknown): IDataObject {
	const out: IDataObject = { error: redactText(error.message) };
	if (error.description) out.description = redactText(error.description);
	if (cause instanceof ValidationError) out.issues = cause.issues as unknown as IDataObject[];
	if (cause instanceof ApiError) out.code = cause.code;
	if (cause instanceof SecurityServiceError) out.operation = cause.opId;
	return out;
}

/** A write (not a token operation) on an item the trigger's Fetch Test Event marked as a test event. */
function isTestEventWrite(op: CatalogEntry, json: IDataObject): boolean {
	return op.safety !== 'read' && op.resource !== 'authorization' && json.test_event === true;
}

/**
 * Items of a read operation run this many at a time (after the first, which establishes the token); writes run one
 * item after another, in order (§4.3.1 forbids concurrent HTTP-filter edits, and order matters for lists).
 */
export const READ_CONCURRENCY = 16;

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const items = this.getInputData();
	const client = await getClient(this);
	const perItem: INodeExecutionData[][] = new Array(items.length);
	const param = createParamReader(this, items);

	const resourceOf: string[] = [];
	const operationOf: string[] = [];
	const opIdOf = (i: number) => {
		resourceOf[i] ??= param('resource', i) as string;
		operationOf[i] ??= param('operation', i) as string;
		return `${resourceOf[i]}.${operationOf[i]}`;
	};

	const runItem = async (i: number): Promise<void> => {
		try {
			const opId = opIdOf(i);
			const resource = resourceOf[i];
			const operation = operationOf[i];
			if (!hasOperation(opId)) {
				throw new NodeOperationError(this.getNode(), `Unknown operation '${operation}' for resource '${resource}'`, {
					itemIndex: i,
				});
			}
			const op = getOperation(opId);
			if (isTestEventWrite(op, items[i].json) && param(TEST_EVENT_PARAM, i, false) !== true)
				throw new NodeOperationError(this.getNode(), errorText.testEvent(operationTitle(opId)), { itemIndex: i });
			const params = collectParams(op, (name) => param(name, i, null));
			const returnAll = isPaged(op) ? (param('returnAll', i, false) as boolean) : true;
			const limit = isPaged(op) && !returnAll ? (param('limit', i, 50) as number) : Infinity;
			const results = await operationFor(opId)({ exec: this, client, op, params, itemIndex: i, returnAll, limit });
			perItem[i] = results.map((json) => ({ json: withReadableForms(opId, json), pairedItem: { item: i } }));
		} catch (error) {
			const nodeError = toNodeError(
				this,
				error,
				i,
				resourceOf[i] && operationOf[i] ? `${resourceOf[i]}.${operationOf[i]}` : undefined,
			);
			if (!this.continueOnFail()) throw nodeError;
			perItem[i] = [{ json: errorJson(nodeError, error), pairedItem: { item: i } }];
		}
	};

	let parallel = items.length > 2;
	if (parallel) {
		try {
			parallel = items.every((_, i) => {
				const id = opIdOf(i);
				return hasOperation(id) && getOperation(id).safety === 'read' && getOperation(id).resource !== 'authorization';
			});
		} catch {
			parallel = false;
		}
	}

	if (!parallel) {
		for (let i = 0; i < items.length; i++) await runItem(i);
	} else {
		await runItem(0);
		let next = 1;
		let failure: { index: number; error: unknown } | undefined;
		const worker = async () => {
			while (failure === undefined && next < items.length) {
				const i = next++;
				await runItem(i).catch((error: unknown) => {
					if (failure === undefined || i < failure.index) failure = { index: i, error };
				});
			}
		};
		await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, items.length - 1) }, worker));
		if (failure !== undefined) throw failure.error;
	}
	return [perItem.flat()];
}
