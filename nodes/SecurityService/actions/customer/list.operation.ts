import type { IDataObject } from 'n8n-workflow';
import { CLIENT_AUTH_STANDIN } from '../../transport';
import { atPath } from '../common/execute.operation';
import type { OperationContext } from '../common/types';

/** Upper bound on pages fetched in one run (protects against a service that never reports the last page). */
const MAX_PAGES = 10_000;

/** customer.list: pages 1..pages (the page parameter's name is not shown in the spec; see README). */
export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op, params } = ctx;
	client.validate(op.id, { ...params, page: 1 });
	const out: IDataObject[] = [];
	for (let page = 1; page <= MAX_PAGES; page++) {
		const result = (await client.call(op.id, { ...params, page }, { accessToken: CLIENT_AUTH_STANDIN })) as IDataObject;
		const entries = (atPath(result, op.list?.itemsAt ?? '') as IDataObject[] | undefined) ?? [];
		out.push(...entries);
		if (!ctx.returnAll && out.length >= ctx.limit) return out.slice(0, ctx.limit);
		const pages = Number(result.pages ?? 0);
		if (entries.length === 0 || page >= pages) break;
	}
	return out;
}
