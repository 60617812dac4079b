import type { IDataObject } from 'n8n-workflow';
import { CLIENT_AUTH_STANDIN } from '../../transport';
import type { OperationContext } from './types';

/** Reads a dotted path (`p_info.ipv4.black_soc`; '' = the value itself). */
export function atPath(value: unknown, path: string): unknown {
	if (!path) return value;
	let cur = value;
	for (const k of path.split('.')) {
		if (cur === null || typeof cur !== 'object') return undefined;
		cur = (cur as Record<string, unknown>)[k];
	}
	return cur;
}

/** Output items for a result: list entries one per item, objects as one item, nothing as {success: true}. */
export function toItems(result: unknown, listPath?: string): IDataObject[] {
	if (listPath !== undefined) {
		const list = atPath(result, listPath);
		if (Array.isArray(list)) return list.map((e) => (e !== null && typeof e === 'object' ? (e as IDataObject) : { value: e as string }));
	}
	if (Array.isArray(result)) return result.map((e) => (e !== null && typeof e === 'object' ? (e as IDataObject) : { value: e as string }));
	if (result !== null && typeof result === 'object') return [result as IDataObject];
	if (result === undefined || result === null) return [{ success: true }];
	return [{ value: result as string }];
}

/** Any operation: validate through the catalog, call, unwrap. */
export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op, params } = ctx;
	// call() validates against the catalog before anything is sent (ValidationError names the field and the rule).
	const result = await client.call(op.id, params, op.auth === 'access_token' ? { accessToken: CLIENT_AUTH_STANDIN } : {});
	const items = toItems(result, op.list?.itemsAt);
	return op.list && !ctx.returnAll && op.list.paging ? items.slice(0, ctx.limit) : items;
}
