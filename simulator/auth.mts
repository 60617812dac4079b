// Who may call what: the access token checked (unknown, expired, of a kind the operation does not take) and, under
// strict tenancy, whose sites a user token reaches (simulator/README.md "Tenancy").
import { CODES } from './codes.mts';
import type { Simulator } from './index.mts';
import type { Fields } from './multipart.mts';
import type { LogEntry, TokenRec } from './options.mts';
import { SimError } from './util.mts';

/** Checks the call's token (its life left into `entry`); returns the caller it names (`app` or `user:<customer_id>`). */
export function authenticate(
	sim: Simulator,
	opId: string,
	query: Fields,
	params: Record<string, string> = {},
	entry?: Pick<LogEntry, 'tokenLeftMs'>,
): string {
	const v = query.get('access_token');
	if (!v || v.length === 0 || v[0] === '') throw new SimError(CODES.INVALID_TOKEN, 'access_token: is required');
	if (v.length > 1) throw new SimError(CODES.INVALID_TOKEN, 'access_token: must be given once');
	const rec = sim.tokens.get(v[0]);
	if (rec && entry) entry.tokenLeftMs = rec.expiresAtMs - sim.nowMs();
	const dropped = sim.opts.droppedTokenAnswer;
	if (!rec)
		throw dropped
			? new SimError(dropped.code, dropped.msg)
			: new SimError(CODES.INVALID_TOKEN, 'access_token: invalid token');
	if (rec.expiresAtMs <= sim.nowMs())
		throw dropped
			? new SimError(dropped.code, dropped.msg)
			: new SimError(CODES.INVALID_TOKEN, 'access_token: token expired');
	const kinds = sim.opts.tokenKinds[opId];
	if (kinds && !kinds.includes(rec.kind))
		throw new SimError(
			CODES.FORBIDDEN,
			`access_token: a ${rec.kind} token is not accepted by ${opId} (needs ${kinds.join(' or ')})`,
		);
	if (sim.opts.tenancy === 'strict') checkTenancy(sim, opId, rec, params);
	return rec.kind === 'user' ? `user:${rec.customer_id}` : 'app';
}

/** Strict tenancy: whose token may reach what (simulator/README.md "Tenancy"). */
function checkTenancy(sim: Simulator, opId: string, rec: TokenRec, params: Record<string, string>) {
	const portal = opId.startsWith('customer.');
	if (rec.kind === 'app') {
		if (!portal)
			throw new SimError(
				CODES.FOREIGN_TENANT,
				`access_token: the app token serves only portal operations (customer list and detail), not ${opId}; use the customer's user token`,
			);
		return;
	}
	if (opId === 'customer.list')
		throw new SimError(
			CODES.FOREIGN_TENANT,
			`access_token: a user token (customer ${rec.customer_id}) cannot list the portal's customers; use the app token`,
		);
	if (params.customer_id !== undefined && params.customer_id !== rec.customer_id)
		throw new SimError(
			CODES.FOREIGN_TENANT,
			`access_token: a user token of customer ${rec.customer_id} cannot reach customer ${params.customer_id}`,
		);
	const site = params.site_id !== undefined ? sim.world.sites.get(params.site_id) : undefined;
	if (site && site.customer_id !== rec.customer_id)
		throw new SimError(
			CODES.FOREIGN_TENANT,
			`access_token: a user token of customer ${rec.customer_id} cannot reach site ${site.site_id} (customer ${site.customer_id})`,
		);
}
