import type { IDataObject } from 'n8n-workflow';
import { callIssues } from '../../../../api/blastRadius';
import { CLIENT_AUTH_STANDIN } from '../../transport';
import { doneItem } from './done';
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
		if (Array.isArray(list))
			return list.map((e) => (e !== null && typeof e === 'object' ? (e as IDataObject) : { value: e as string }));
	}
	if (Array.isArray(result))
		return result.map((e) => (e !== null && typeof e === 'object' ? (e as IDataObject) : { value: e as string }));
	if (result !== null && typeof result === 'object') return [result as IDataObject];
	if (result === undefined || result === null) return [{ success: true }];
	return [{ value: result as string }];
}

/** Any operation: validate through the catalog, call, unwrap. */
export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op, params } = ctx;
	// call() validates against the catalog before anything is sent (ValidationError names the field and the rule).
	const result = await client.call(
		op.id,
		params,
		op.auth === 'access_token' ? { accessToken: CLIENT_AUTH_STANDIN } : {},
	);
	// A write the service answers with nothing says what it did (site, domain-port, the entry or setting written).
	const empty = result === undefined || result === null;
	const items =
		empty && op.safety !== 'read' ? [doneItem(op, client.validate(op.id, params))] : toItems(result, op.list?.itemsAt);
	const override = wideBlockOverride(op.id, params);
	if (override && items.length === 1) items[0] = { ...items[0], wideBlockOverride: override };
	return op.list && !ctx.returnAll && op.list.paging ? items.slice(0, ctx.limit) : items;
}

/**
 * A block sent under the widest-prefix override: recorded in the output item (n8n's execution data is the audit of
 * a node run), with the entries it let through and the reason given.
 */
export function wideBlockOverride(
	opId: string,
	params: Record<string, unknown>,
	entries?: string[],
): IDataObject | undefined {
	const reason = params.allowWideBlock;
	if (typeof reason !== 'string' || !reason.trim()) return undefined;
	const each = entries ? entries.map((e) => ({ ...params, ip_black_list: e })) : [params];
	const wide = each.flatMap((p) => callIssues(opId, p, {})).filter((i) => i.kind === 'widest-prefix');
	return wide.length
		? { rule: 'widest prefix (/16)', entries: wide.map((i) => i.conflict), reason: reason.trim() }
		: undefined;
}
