import { catalog, getOperation } from './catalog/index';
import { callWith } from './clientCall';
import { clientContext, type CallFn, type ClientContext } from './clientContext';
import { checked } from './clientGuard';
import { send } from './clientSend';
import type { CallOptions, Client, ClientOptions, OpsTree } from './clientTypes';
import { encodeRequest } from './encode';
import { NOT_JSON, parseJson, type Envelope } from './envelope';
import { ApiError, TransportError } from './errors';
import { parseConnectRedirect } from './tokens';
import { validateParams } from './validate';

/**
 * The client: call(operationId, params) → validate (catalog zod) → encode → transport → envelope → result (catalog zod).
 * One path for every operation and both hosts (undici in the worker, n8n's request helpers in the nodes). Its steps:
 * api/validate.ts (parameters and the guard's rules), api/clientGuard.ts (the guard's own-address lookup),
 * api/clientCall.ts (attempts, retries, deadline), api/clientSend.ts (one request, budget, refusals),
 * api/envelope.ts (the answer), api/clientContext.ts (settings and tokens), api/clientTypes.ts (options, events, types).
 */

export * from './clientTypes';
export { BudgetDeferredError } from './errors';
export { isClientRefusal } from './envelope';
export { OVERRIDE_PARAM, splitOverride, validateParams, type WideBlockOverride } from './validate';

export function createClient(opts: ClientOptions): Client {
	// The context's token requests go through this client's own call (late-bound: the call needs the context).
	let call: CallFn = () => Promise.reject(new Error('client not ready'));
	const ctx = clientContext(opts, (...a) => call(...a));
	call = callWith(ctx);
	const deadline = () => (opts.callTimeoutMs === undefined ? undefined : ctx.now() + opts.callTimeoutMs);
	// The ops tree (a function per catalog operation) is built on first use: a host holding many clients that only
	// `call` (the worker's one client per tenant) does not pay for it per client.
	let opsTree: OpsTree | undefined;
	return {
		call: call as Client['call'],
		validate: ((opId: string, params?: Record<string, unknown>) =>
			validateParams(getOperation(opId), params, ctx.policy)) as Client['validate'],
		check: async (opId, params = {}, o = {}) => checked(ctx, call, getOperation(opId), params, o, deadline()),
		get ops() {
			return (opsTree ??= buildOpsTree(call));
		},
		connect: (params) => connect(ctx, params),
		tokens: ctx.tokens,
		options: { baseUrl: ctx.baseUrl, timeoutMs: ctx.timeoutMs, retries: ctx.retries },
	};
}

/** The connect step of the user-token flow: a redirect whose `state` must be the one sent. */
async function connect(ctx: ClientContext, params: Record<string, unknown>): Promise<{ code: string; state: string }> {
	const op = getOperation('authorization.connect');
	const valid = validateParams(op, params);
	const req = encodeRequest(op, valid, {
		baseUrl: ctx.baseUrl,
		timeoutMs: ctx.timeoutMs,
		maxResponseBytes: ctx.maxResponseBytes,
	});
	const { res, ms } = await send(ctx, op, req, 0);
	ctx.onEvent?.({ type: 'response', opId: op.id, status: res.status, ms });
	const location = res.headers.location ?? res.headers.Location;
	if (res.status < 300 || res.status >= 400 || !location) {
		const env = parseJson(res.body) as Partial<Envelope> | typeof NOT_JSON;
		if (env !== NOT_JSON && typeof env?.code === 'number' && env.code !== 0)
			throw new ApiError(op.id, env.code, env.msg ?? '');
		throw new TransportError(op.id, 'http', `expected a redirect, got HTTP ${res.status}`, {
			status: res.status,
			maybeApplied: false,
		});
	}
	return parseConnectRedirect(location, String(valid.state));
}

/** Octokit-style: methods derived from the catalog's dotted ids. */
function buildOpsTree(call: (id: string, p?: Record<string, unknown>, o?: CallOptions) => Promise<unknown>): OpsTree {
	const root: Record<string, unknown> = {};
	for (const op of catalog) {
		const parts = op.id.split('.');
		let node = root;
		for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
		node[parts[parts.length - 1]] = (params?: Record<string, unknown>, o?: CallOptions) => call(op.id, params, o);
	}
	return root as unknown as OpsTree;
}
