import type { BlastRadiusIssue } from './blastRadius';

/**
 * The guard's rule for the user-agent blacklist (`ua_regex`, §2.4: "array of string" of regular expressions; the
 * request fields are not shown): a pattern that matches every user agent would block every client of the site.
 *
 * How the service applies a pattern is not shown, so the reading that refuses more is taken: the pattern is searched
 * anywhere in the User-Agent (not anchored), case-insensitively, and a leading inline flag group (`(?i)`) is dropped.
 * A pattern JavaScript cannot compile (`*`, PCRE-only syntax) is also read as a wildcard (`*` any text, `?` one
 * character) matched against the whole user agent — `*` means "everything" to whoever wrote it.
 *
 * "Every user agent" is judged on real clients that share almost nothing (browsers on three systems, a crawler,
 * command-line tools, HTTP libraries), shortest first so that a pattern stops at its first miss: `.*`, `^.*$`, `.+`,
 * `.`, `\S`, `[a-z]`, `x*` and `*` are refused; `^$` (clients that send no user agent), `curl` or `bot` are not.
 * Empty patterns are refused by the catalog's own rule. Pure: no I/O, deterministic (safe in workflow code).
 */
export const UA_SAMPLES: readonly string[] = [
	'curl/8.5.0',
	'Wget/1.21.4',
	'Java/17.0.9',
	'okhttp/4.12.0',
	'Go-http-client/2.0',
	'python-requests/2.31.0',
	'Googlebot/2.1 (+http://www.google.com/bot.html)',
	'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
	'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
	'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
];

const UA_FIELDS: Readonly<Record<string, string>> = { 'applicationProtection.uaBlacklist.add': 'ua_regex' };

/** The pattern as a matcher under the reading above; undefined when it can be read neither way. */
function matcherOf(pattern: string): ((ua: string) => boolean) | undefined {
	const body = pattern.replace(/^\(\?[a-zA-Z]+\)/, '');
	try {
		const re = new RegExp(body, 'i');
		return (ua) => re.test(ua);
	} catch {
		const glob = body
			.replace(/[.+^${}()|[\]\\]/g, '\\$&')
			.replace(/\*/g, '.*')
			.replace(/\?/g, '.');
		try {
			const re = new RegExp(`^${glob}$`, 'is');
			return (ua) => re.test(ua);
		} catch {
			return undefined;
		}
	}
}

/** Whether a user-agent pattern matches every sample client (and, when it does, whether it also matches none at all). */
export function matchesEveryUserAgent(pattern: string): { every: boolean; empty: boolean } {
	const m = matcherOf(pattern);
	if (!m) return { every: false, empty: false };
	const every = UA_SAMPLES.every((ua) => m(ua));
	return { every, empty: every && m('') };
}

/** No issue (one list for every call without a pattern: nothing is built per call). */
const NONE: readonly BlastRadiusIssue[] = Object.freeze([]);

/** The issues of a call's user-agent patterns: each pattern that would block every client. */
export function uaPatternIssues(opId: string, params: Record<string, unknown>): readonly BlastRadiusIssue[] {
	const field = UA_FIELDS[opId];
	const v = field ? params[field] : undefined;
	if (v === undefined || v === null) return NONE;
	const list = Array.isArray(v) ? v : [v];
	const out: BlastRadiusIssue[] = [];
	list.forEach((p, i) => {
		if (typeof p !== 'string') return;
		const m = matchesEveryUserAgent(p);
		if (!m.every) return;
		out.push({
			field: Array.isArray(v) ? `${field}.${i}` : field,
			kind: 'every-user-agent',
			conflict: p,
			rule: `${JSON.stringify(p)} matches every user agent (all of ${UA_SAMPLES.length} very different clients tried: browsers, a crawler, curl, HTTP libraries${m.empty ? ', and a client sending none' : ''}): it would block every client of the site; never sent`,
		});
	});
	return out;
}
