import type { IDataObject } from 'n8n-workflow';
import { listEntryRange, type Ipv4ListEntry } from '../../../../api/catalog/ipv4';
import { blockSummary, operationTitle } from '../../../../api/catalog/labels';
import { ValidationError } from '../../../../api/errors';
import { blacklistCandidates, formatRange, type Range } from '../../../../api/ranges';
import { CLIENT_AUTH_STANDIN } from '../../transport';
import type { OperationContext } from '../common/types';
import { wideBlockOverride } from '../common/execute.operation';

/**
 * IP Blacklist › Add with one or many entries in one step (a list from an expression, or text separated by commas,
 * spaces or new lines). The service takes one start-end range per request (§4.3), so the entries are merged into the
 * fewest ranges (api/ranges.ts, as the runbooks do), minus what the whitelist and the blacklist already hold (read
 * first: a repeated add is never sent blindly), each range checked by the catalog's rules before anything is sent
 * and then added one after another. The output says what was blocked and what was refused, and why.
 */

const FIELD = 'ip_black_list';
/** Most entries one item may carry (each merged range is one request). */
export const MAX_BLOCK_ENTRIES = 1000;

/** The entries given: an array, or text separated by commas, semicolons, spaces or new lines. */
export function entriesOf(v: unknown): string[] {
	const raw = Array.isArray(v)
		? v.flatMap((e) => entriesOf(e))
		: typeof v === 'string' || typeof v === 'number'
			? String(v).split(/[\s,;]+/)
			: [];
	return raw.map((s) => s.trim()).filter(Boolean);
}

const issue = (rule: string) => new ValidationError('applicationProtection.ipBlacklist.add', [{ field: FIELD, rule }]);

function listed(result: unknown, key: 'black_soc' | 'white_soc'): Range[] {
	const list =
		(result as { p_info?: { ipv4?: Record<string, Ipv4ListEntry[]> } } | undefined)?.p_info?.ipv4?.[key] ?? [];
	return list.map((e) => listEntryRange(e)).filter((r): r is Range => r !== undefined);
}

/** The catalog's rules on one merged range: undefined when it may be sent, else the rules it breaks. */
function rangeProblem(ctx: OperationContext, range: string): string | undefined {
	try {
		ctx.client.validate(ctx.op.id, { ...ctx.params, [FIELD]: range });
		return undefined;
	} catch (error) {
		if (error instanceof ValidationError) return error.issues.map((i) => i.rule).join('; ');
		return error instanceof Error ? error.message : String(error);
	}
}

export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op, params } = ctx;
	const entries = entriesOf(params[FIELD]);
	if (!entries.length) client.validate(op.id, { ...params, [FIELD]: undefined }); // the catalog's own "is required"
	if (!entries.length) throw issue('is required');
	if (entries.length > MAX_BLOCK_ENTRIES)
		throw issue(`must list at most ${MAX_BLOCK_ENTRIES} entries (got ${entries.length})`);
	// Bad input stops the step before anything is sent: every entry is checked by the catalog's rules first, then by
	// the whole blast-radius guard (the site's own addresses are read for it: the only requests before a refusal).
	for (const e of entries) client.validate(op.id, { ...params, [FIELD]: e });
	const opts = { accessToken: CLIENT_AUTH_STANDIN };
	for (const e of entries) await client.check(op.id, { ...params, [FIELD]: e }, opts);

	const site = { site_id: String(params.site_id), domain_port_id: String(params.domain_port_id) };
	const [black, white] = await Promise.all([
		client.call('applicationProtection.ipBlacklist.get', site, opts),
		client.call('applicationProtection.ipWhitelist.get', site, opts),
	]);
	const cand = blacklistCandidates({
		sources: entries,
		whitelist: listed(white, 'white_soc'),
		protectedRanges: [],
		alreadyListed: listed(black, 'black_soc'),
	});
	const refused: IDataObject[] = cand.skipped.map((s) => ({ entry: s.source, reason: s.reason }));
	const toAdd: string[] = [];
	for (const r of cand.add) {
		const range = formatRange(r);
		// A merged range a rule refuses (for example one wider than allowed) is reported, not sent.
		const problem = rangeProblem(ctx, range);
		if (problem) refused.push({ entry: range, reason: problem });
		else toAdd.push(range);
	}
	const blocked: string[] = [];
	for (const range of toAdd) {
		await client.call(op.id, { ...params, [FIELD]: range }, opts);
		blocked.push(range);
	}
	const override = wideBlockOverride(op.id, params, entries);
	const title = operationTitle(op.id);
	const summary = blockSummary(
		title,
		blocked,
		refused.map((r) => String(r.entry)),
		site,
	);
	return [
		{
			site_id: site.site_id,
			domain_port_id: site.domain_port_id,
			entries,
			blocked,
			refused,
			success: true,
			operation: title,
			summary,
			...(override ? { wideBlockOverride: override } : {}),
		},
	];
}
