import type { OperationResults } from '../../api/types.generated.ts';
import type { Change } from '../../api/runbook/contract.ts';
import { ITEM_GROUP } from '../../api/runbook/planItems.ts';
import { entryRange, parseAll, type ListEntry, type Range } from '../pure/ranges.mts';
import type { Acts, PlanContext } from './context.mts';
import { findSwitch, ipAuthBody, pickLeaf, sameJson, sameLeaf, type Params } from './settings.mts';

/**
 * Reading settings and comparing them with a change: one read per resource (the detection policy once, each
 * domain-port's lists, IP authentication and switch tree once), shared by the snapshot, the checks during the wait
 * ("hold the line") and the revert.
 */

/** One detection item of the policy (its group from the catalog's detection groups), as the runbook compares it. */
export const detectionLeaf = (policy: Settings['detection'], item: string): Params | undefined =>
	(policy as Record<string, Record<string, Params> | undefined> | undefined)?.[ITEM_GROUP[item]]?.[item];

/** The IP lists' answer as the runbook reads it (the catalog leaves the list object open). */
type IpLists = { p_info?: { ipv4?: { black_soc?: ListEntry[]; white_soc?: ListEntry[] } } } | undefined;

export interface Settings {
	detection?: OperationResults['detection.getPolicy'];
	dp: Record<string, { black?: ListEntry[]; white?: ListEntry[]; ipAuth?: Params; switches?: Params }>;
}

export interface Need {
	detection: boolean;
	dp: Record<string, { black?: boolean; white?: boolean; ipAuth?: boolean; switches?: boolean }>;
}

/** What must be read to compare these changes with the live settings. */
export function needFor(changes: readonly Change[]): Need {
	const need: Need = { detection: false, dp: {} };
	for (const c of changes) {
		if (c.kind === 'detectionMode' || c.kind === 'detectionPolicy') need.detection = true;
		else {
			const n = (need.dp[c.target.domain_port_id] ??= {});
			if (c.kind === 'blacklistAdd') n.black = true;
			else if (c.kind === 'ipAuth') n.ipAuth = true;
			else n.switches = true;
		}
	}
	return need;
}

/** Reads what `need` names in one round (plan.execution.parallel), together with `extra` independent reads. */
export async function readSettings(
	ctx: PlanContext,
	acts: Acts,
	need: Need,
	extra: (() => Promise<void>)[] = [],
): Promise<Settings> {
	const s: Settings = { dp: {} };
	const reads: (() => Promise<void>)[] = [];
	if (need.detection) reads.push(async () => void (s.detection = await acts['detection.getPolicy'](ctx.op)));
	for (const [dp, n] of Object.entries(need.dp)) {
		const d: Settings['dp'][string] = (s.dp[dp] = {});
		const p = ctx.dpParams(dp);
		if (n.black)
			reads.push(
				async () =>
					void (d.black =
						((await acts['applicationProtection.ipBlacklist.get'](p)) as IpLists)?.p_info?.ipv4?.black_soc ?? []),
			);
		if (n.white)
			reads.push(
				async () =>
					void (d.white =
						((await acts['applicationProtection.ipWhitelist.get'](p)) as IpLists)?.p_info?.ipv4?.white_soc ?? []),
			);
		if (n.ipAuth) reads.push(async () => void (d.ipAuth = await acts['applicationProtection.authIp.get'](p)));
		if (n.switches) reads.push(async () => void (d.switches = await acts['applicationProtection.switch.list'](p)));
	}
	await ctx.all([...reads, ...extra]);
	return s;
}

/**
 * A change's setting as it is live: the runbook's value (`after`), the one it restores (`before`: the snapshot's, or
 * since `exact-ownership` what the runbook's write replaced), or someone else's.
 */
export function compare(
	c: Change,
	live: Settings,
	before: unknown = c.before,
): { value: unknown; is: 'after' | 'before' | 'other' } {
	const t = c.target;
	const is = (eqAfter: boolean, eqBefore: boolean) => (eqAfter ? 'after' : eqBefore ? 'before' : 'other');
	switch (c.kind) {
		case 'detectionMode': {
			const v = Number(live.detection?.model);
			return { value: v, is: is(v === Number(c.after), v === Number(before)) };
		}
		case 'detectionPolicy': {
			const leaf = pickLeaf(detectionLeaf(live.detection, t.name) ?? {});
			return { value: leaf, is: is(sameLeaf(leaf, c.after as Params), sameLeaf(leaf, before as Params)) };
		}
		case 'ipAuth': {
			const v = ipAuthBody(live.dp[t.domain_port_id]?.ipAuth);
			return { value: v, is: is(sameJson(v, c.after), sameJson(v, before)) };
		}
		case 'switch': {
			const node = findSwitch(live.dp[t.domain_port_id]?.switches, t.name);
			const v = node ? Number(node.enable) : undefined;
			return { value: v, is: is(v === c.after, v === before) };
		}
		case 'blacklistAdd': {
			const present = presentEntries(c.after as string[], c, live);
			return {
				value: present,
				is: present.length === (c.after as string[]).length ? 'after' : present.length === 0 ? 'before' : 'other',
			};
		}
	}
}

/** Those of `entries` (of a blacklist change) that are on the live list (same range). */
export function presentEntries(entries: string[], c: Change, live: Settings): string[] {
	const ranges = (live.dp[c.target.domain_port_id]?.black ?? [])
		.map(entryRange)
		.filter((r): r is Range => r !== undefined);
	return entries.filter((e) => {
		const r = parseAll([e]).ranges[0];
		return r && ranges.some((l) => l.start === r.start && l.end === r.end);
	});
}
