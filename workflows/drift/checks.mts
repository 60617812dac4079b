import { proxyActivities } from '@temporalio/workflow';
import type { OperationActivities, SetParams } from '../pure/activityTypes.mts';
import { settingKey } from '../coordinator/coordination.mts';
import { ITEM_GROUP, ITEM_TYPE, LEAF_FIELDS } from '../../api/runbook/planItems.ts';
import { aggregate, entryRange, formatRange, parseAll, subtract, type ListEntry, type Range } from '../pure/ranges.mts';
import { sameThreshold } from '../pure/thresholds.mts';
import { findSwitch, sameJson } from '../attackResponse/settings.mts';
import type { DesiredState, Drift } from './driftAudit.mts';
import type { Fix } from './enforce.mts';

/**
 * The drift audit's checks, one per kind of setting, in a fixed order (detection; then per domain-port IP
 * authentication, switches, the IP lists, X-Forwarded-For): each reads the live value, records a drift where it
 * differs from the desired state, and the fix that would write the desired value.
 */

export interface Found {
	drifts: Drift[];
	fixes: Fix[];
	checked: number;
}

/** Open parts of the catalog's answers, as the audit reads them: detection items by group, the IP lists. */
type DetectionGroups = Record<string, Record<string, unknown> | undefined>;
type IpLists = { p_info?: { ipv4?: { black_soc?: ListEntry[]; white_soc?: ListEntry[] } } } | undefined;
type DomainPort = NonNullable<DesiredState['domain_ports']>[string];
type Target = { site_id: string; domain_port_id: string };

const acts = proxyActivities<OperationActivities>({
	startToCloseTimeout: '30s',
	retry: { maximumAttempts: 8, maximumInterval: '10s' },
});

function found(f: Found, drift: Drift, fix?: Omit<Fix, 'drift'>): void {
	f.drifts.push(drift);
	if (fix) f.fixes.push({ drift, ...fix });
}

export async function detectionDrifts(
	d: DesiredState,
	want: NonNullable<DesiredState['detection']>,
	f: Found,
): Promise<void> {
	if (!d.customer_id) throw new Error('desired.customer_id: is required when detection is given');
	const op = {
		customer_id: d.customer_id,
		site_id: d.site_id,
		network_id: d.network_id ?? '0',
		host_id: d.host_id ?? '0',
	};
	const live = await acts['detection.getPolicy'](op);
	if (want.model !== undefined) {
		f.checked++;
		if (Number(live?.model) !== Number(want.model))
			found(
				f,
				{ setting: 'detection.model', target: op, desired: want.model, live: live?.model },
				{
					keys: [settingKey.detectionMode()],
					run: () =>
						acts['detection.setMode']({ ...op, model: String(want.model) as SetParams<'detection.setMode'>['model'] }),
				},
			);
	}
	for (const [name, item] of Object.entries(want.items ?? {})) {
		f.checked++;
		const leaf = ((live as unknown as DetectionGroups | undefined)?.[ITEM_GROUP[name]]?.[name] ?? {}) as Record<
			string,
			string | number
		>;
		const differs = Object.entries(item).some(([k, v]) =>
			k === 'is_enabled' || k === 'blackhole_time'
				? Number(leaf[k]) !== Number(v)
				: leaf[k] === undefined || !sameThreshold(String(leaf[k]), String(v)),
		);
		if (!differs) continue;
		const merged: Record<string, unknown> = {};
		for (const k of LEAF_FIELDS)
			if ((item[k] ?? leaf[k]) !== undefined)
				merged[k] = k === 'blackhole_time' ? Number(item[k] ?? leaf[k]) : String(item[k] ?? leaf[k]);
		const drift: Drift = { setting: `detection.${name}`, target: op, desired: item, live: leaf };
		const run = () =>
			acts['detection.setPolicy']({
				...op,
				name,
				type: ITEM_TYPE[name],
				...merged,
			} as SetParams<'detection.setPolicy'>);
		found(f, drift, ITEM_TYPE[name] ? { keys: [settingKey.detectionItem(name)], run } : undefined);
	}
}

