import type { IDataObject } from 'n8n-workflow';
import { formatYmdhms, parseYmdhms } from '../../../../api/catalog/rules';
import type { CatalogEntry } from '../../../../api/catalog/types';
import { CLIENT_AUTH_STANDIN } from '../../transport';
import { atPath, toItems } from '../common/execute.operation';
import type { OperationContext } from '../common/types';

const MAX_PAGES_PER_WINDOW = 10_000;
/** Entries asked for per request (the node pages by itself; fewer when Limit is smaller). */
const PAGE_SIZE = 50;
/** The window when From / To are not given: the last 24 hours (the service's own default starts on the 1st of the month). */
export const DEFAULT_WINDOW_SECONDS = 86_400;

function parseTime(op: CatalogEntry, v: unknown): number | undefined {
	if (v === undefined || v === null || v === '') return undefined;
	if (op.window?.format === 'ymdhms') return typeof v === 'string' ? parseYmdhms(v) : undefined;
	const s = String(v);
	return /^\d{10}$/.test(s) ? Number(s) : undefined;
}

function formatTime(op: CatalogEntry, t: number): string {
	return op.window?.format === 'ymdhms' ? formatYmdhms(t) : String(t);
}

/**
 * Splits [start, end] into windows no longer than the operation's maximum span (31 days for ddos_events, 90 for
 * flow_down_events). Windows touch but do not overlap: the next one starts one second after the previous end.
 * Returns the parameter sets, or the original parameters when no split is needed or the range is not complete.
 */
export function splitWindows(op: CatalogEntry, params: Record<string, unknown>): Array<Record<string, unknown>> {
	const w = op.window;
	if (!w) return [params];
	const a = parseTime(op, params[w.startField]);
	const b = parseTime(op, params[w.endField]);
	if (a === undefined || b === undefined || b < a || b - a <= w.maxSeconds) return [params];
	const out: Array<Record<string, unknown>> = [];
	for (let s = a; s <= b; ) {
		const e = Math.min(s + w.maxSeconds, b);
		out.push({ ...params, [w.startField]: formatTime(op, s), [w.endField]: formatTime(op, e) });
		s = e + 1;
	}
	return out;
}

/**
 * An explicit window: To defaults to now, From to 24 hours before To. Never the service's silent default (ddos_events
 * would start on the first day of the month, flow_down_events 90 days back).
 */
export function withDefaultWindow(
	op: CatalogEntry,
	params: Record<string, unknown>,
	now = Math.floor(Date.now() / 1000),
): Record<string, unknown> {
	const w = op.window;
	if (!w) return params;
	const given = (v: unknown) => v !== undefined && v !== null && v !== '';
	const out = { ...params };
	if (!given(out[w.endField])) out[w.endField] = formatTime(op, now);
	if (!given(out[w.startField])) {
		const end = parseTime(op, out[w.endField]);
		if (end !== undefined) out[w.startField] = formatTime(op, end - DEFAULT_WINDOW_SECONDS);
	}
	return out;
}

function dedupeKey(e: IDataObject): string | undefined {
	return typeof e.alert_id === 'string' || typeof e.alert_id === 'number' ? String(e.alert_id) : undefined;
}

/** Time-windowed lists (ddos_events, flow_down_events): split, page, merge (deduplicated by alert_id). */
export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op } = ctx;
	const windows = splitWindows(op, withDefaultWindow(op, ctx.params));
	const paged = op.list?.paging === 'startNum';
	// Validate every window before any request is sent.
	for (const p of windows) client.validate(op.id, paged ? { ...p, start: 0 } : p);

	const out: IDataObject[] = [];
	const seen = new Set<string>();
	const limit = paged || ctx.returnAll === false ? ctx.limit : Infinity;
	const capped = () => !ctx.returnAll && op.list?.paging !== undefined && out.length >= limit;
	const add = (entries: IDataObject[]) => {
		for (const e of entries) {
			const k = dedupeKey(e);
			if (k !== undefined) {
				if (seen.has(k)) continue;
				seen.add(k);
			}
			out.push(e);
		}
	};

	for (const p of windows) {
		if (!paged) {
			add(toItems(await client.call(op.id, p, { accessToken: CLIENT_AUTH_STANDIN }), op.list?.itemsAt));
			if (capped()) break;
			continue;
		}
		const num = Math.max(1, Math.min(PAGE_SIZE, ctx.returnAll ? PAGE_SIZE : ctx.limit));
		let start = 0;
		for (let page = 0; page < MAX_PAGES_PER_WINDOW; page++) {
			const result = await client.call(op.id, { ...p, start, num }, { accessToken: CLIENT_AUTH_STANDIN });
			const entries = (atPath(result, op.list?.itemsAt ?? '') as IDataObject[] | undefined) ?? [];
			add(entries);
			if (capped()) break;
			start += entries.length;
			const total = Number(op.list?.totalAt ? atPath(result, op.list.totalAt) : NaN);
			if (entries.length === 0 || entries.length < num || (Number.isFinite(total) && start >= total)) break;
		}
		if (capped()) break;
	}
	return op.list?.paging !== undefined && !ctx.returnAll ? out.slice(0, limit) : out;
}
