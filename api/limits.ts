/**
 * Input bounds shared by every entry point (client, n8n nodes, plans, CLI). Hostile or careless input must end in
 * a short, clear error naming the field — never in a request to another path, a multi-megabyte error message or a
 * run that cannot fail.
 *
 * Ids in a URL path (site_id, domain_port_id, customer_id, network_id, host_id, event_id; §1 declares them plain
 * strings, the spec's examples are digits): 1–128 characters from the URI "unreserved" set A–Z a–z 0–9 . _ ~ -
 * starting with a letter or a digit. Such an id never needs percent-encoding, so it can never be normalized
 * onto another path (`.`, `..`), split a path (`/`), end it (`?`, `#`) or hide one of those behind `%2F`.
 * Every path segment is still encoded (encodeURIComponent) by every client, as a second line.
 */

export const ID_MAX = 128;
export const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/;
export const ID_ALPHABET = `1–${ID_MAX} characters from A–Z a–z 0–9 . _ ~ - starting with a letter or a digit, without '/', '?', '#', '%' or spaces`;
export const ID_RULE = `must be ${ID_ALPHABET}`;

/**
 * One URL path segment: percent-encoded, and a segment of dots only (`.`, `..`, which URL parsers normalize away)
 * with its dots encoded too — a value can never change which path is called.
 */
export function pathSegment(v: string): string {
	const e = encodeURIComponent(v);
	return e.charCodeAt(0) === 46 && /^\.+$/.test(e) ? e.replace(/\./g, '%2E') : e; // 46: '.'; ids rarely start so
}

/** The rule an id breaks, or undefined when it is a valid path id. */
export function idProblem(v: unknown): string | undefined {
	if (typeof v !== 'string') return 'must be a string';
	if (v.length === 0) return 'is required (a non-empty string)';
	if (v.length > ID_MAX) return `must be at most ${ID_MAX} characters (got ${v.length})`;
	return ID_RE.test(v) ? undefined : ID_RULE;
}

/** Longest string accepted in a query string or a short field (a URL must stay well under servers' 8 KB limits). */
export const MAX_QUERY_STRING = 1024;
/** Longest string accepted in a request body field (custom block pages, descriptions, regexes). */
export const MAX_BODY_STRING = 64 * 1024;
/** Most elements accepted in one list (IP entries, methods, …). */
export const MAX_LIST = 10_000;
/** Issues spelled out in an error message; the rest are counted ("and M more"). */
export const MAX_ISSUES = 10;
/**
 * Largest answer a transport reads (bytes) before it gives up (configurable per client: `maxResponseBytes`). The
 * largest legitimate answers of the catalog: an IP black/white list of 100,000 entries (~35 bytes each, ~3.5 MB), an
 * event's detail with per-minute bps and pps series over a 31-day attack (~45,000 points per series, ~25 bytes per
 * point, a few series: ~5–10 MB), a page of 1,000 DDoS events (~0.5 MB). 16 MiB holds each with room; a stream
 * without end or a 200 MB answer stops there.
 */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Longest rule text kept in an issue (zod messages may quote input). */
export const MAX_RULE = 300;

export interface Issue {
	field: string;
	rule: string;
}

/** Shortens text for an error message: never more than `max` characters. */
export function clip(s: string, max = MAX_RULE): string {
	return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** Keeps the first MAX_ISSUES issues (field and rule clipped); `more` counts the rest. */
export function boundIssues(issues: readonly Issue[], max = MAX_ISSUES): { shown: Issue[]; more: number } {
	return {
		shown: issues.slice(0, max).map((i) => ({ field: clip(i.field, 200), rule: clip(i.rule) })),
		more: Math.max(0, issues.length - max),
	};
}

/** `a: rule; b: rule (and 9990 more)` — the message form of a bounded issue list. */
export function issuesText(issues: readonly Issue[], max = MAX_ISSUES): string {
	const { shown, more } = boundIssues(issues, max);
	return shown.map((i) => `${i.field}: ${i.rule}`).join('; ') + (more ? ` (and ${more} more)` : '');
}

/**
 * Walks a JSON-like value and reports strings longer than `maxString`, lists longer than `maxList` and nesting
 * deeper than `maxDepth`, by field path — before any schema spends time on a huge input. Stops after MAX_ISSUES + 1.
 */
export function sizeIssues(
	value: unknown,
	opts: { maxString?: number; maxList?: number; maxDepth?: number; path?: string } = {},
): Issue[] {
	const maxString = opts.maxString ?? MAX_BODY_STRING;
	const maxList = opts.maxList ?? MAX_LIST;
	const maxDepth = opts.maxDepth ?? 16;
	const out: Issue[] = [];
	const walk = (v: unknown, path: string, depth: number) => {
		if (out.length > MAX_ISSUES) return;
		const at = path || '(input)';
		if (typeof v === 'string') {
			if (v.length > maxString)
				out.push({ field: at, rule: `must be at most ${maxString} characters (got ${v.length})` });
			return;
		}
		if (typeof v !== 'object' || v === null) return;
		if (depth > maxDepth) {
			out.push({ field: at, rule: `must not be nested deeper than ${maxDepth} levels` });
			return;
		}
		if (Array.isArray(v)) {
			if (v.length > maxList) {
				out.push({ field: at, rule: `must have at most ${maxList} entries (got ${v.length})` });
				return;
			}
			for (let i = 0; i < v.length && out.length <= MAX_ISSUES; i++)
				walk(v[i], path ? `${path}.${i}` : String(i), depth + 1);
			return;
		}
		const keys = Object.keys(v);
		if (keys.length > maxList) {
			out.push({ field: at, rule: `must have at most ${maxList} keys (got ${keys.length})` });
			return;
		}
		for (const k of keys) {
			if (out.length > MAX_ISSUES) return;
			if (k.length > 200) {
				out.push({ field: at, rule: `must not have a key longer than 200 characters` });
				continue;
			}
			walk((v as Record<string, unknown>)[k], path ? `${path}.${k}` : k, depth + 1);
		}
	};
	walk(value, opts.path ?? '', 0);
	return out;
}
