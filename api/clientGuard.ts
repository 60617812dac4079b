import { callIssues, guardedEntries } from './blastRadius';
import type { CatalogEntry } from './catalog/types';
import { earliest, type CallFn, type ClientContext, type Limit } from './clientContext';
import type { CallOptions } from './clientTypes';
import { ApiError, SecurityServiceError, TransportError } from './errors';
import type { OwnAddress } from './ownAddresses';
import { guard, guardedOp, splitOverride, stripEmpty, validateParams } from './validate';

/**
 * Everything checked before a request is sent: the catalog's rules and the whole blast-radius guard. Only an
 * operation that carries address entries waits for anything (the own-address lookup); every other one is checked at
 * once, without a promise.
 */
export function checked(
	ctx: ClientContext,
	call: CallFn,
	op: CatalogEntry,
	params: Record<string, unknown>,
	o: CallOptions,
	deadline?: number,
): Record<string, unknown> | Promise<Record<string, unknown>> {
	const valid = validateParams(op, params, ctx.policy);
	if (!guardedOp(op.id)) return valid;
	return guardWithOwnAddresses(ctx, call, op, valid, params, o, deadline).then(() => valid);
}

/**
 * The guard's I/O part, before anything is sent: the site's own addresses (when looked up) and the declared ranges
 * (when the host has them only at call time), and the audit event of an override that was needed. A failed read
 * refuses the block.
 */
async function guardWithOwnAddresses(
	ctx: ClientContext,
	call: CallFn,
	op: CatalogEntry,
	valid: Record<string, unknown>,
	params: Record<string, unknown>,
	o: CallOptions,
	deadline: number | undefined,
): Promise<void> {
	const { br, ownLookup, policy } = ctx;
	const entries = guardedEntries(op.id, valid);
	if (!entries.length) return;
	const { override, params: given } = splitOverride(op, stripEmpty(params));
	// the site's own addresses matter to what blocks only (letting them through is no risk to the site)
	const site = typeof valid.site_id === 'string' ? valid.site_id : undefined;
	const blocks = entries.some((e) => e.side === 'block');
	if (blocks && ((ownLookup && site) || br.declaredRanges)) {
		let own: OwnAddress[] = [];
		let declared: readonly OwnAddress[] = [];
		try {
			// The whole lookup within one timeout: a service that does not answer refuses the block in bounded time.
			const lookupLimit: Limit = { retries: ctx.retries, deadline: earliest(ctx.now() + ctx.timeoutMs, deadline) };
			[own, declared] = await Promise.all([
				ownLookup && site
					? ownLookup(site, (id, p) => call(id, p, { accessToken: o.accessToken, signal: o.signal }, lookupLimit))
					: [],
				br.declaredRanges?.() ?? [],
			]);
		} catch (err) {
			throw ownLookupFailed(op.id, err);
		}
		const protectedRanges = [...(policy.protectedRanges ?? []), ...declared];
		guard(op, valid, { ...policy, protectedRanges, ownAddresses: own, allowWideBlock: override }, given);
	}
	if (override) {
		const wide = callIssues(op.id, valid, { widestPrefix: policy.widestPrefix }, given).filter(
			(i) => i.kind === 'widest-prefix',
		);
		if (wide.length)
			ctx.emit({
				type: 'override',
				opId: op.id,
				rule: 'widest-prefix',
				entries: wide.map((i) => i.conflict),
				reason: override.reason,
				by: override.by,
			});
	}
}

/** A failed own-address lookup: the block is refused (nothing was sent), with the lookup's failure named. */
function ownLookupFailed(opId: string, err: unknown): SecurityServiceError {
	const why = `could not read the site's own addresses to check the block (${err instanceof Error ? err.message : String(err)}); nothing was sent`;
	// The service's own answer (e.g. `site_id: site '99999' does not exist`) comes first: hosts label its field.
	if (err instanceof ApiError)
		return new ApiError(opId, err.code, `${err.msg} (read to check the site's own addresses; nothing was sent)`);
	const t = err instanceof TransportError ? err : undefined;
	return new TransportError(opId, t?.kind ?? 'network', why, { status: t?.status, maybeApplied: false, cause: err });
}
