import { patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { OperationActivities, SetParams } from '../pure/activityTypes.mts';
import { claim, holdsOf, release } from '../coordinator/claims.mts';
import { settingKey, type Hold } from '../coordinator/coordination.mts';
import { ITEM_GROUP, ITEM_TYPE } from '../../api/runbook/planItems.ts';
import { aggregate, entryRange, formatRange, parseAll, subtract, type ListEntry, type Range } from '../pure/ranges.mts';
import { sameThreshold } from '../pure/thresholds.mts';
import { checkInWorker } from '../input/checkInWorker.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { driftRules } from '../input/inputRules.mts';

/**
 * Drift audit: compares live policy with a desired-state document (the CLI reads it from a file and passes it
 * as input; it holds no secrets) and reports every difference. With `enforce`, writes the desired values.
 *
 * One owner per setting (workflows/README.md): a setting another playbook holds (an attack response mitigating the
 * site, an expiring block) is not drift — it is reported under `held` (by whom, since when) and never written. An
 * enforce takes a short lease on what it writes, so a runbook that starts meanwhile waits for the write to end
 * and snapshots after it.
 *
 * Desired state:
 * { site_id, customer_id?, network_id?='0', host_id?='0',
 *   detection?: { model?: 0|1, items?: { <item>: { is_enabled?, low_pps?, high_pps?, low_bps?, high_bps? } } },
 *   domain_ports?: { <dp>: { ipAuth?: {action, enable, mode, action_<action>?}, switches?: { <name>: 0|1 },
 *                             blacklistIncludes?: string[], whitelistIncludes?: string[],
 *                             xForwardedFor?: { mode, name? } } } }
 */

export interface DesiredState {
	site_id: string;
	customer_id?: string;
	network_id?: string;
	host_id?: string;
	detection?: { model?: number; items?: Record<string, Record<string, string | number>> };
	domain_ports?: Record<
		string,
		{
			ipAuth?: Record<string, unknown>;
			switches?: Record<string, number>;
			blacklistIncludes?: string[];
			whitelistIncludes?: string[];
			xForwardedFor?: { mode: string; name?: string };
		}
	>;
}

export interface Drift {
	setting: string;
	target: Record<string, string>;
	desired: unknown;
	live: unknown;
	enforced?: 'fixed' | 'failed';
	error?: string;
}

/** A setting that differs from the desired state but is held by another playbook: left alone. */
export interface HeldSetting extends Drift {
	held: { by: string; since: string; until: string; reason: string };
}

export interface DriftAuditResult {
	site_id: string;
	checkedAt: string;
	checked: number;
	drifts: Drift[];
	/** Differences in settings another playbook holds (e.g. "held by attack-response-<site>"): not drift, not written. */
	held: HeldSetting[];
	enforce: boolean;
}

/** Open parts of the catalog's answers, as the audit reads them: detection items by group, the IP lists. */
type DetectionGroups = Record<string, Record<string, unknown> | undefined>;
type IpLists = { p_info?: { ipv4?: { black_soc?: ListEntry[]; white_soc?: ListEntry[] } } } | undefined;
const acts = proxyActivities<OperationActivities>({
	startToCloseTimeout: '30s',
	retry: { maximumAttempts: 8, maximumInterval: '10s' },
});

export async function driftAudit(input: { desired: DesiredState; enforce?: boolean }): Promise<DriftAuditResult> {
	// The shape here (no commands); the whole desired state by the CLI's schema (checkDesiredState) in the worker.
	failOn('desired state', problems(input, driftRules, { maxString: 1024, maxList: 1000, maxDepth: 8 }));
	await checkInWorker('desired', input.desired);
	const d = input.desired;
	const enforce = Boolean(input.enforce);
	const drifts: Drift[] = [];
	let checked = 0;
	const fixes: Fix[] = [];

	if (d.detection) {
		if (!d.customer_id) throw new Error('desired.customer_id: is required when detection is given');
		const op = {
			customer_id: d.customer_id,
			site_id: d.site_id,
			network_id: d.network_id ?? '0',
			host_id: d.host_id ?? '0',
		};
		const live = await acts['detection.getPolicy'](op);
		if (d.detection.model !== undefined) {
			checked++;
			if (Number(live?.model) !== Number(d.detection.model)) {
				const drift: Drift = { setting: 'detection.model', target: op, desired: d.detection.model, live: live?.model };
				drifts.push(drift);
				fixes.push({
					drift,
					keys: [settingKey.detectionMode()],
					run: () =>
						acts['detection.setMode']({
							...op,
							model: String(d.detection?.model) as SetParams<'detection.setMode'>['model'],
						}),
				});
			}
		}
		for (const [name, want] of Object.entries(d.detection.items ?? {})) {
			checked++;
			const leaf = ((live as unknown as DetectionGroups | undefined)?.[ITEM_GROUP[name]]?.[name] ?? {}) as Record<
				string,
				string | number
			>;
			const differs = Object.entries(want).some(([k, v]) =>
				k === 'is_enabled' || k === 'blackhole_time'
					? Number(leaf[k]) !== Number(v)
					: leaf[k] === undefined || !sameThreshold(String(leaf[k]), String(v)),
			);
			if (differs) {
				const drift: Drift = { setting: `detection.${name}`, target: op, desired: want, live: leaf };
				drifts.push(drift);
				const merged: Record<string, unknown> = {};
				for (const k of [
					'is_enabled',
					'low_pps',
					'high_pps',
					'low_bps',
					'high_bps',
					'blackhole_bps',
					'blackhole_pps',
					'blackhole_time',
				])
					if ((want[k] ?? leaf[k]) !== undefined)
						merged[k] = k === 'blackhole_time' ? Number(want[k] ?? leaf[k]) : String(want[k] ?? leaf[k]);
				if (ITEM_TYPE[name])
					fixes.push({
						drift,
						keys: [settingKey.detectionItem(name)],
						run: () =>
							acts['detection.setPolicy']({
								...op,
								name,
								type: ITEM_TYPE[name],
								...merged,
							} as SetParams<'detection.setPolicy'>),
					});
			}
		}
	}

	for (const [dp, want] of Object.entries(d.domain_ports ?? {})) {
		const t = { site_id: d.site_id, domain_port_id: dp };
		if (want.ipAuth) {
			checked++;
			const live = await acts['applicationProtection.authIp.get'](t);
			const w = want.ipAuth;
			const a = String(w.action);
			const differs =
				live?.action !== a ||
				Number(live?.enable) !== Number(w.enable) ||
				Number(live?.mode) !== Number(w.mode) ||
				(w[`action_${a}`] !== undefined &&
					JSON.stringify(sortKeys((live as Record<string, unknown> | undefined)?.[`action_${a}`])) !==
						JSON.stringify(sortKeys(w[`action_${a}`])));
			if (differs) {
				const drift: Drift = { setting: 'ipAuth', target: t, desired: w, live };
				drifts.push(drift);
				fixes.push({
					drift,
					keys: [settingKey.ipAuth(dp)],
					run: () =>
						acts['applicationProtection.authIp.set']({ ...t, ...w } as SetParams<'applicationProtection.authIp.set'>),
				});
			}
		}
		if (want.switches) {
			const tree = await acts['applicationProtection.switch.list'](t);
			for (const [name, enable] of Object.entries(want.switches)) {
				checked++;
				const node = findSwitch(tree, name);
				if (!node || Number(node.enable) !== Number(enable)) {
					const drift: Drift = { setting: `switch.${name}`, target: t, desired: enable, live: node?.enable };
					drifts.push(drift);
					fixes.push({
						drift,
						keys: [settingKey.switch(dp, name)],
						run: () => acts['applicationProtection.switch.set']({ ...t, name, enable }),
					});
				}
			}
		}
		for (const [list, key, getId, field] of [
			['blacklistIncludes', 'black_soc', 'applicationProtection.ipBlacklist.get', 'ip_black_list'],
			['whitelistIncludes', 'white_soc', 'applicationProtection.ipWhitelist.get', 'ip_white_list'],
		] as const) {
			const entries = want[list];
			if (!entries) continue;
			checked++;
			const live = (((await acts[getId](t)) as IpLists)?.p_info?.ipv4?.[key] ?? []) as ListEntry[];
			const liveRanges = live.map(entryRange).filter((r): r is Range => r !== undefined);
			const missing = subtract(aggregate(parseAll(entries).ranges), liveRanges).map(formatRange);
			if (missing.length) {
				const drift: Drift = {
					setting: list,
					target: t,
					desired: entries,
					live: live.length + ' entries; missing ' + missing.join(', '),
				};
				drifts.push(drift);
				const entryKey = list === 'blacklistIncludes' ? settingKey.blacklistEntry : settingKey.whitelistEntry;
				fixes.push({
					drift,
					keys: missing.map((m) => entryKey(dp, m)),
					run: async (granted) => {
						for (const m of missing)
							if (granted.has(entryKey(dp, m)))
								await (field === 'ip_black_list'
									? acts['applicationProtection.ipBlacklist.add']({ ...t, ip_black_list: m })
									: acts['applicationProtection.ipWhitelist.add']({ ...t, ip_white_list: m }));
					},
				});
			}
		}
		if (want.xForwardedFor) {
			checked++;
			const live = await acts['applicationProtection.xForwardedFor.get'](t);
			if (
				live?.mode !== want.xForwardedFor.mode ||
				(want.xForwardedFor.name !== undefined && live?.name !== want.xForwardedFor.name)
			) {
				const drift: Drift = { setting: 'xForwardedFor', target: t, desired: want.xForwardedFor, live };
				drifts.push(drift);
				fixes.push({
					drift,
					keys: [settingKey.xForwardedFor(dp)],
					run: () =>
						acts['applicationProtection.xForwardedFor.set']({
							...t,
							...want.xForwardedFor,
						} as SetParams<'applicationProtection.xForwardedFor.set'>),
				});
			}
		}
	}

	const held = await leaveHeldAlone(d.site_id, drifts, fixes);
	if (enforce && fixes.length) await enforceFixes(d.site_id, fixes, drifts, held);
	return { site_id: d.site_id, checkedAt: new Date(Date.now()).toISOString(), checked, drifts, held, enforce };
}

interface Fix {
	drift: Drift;
	/** The settings (coordinator keys) this fix writes. */
	keys: string[];
	run: (granted: Set<string>) => Promise<unknown>;
}

const heldSetting = (drift: Drift, h: Hold): HeldSetting => ({
	...drift,
	held: { by: h.owner, since: h.since, until: h.until, reason: h.reason },
});

/** Moves the differences in settings someone else holds from `drifts` to the returned list (report and enforce). */
async function leaveHeldAlone(site: string, drifts: Drift[], fixes: Fix[]): Promise<HeldSetting[]> {
	if (!fixes.length) return [];
	const me = workflowInfo().workflowId;
	// `drift-held-keys`: only the holds of the fixes' keys (a site with thousands of expiring blocks holds more than
	// one activity result may carry); runs recorded before it asked for every hold.
	const keys = patched('drift-held-keys') ? [...new Set(fixes.flatMap((f) => f.keys))] : undefined;
	const byKey = new Map((await holdsOf(site, keys)).filter((h) => h.owner !== me).map((h) => [h.key, h]));
	const held: HeldSetting[] = [];
	for (const f of [...fixes]) {
		const h = f.keys.map((k) => byKey.get(k)).find((x) => x !== undefined);
		if (!h || f.keys.some((k) => !byKey.has(k))) continue; // partly held lists: the free entries are still drift
		held.push(heldSetting(f.drift, h));
		drifts.splice(drifts.indexOf(f.drift), 1);
		fixes.splice(fixes.indexOf(f), 1);
	}
	return held;
}

/** Writes the fixes under a short lease; what another owner took meanwhile is reported as held, not written. */
async function enforceFixes(site: string, fixes: Fix[], drifts: Drift[], held: HeldSetting[]): Promise<void> {
	const keys = [...new Set(fixes.flatMap((f) => f.keys))];
	const r = await claim(site, {
		keys,
		mode: 'lease',
		reason: 'drift enforce: writing the desired state',
		ttlSeconds: 300,
	});
	const granted = new Set(r.granted);
	const heldBy = new Map(r.held.map((h) => [h.key, h]));
	try {
		for (const f of fixes) {
			if (!f.keys.some((k) => granted.has(k))) {
				const h = heldBy.get(f.keys[0]);
				if (h) {
					held.push(heldSetting(f.drift, h));
					drifts.splice(drifts.indexOf(f.drift), 1);
				}
				continue;
			}
			try {
				await f.run(granted);
				f.drift.enforced = 'fixed';
			} catch (e) {
				f.drift.enforced = 'failed';
				f.drift.error = (e as Error).message;
			}
		}
	} finally {
		if (r.granted.length) await release(site, r.granted);
	}
}

function sortKeys(o: unknown): unknown {
	if (!o || typeof o !== 'object') return o;
	return Object.fromEntries(
		Object.keys(o as object)
			.sort()
			.map((k) => [k, (o as Record<string, unknown>)[k]]),
	);
}

function findSwitch(tree: unknown, name: string): { enable: number } | undefined {
	if (!tree || typeof tree !== 'object') return undefined;
	const t = tree as Record<string, unknown>;
	if (t.name === name && 'enable' in t) return t as { enable: number };
	for (const v of Object.values(t)) {
		const f = typeof v === 'object' ? findSwitch(v, name) : undefined;
		if (f) return f;
	}
	return undefined;
}
