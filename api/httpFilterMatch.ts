/**
 * Which listed HTTP filter policies are "the same" as a create request (GET /http-filter vs the form of §4.3.1):
 * the same p_name, the same url (host plus uri; or host and uri when a listing gives them apart) and an action list
 * that holds the requested action. The service gives no idempotency key and allows two policies with one name, so a
 * create that may have been applied (a worker killed after its POST) is recognised by these fields, compared with
 * what was there before it (worker/src/activities/httpFilterOnce.mts).
 */
export function filterMatches(listed: unknown, req: Record<string, unknown>): boolean {
	if (!listed || typeof listed !== 'object') return false;
	const f = listed as Record<string, unknown>;
	if (String(f.p_name ?? '') !== String(req.p_name ?? '')) return false;
	const host = String(req.host ?? '');
	const uri = String(req.uri ?? '');
	if (typeof f.url === 'string' && f.url !== '') {
		if (f.url !== `${host}${uri}`) return false;
	} else if ((f.host !== undefined && String(f.host) !== host) || (f.uri !== undefined && String(f.uri) !== uri))
		return false;
	if (f.action !== undefined && f.action !== null) {
		const actions = Array.isArray(f.action) ? f.action.map(String) : [String(f.action)];
		if (!actions.includes(String(req.action ?? ''))) return false;
	}
	return true;
}

/** The p_flag_ids of the listed policies that match the request. */
export function matchingFilterIds(list: unknown, req: Record<string, unknown>): string[] {
	if (!Array.isArray(list)) return [];
	return list.filter((f) => filterMatches(f, req)).map((f) => String((f as { p_flag_id?: unknown }).p_flag_id ?? ''));
}

const rangeText = (r: unknown) =>
	typeof r === 'object' && r !== null
		? `${(r as { start_ip?: unknown }).start_ip}-${(r as { end_ip?: unknown }).end_ip}`
		: String(r).includes('-')
			? String(r).trim()
			: `${String(r).trim()}-${String(r).trim()}`;
const sameSet = (a: unknown, b: unknown, f: (x: unknown) => string = String) =>
	JSON.stringify((Array.isArray(a) ? a : []).map(f).sort()) ===
	JSON.stringify((Array.isArray(b) ? b : []).map(f).sort());

/**
 * Whether a listed policy already is what an edit (a PUT that replaces the policy, §4.3.1) would make it: the create's
 * fields (filterMatches), its description, methods and source ranges, and the redirect / busy page of its action.
 * A field the listing leaves out counts as different: an edit that cannot be checked is sent.
 */
export function filterAtTarget(listed: unknown, req: Record<string, unknown>): boolean {
	if (!filterMatches(listed, req)) return false;
	const f = listed as Record<string, unknown>;
	if ((f.p_desc ?? '') !== (req.p_desc ?? '')) return false;
	if (!sameSet(f.methods, req.methods)) return false;
	if (!sameSet(f.other_iprange, req.other_iprange, rangeText)) return false;
	const annex = (f.action_annex ?? {}) as Record<string, unknown>;
	const action = String(req.action ?? '');
	if (action === 'BUSY_PAGE' && annex.page !== req.page) return false;
	if (action === 'URL_REDIRECTION' || action === 'DOMAIN_REDIRECTION') {
		const url = `${req.scheme}://${req.redirect_host}${action === 'URL_REDIRECTION' ? req.redirect_url : ''}`;
		if (annex.url !== url || Number(annex.http_code) !== Number(req.rp_code)) return false;
	}
	return true;
}
