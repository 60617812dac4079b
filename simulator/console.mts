/**
 * The vendor's console (`POST /__sim/console`): a person changing a setting in the provider's own web console, not
 * through the Open API. It runs the operation's handler with the same decoding and rules (the console writes the same
 * policies), without a token, rate limit or fault, and logs the call with `caller: 'console'` — what a runbook must
 * cope with: a write that never passed through our client or Temporal.
 */
import type { Simulator } from './index.mts';
import { handlers } from './handlers.mts';
import { requestCtx } from './handlers/shared.mts';
import { Input, SimError } from './util.mts';
import { CODES } from './codes.mts';

export interface ConsoleCall {
	/** An operation id of the catalog (e.g. `applicationProtection.ipBlacklist.add`). */
	op: string;
	/** Its parameters as the client takes them: path parameters and fields by name (lists for repeated fields). */
	params?: Record<string, unknown>;
}

const text = (v: unknown) => (Array.isArray(v) ? v.map(String) : [String(v)]);

/** Runs one console change; answers like the API's envelope (`{code, msg, result?}`). Throws on a bad call shape. */
export async function consoleCall(
	sim: Simulator,
	call: ConsoleCall,
): Promise<{ code: number; msg: string; result?: unknown }> {
	const route = sim.router.routes.find((r) => r.id === call?.op);
	const def = route && handlers[route.id];
	if (!route || !def || def.enc === 'redirect' || route.id.startsWith('authorization.'))
		throw new Error(
			`op: must be an operation id of the Open API other than authorization (got ${JSON.stringify(call?.op)})`,
		);
	const all = call.params && typeof call.params === 'object' ? call.params : {};
	const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
	const params: Record<string, string> = {};
	for (const n of names) params[n] = String(all[n] ?? '');
	const fields = new Map<string, string[]>();
	const rest: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(all))
		if (!names.includes(k) && v !== undefined) {
			fields.set(k, text(v));
			rest[k] = v;
		}
	const inQuery = def.enc === 'query';
	const flat = Object.fromEntries([...fields].map(([k, v]) => [k, v.length === 1 ? v[0] : v]));
	const entry = sim.logRequest({
		time: sim.nowMs(),
		opId: route.id,
		method: route.method,
		path: route.path.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(params[n])),
		query: inQuery ? flat : {},
		body: inQuery ? undefined : def.enc === 'json' ? rest : flat,
		status: 200,
		code: null,
		caller: 'console',
	});
	const empty = new Map<string, string[]>();
	const ctx = requestCtx(
		params,
		new Input(inQuery ? fields : empty),
		new Input(inQuery || def.enc === 'json' ? empty : fields),
		def.enc === 'json' ? rest : undefined,
		sim.opts.unknownFields === 'reject',
	);
	try {
		const result = await def.fn(sim, ctx);
		entry.code = 0;
		return result === undefined ? { code: 0, msg: 'success' } : { code: 0, msg: 'success', result };
	} catch (e) {
		entry.code = e instanceof SimError ? e.code : CODES.INTERNAL;
		return { code: entry.code, msg: (e as Error).message };
	}
}
