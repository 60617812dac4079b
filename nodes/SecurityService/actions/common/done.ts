import type { IDataObject } from 'n8n-workflow';
import { doneText, fieldWords, operationTitle } from '../../../../api/catalog/labels';
import type { CatalogEntry } from '../../../../api/catalog/types';

/**
 * What a write whose answer is empty did, derived from the catalog (no per-operation code): the operation, every
 * value sent (path ids such as site_id and domain_port_id, then the entry or setting written) as the catalog checked
 * it, and one sentence a chat step can quote. Secrets and local-only fields never appear.
 */
export function doneItem(op: CatalogEntry, sent: Record<string, unknown>): IDataObject {
	const title = operationTitle(op.id);
	const out: IDataObject = { success: true, operation: title };
	const where: string[] = [];
	const what: string[] = [];
	for (const f of op.fields) {
		if (f.kind === 'secret' || f.constant !== undefined || f.local) continue;
		const v = sent[f.name];
		if (v === undefined || v === null || v === '') continue;
		out[f.name] = v as IDataObject[keyof IDataObject];
		const text = `${fieldWords(op.id, f.name).label} ${readable(v)}`;
		(f.in === 'path' ? where : what).push(text);
	}
	out.summary = doneText(title, what, where);
	return out;
}

/** A value in a sentence: a list as `a, b`, an object as `key value, …`, never JSON. */
function readable(v: unknown): string {
	if (Array.isArray(v)) return v.map(readable).join(', ');
	if (v && typeof v === 'object')
		return Object.entries(v)
			.filter(([, x]) => x !== undefined && x !== null && x !== '')
			.map(([k, x]) => `${k} ${readable(x)}`)
			.join(', ');
	return String(v);
}
