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
import { browserWriteProblem } from '../api/browserWrites.ts';

interface Reply {
	status: number;
	body: unknown;
}

const ok = (body: unknown): Reply => ({ status: 200, body });
const bad = (status: number, error: string): Reply => ({ status, body: { error } });

/** Request headers the control API's browser check reads (node's lower-cased IncomingHttpHeaders). */
export type ControlHeaders = Record<string, string | string[] | undefined>;

/**
 * The control API changes what the simulator answers (faults, resets, token expiry), so a web page open in the
 * operator's browser must not reach it: api/browserWrites.ts (403 for a foreign Origin or a cross-site request, 415
 * for a body that is not JSON), the same rule the demo's guard in front of Temporal's HTTP API applies.
 */
export function controlRequestProblem(headers: ControlHeaders, bodyLength: number): Reply | undefined {
	const r = browserWriteProblem(headers, bodyLength, 'the control API');
	return r && bad(r.status, r.error);
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
	const [body, malformed] = readControlBody(raw);
	if (malformed) return malformed;
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
		return serviceRoute(sim, route, query, body);
	} catch (e) {
		return bad(400, (e as Error).message);
	}
}

/** The service's behaviour under test: its rate limit, injected faults, request log and tokens. */
function serviceRoute(sim: Simulator, route: string, query: Fields, body: Record<string, unknown>): Reply {
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
}

/** The request's JSON object (none: {}), or the answer refusing it. */
function readControlBody(raw: Buffer): [Record<string, unknown>, Reply?] {
	if (!raw.length) return [{}];
	let body: unknown;
	try {
		body = parseBoundedJson(raw.toString('utf8'));
	} catch (e) {
		return [{}, bad(400, e instanceof JsonBoundError ? `body ${e.message}` : 'body must be JSON')];
	}
	if (!body || typeof body !== 'object' || Array.isArray(body)) return [{}, bad(400, 'body must be a JSON object')];
	return [body as Record<string, unknown>];
}
