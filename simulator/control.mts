/**
 * The control API under /__sim/ (not part of the vendor API; no access_token; JSON in and out).
 * Every route calls the same Simulator method tests can call in-process. Documented in README.md.
 */
import type { Simulator } from './index.mts';
import type { Fields } from './multipart.mts';
import { fleetView } from './fleet.mts';
import { siteNetwork } from './help.mts';
import { JsonBoundError, parseBoundedJson } from './util.mts';
import { rateLimitProblems, type RateLimitSpec } from './rateLimit.mts';
import { consoleCall, type ConsoleCall } from './console.mts';

interface Reply {
	status: number;
	body: unknown;
}

const ok = (body: unknown): Reply => ({ status: 200, body });
const bad = (status: number, error: string): Reply => ({ status, body: { error } });

/** Request headers the control API's browser check reads (node's lower-cased IncomingHttpHeaders). */
export type ControlHeaders = Record<string, string | string[] | undefined>;

const LOOPBACK_ORIGIN = /^https?:\/\/(127(?:\.\d{1,3}){3}|localhost|\[::1\])(:\d{1,5})?$/i;

/**
 * The control API changes what the simulator answers (faults, resets, token expiry), so a web page open in the
 * operator's browser must not reach it: a request carrying an Origin that is not loopback (http(s)://127.x.x.x,
 * localhost, [::1]; `null` included) or marked cross-site by the browser (Sec-Fetch-Site) is refused (403), and a
 * request with a body must say `content-type: application/json` (415) — the "simple" content types a page may send
 * without a CORS preflight (text/plain, form-urlencoded, multipart) never reach a route. Non-browser clients send no
 * Origin and are unaffected.
 */
export function controlRequestProblem(headers: ControlHeaders, bodyLength: number): Reply | undefined {
	const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
	const origin = one(headers.origin);
	if (origin !== undefined && !LOOPBACK_ORIGIN.test(origin.trim()))
		return bad(
			403,
			`origin ${JSON.stringify(origin.slice(0, 100))} is not loopback: the control API answers local clients only`,
		);
	const site = one(headers['sec-fetch-site']);
	if (site === 'cross-site' || site === 'same-site')
		return bad(403, `a ${site} browser request: the control API answers local clients only`);
	const type = (one(headers['content-type']) ?? '').split(';')[0].trim().toLowerCase();
	// a bodiless request (DELETE /faults, POST /tokens/expire from a plain client) carries no content to type; from
	// a browser it carries an Origin (every cross-origin POST does), checked above
	if (bodyLength > 0 && type !== 'application/json')
		return bad(415, `content-type must be application/json${type ? ` (got ${type.slice(0, 60)})` : ''}`);
	return undefined;
}

export async function handleControl(
	sim: Simulator,
	method: string,
	path: string,
	query: Fields,
	raw: Buffer,
	headers: ControlHeaders = {},
): Promise<Reply> {
	const refused = controlRequestProblem(headers, raw.length);
	if (refused) return refused;
	let body: Record<string, unknown> = {};
	if (raw.length) {
		try {
			body = parseBoundedJson(raw.toString('utf8')) as Record<string, unknown>;
		} catch (e) {
			return bad(400, e instanceof JsonBoundError ? `body ${e.message}` : 'body must be JSON');
		}
		if (!body || typeof body !== 'object' || Array.isArray(body)) return bad(400, 'body must be a JSON object');
	}
	const seg = path.split('/').filter(Boolean).slice(1); // after __sim
	const route = `${method} /${seg.join('/')}`;
	try {
		if (route === 'GET /state') return ok(sim.snapshot());
		if (route === 'GET /ids') return ok(sim.firstIds());
		if (route === 'GET /fleet') return ok(fleetView(sim.world));
		if (method === 'GET' && seg.length === 3 && seg[0] === 'sites' && seg[2] === 'network') {
			const site = sim.world.sites.get(seg[1]);
			return site ? ok(siteNetwork(site)) : bad(404, `site '${seg[1].slice(0, 64)}' does not exist`);
		}
		if (route === 'POST /reset') {
			const seed = body.seed === undefined ? undefined : Number(body.seed);
			if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed <= 2 ** 32))
				return bad(400, 'seed must be an integer from 0 to 4294967296');
			sim.reset(seed);
			return ok({ ok: true, seed: sim.opts.seed, now: sim.nowMs(), ids: sim.firstIds() });
		}
		if (route === 'GET /clock') return ok({ now: sim.nowMs() });
		if (route === 'POST /clock/advance') {
			const s = typeof body.seconds === 'number' || typeof body.seconds === 'string' ? Number(body.seconds) : NaN;
			if (!(Number.isFinite(s) && s >= 0)) return bad(400, 'seconds must be a non-negative number');
			// advance() bounds the step and the total offset (the clock must stay a finite time)
			return ok({ now: sim.advance(s) });
		}
		if (route === 'POST /attacks') return ok(sim.startAttack(body as never));
		if (route === 'GET /attacks') return ok(sim.world.attacks.map((a) => sim.attackView(a.id)));
		if (seg[0] === 'attacks' && seg.length >= 2) {
			const id = decodeURIComponent(seg[1]);
			if (!sim.world.attacks.some((a) => a.id === id)) return bad(404, `attack '${id}' does not exist`);
			if ((method === 'DELETE' && seg.length === 2) || (method === 'POST' && seg[2] === 'stop' && seg.length === 3))
				return ok(sim.stopAttack(id));
			if (method === 'GET' && seg.length === 2) return ok(sim.attackView(id));
		}
		if (route === 'POST /scenario') return ok(sim.loadScenario(body as never));
		if (route === 'POST /flow-down') return ok(sim.addFlowDown(body as never));
		if (route === 'POST /url-bypass')
			return ok(
				sim.addUrlBypass(
					String(body.site_id ?? sim.firstIds().site_id),
					String(body.domain_port_id ?? sim.firstIds().domain_port_id),
					String(body.url),
				),
			);
		if (route === 'POST /console') return ok(await consoleCall(sim, body as unknown as ConsoleCall));
		if (route === 'POST /ratelimit') {
			const p = rateLimitProblems(body);
			if (p.length) return bad(400, p.join('; '));
			return ok(sim.setRateLimit(body as unknown as RateLimitSpec));
		}
		if (route === 'GET /ratelimit')
			return ok({
				spec: sim.rateLimiter?.spec ?? null,
				refused: sim.rateLimiter?.refused ?? {},
				stalls: sim.rateLimiter?.stalls ?? [],
			});
		if (route === 'DELETE /ratelimit') return ok(sim.setRateLimit(undefined) ?? null);
		if (route === 'POST /faults') return ok(sim.addFault(body as never));
		if (route === 'GET /faults') return ok(sim.faults);
		if (route === 'DELETE /faults') {
			sim.faults = [];
			return ok({ ok: true });
		}
		if (route === 'GET /requests') {
			const op = query.get('op')?.[0];
			const since = query.get('since')?.[0];
			return ok(sim.requests({ op, since: since === undefined ? undefined : Number(since) }));
		}
		if (route === 'DELETE /requests') {
			sim.clearRequests();
			return ok({ ok: true });
		}
		if (route === 'POST /tokens/expire') return ok({ expired: sim.expireTokens() });
		return bad(404, `no control route ${route}`);
	} catch (e) {
		return bad(400, (e as Error).message);
	}
}
