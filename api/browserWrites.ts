/**
 * A local HTTP API a web page must not reach (the simulator's control API, the demo's Temporal HTTP API): a page
 * open in the operator's browser can send a "simple" cross-origin request (text/plain, form-urlencoded, multipart;
 * no CORS preflight) to any loopback port. Refused: an Origin that is not loopback (http(s)://127.x.x.x, localhost,
 * [::1]; `null` included) or a request the browser marks cross-site (Sec-Fetch-Site) — 403; a body that is not
 * `application/json` — 415. Non-browser clients send no Origin and are unaffected. Pure: no imports.
 */
export type RequestHeaders = Record<string, string | string[] | undefined>;

export interface BrowserRefusal {
	status: 403 | 415;
	error: string;
}

const LOOPBACK_ORIGIN = /^https?:\/\/(127(?:\.\d{1,3}){3}|localhost|\[::1\])(:\d{1,5})?$/i;

/** Why a request looks like a web page's write (`what` names the API in the refusal), or undefined. */
export function browserWriteProblem(
	headers: RequestHeaders,
	bodyLength: number,
	what: string,
): BrowserRefusal | undefined {
	const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
	const origin = one(headers.origin);
	if (origin !== undefined && !LOOPBACK_ORIGIN.test(origin.trim()))
		return {
			status: 403,
			error: `origin ${JSON.stringify(origin.slice(0, 100))} is not loopback: ${what} answers local clients only`,
		};
	const site = one(headers['sec-fetch-site']);
	if (site === 'cross-site' || site === 'same-site')
		return { status: 403, error: `a ${site} browser request: ${what} answers local clients only` };
	const type = (one(headers['content-type']) ?? '').split(';')[0].trim().toLowerCase();
	// a bodiless request from a plain client carries no content to type; from a browser it carries an Origin
	// (every cross-origin POST does), checked above
	if (bodyLength > 0 && type !== 'application/json')
		return { status: 415, error: `content-type must be application/json${type ? ` (got ${type.slice(0, 60)})` : ''}` };
	return undefined;
}