export async function domainPortDrifts(site: string, dp: string, want: DomainPort, f: Found): Promise<void> {
	const t: Target = { site_id: site, domain_port_id: dp };
	if (want.ipAuth) await ipAuthDrift(t, want.ipAuth, f);
	if (want.switches) await switchDrifts(t, want.switches, f);
	await listDrifts(t, want, f);
	if (want.xForwardedFor) await xffDrift(t, want.xForwardedFor, f);
}

async function ipAuthDrift(t: Target, w: Record<string, unknown>, f: Found): Promise<void> {
	f.checked++;
	const live = await acts['applicationProtection.authIp.get'](t);
	const a = String(w.action);
	const differs =
		live?.action !== a ||
		Number(live?.enable) !== Number(w.enable) ||
		Number(live?.mode) !== Number(w.mode) ||
		(w[`action_${a}`] !== undefined &&
			!sameJson((live as Record<string, unknown> | undefined)?.[`action_${a}`], w[`action_${a}`]));
	if (differs)
		found(
			f,
			{ setting: 'ipAuth', target: t, desired: w, live },
			{
				keys: [settingKey.ipAuth(t.domain_port_id)],
				run: () =>
					acts['applicationProtection.authIp.set']({ ...t, ...w } as SetParams<'applicationProtection.authIp.set'>),
			},
		);
}

async function switchDrifts(t: Target, want: Record<string, number>, f: Found): Promise<void> {
	const tree = await acts['applicationProtection.switch.list'](t);
	for (const [name, enable] of Object.entries(want)) {
		f.checked++;
		const node = findSwitch(tree, name);
		if (!node || Number(node.enable) !== Number(enable))
			found(
				f,
				{ setting: `switch.${name}`, target: t, desired: enable, live: node?.enable },
				{
					keys: [settingKey.switch(t.domain_port_id, name)],
					run: () => acts['applicationProtection.switch.set']({ ...t, name, enable }),
				},
			);
	}
}

/** The lists' entries the desired state includes: each missing one is added (each add answers what it wrote). */
async function listDrifts(t: Target, want: DomainPort, f: Found): Promise<void> {
	const dp = t.domain_port_id;
	for (const [list, key, getId, field] of [
		['blacklistIncludes', 'black_soc', 'applicationProtection.ipBlacklist.get', 'ip_black_list'],
		['whitelistIncludes', 'white_soc', 'applicationProtection.ipWhitelist.get', 'ip_white_list'],
	] as const) {
		const entries = want[list];
		if (!entries) continue;
		f.checked++;
		const live = (((await acts[getId](t)) as IpLists)?.p_info?.ipv4?.[key] ?? []) as ListEntry[];
		const liveRanges = live.map(entryRange).filter((r): r is Range => r !== undefined);
		const missing = subtract(aggregate(parseAll(entries).ranges), liveRanges).map(formatRange);
		if (!missing.length) continue;
		const entryKey = list === 'blacklistIncludes' ? settingKey.blacklistEntry : settingKey.whitelistEntry;
		found(
			f,
			{ setting: list, target: t, desired: entries, live: live.length + ' entries; missing ' + missing.join(', ') },
			{
				keys: missing.map((m) => entryKey(dp, m)),
				run: async (granted) => {
					const answers: unknown[] = [];
					for (const m of missing)
						if (granted.has(entryKey(dp, m)))
							answers.push(
								await (field === 'ip_black_list'
									? acts['applicationProtection.ipBlacklist.add']({ ...t, ip_black_list: m })
									: acts['applicationProtection.ipWhitelist.add']({ ...t, ip_white_list: m })),
							);
					return answers;
				},
			},
		);
	}
}

async function xffDrift(t: Target, want: { mode: string; name?: string }, f: Found): Promise<void> {
	f.checked++;
	const live = await acts['applicationProtection.xForwardedFor.get'](t);
	if (live?.mode === want.mode && (want.name === undefined || live?.name === want.name)) return;
	found(
		f,
		{ setting: 'xForwardedFor', target: t, desired: want, live },
		{
			keys: [settingKey.xForwardedFor(t.domain_port_id)],
			run: () =>
				acts['applicationProtection.xForwardedFor.set']({
					...t,
					...want,
				} as SetParams<'applicationProtection.xForwardedFor.set'>),
		},
	);
}
