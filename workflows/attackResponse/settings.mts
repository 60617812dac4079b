import type { Change } from '../../api/runbook/contract.ts';
import { sameThreshold } from '../pure/thresholds.mts';
import { LEAF_FIELDS } from '../../api/runbook/planItems.ts';

/** Pure helpers about settings: detection leaves, the IP-authentication record, the switch tree, comparisons. */

export type Params = Record<string, unknown>;

export const opOf = (t: Record<string, string>) => ({
	customer_id: t.customer_id,
	site_id: t.site_id,
	network_id: t.network_id,
	host_id: t.host_id,
});
export const dpOf = (t: Record<string, string>) => ({ site_id: t.site_id, domain_port_id: t.domain_port_id });

export function pickLeaf(leaf: Params): Params {
	const out: Params = {};
	for (const f of LEAF_FIELDS) if (leaf[f] !== undefined) out[f] = leaf[f];
	return out;
}

/** A detection leaf as the set operation takes it (thresholds as text, blackhole_time as a number). */
export function leafBody(leaf: Params): Params {
	const out: Params = {};
	for (const f of LEAF_FIELDS)
		if (leaf[f] !== undefined) out[f] = f === 'blackhole_time' ? Number(leaf[f]) : String(leaf[f]);
	return out;
}

export function sameLeaf(a: Params, b: Params): boolean {
	for (const f of LEAF_FIELDS) {
		if (a[f] === undefined && b[f] === undefined) continue;
		if (a[f] === undefined || b[f] === undefined) return false;
		if (f === 'is_enabled' || f === 'blackhole_time') {
			if (Number(a[f]) !== Number(b[f])) return false;
		} else if (!sameThreshold(String(a[f]), String(b[f]))) return false;
	}
	return true;
}

/** The IP-authentication record as the set operation takes it: only the object of the chosen action (§4.3.3). */
export function ipAuthBody(r: Params | undefined): Params {
	if (!r) return {};
	const action = String(r.action);
	const out: Params = { action, enable: Number(r.enable), mode: Number(r.mode) };
	const obj = r[`action_${action}`];
	if (obj && typeof obj === 'object') out[`action_${action}`] = sortKeys(obj as Params);
	return out;
}

function sortKeys(o: Params): Params {
	return Object.fromEntries(
		Object.keys(o)
			.sort()
			.map((k) => [k, o[k]]),
	);
}

export function sameJson(a: unknown, b: unknown): boolean {
	return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}

function canon(v: unknown): unknown {
	if (Array.isArray(v)) return v.map(canon);
	if (v && typeof v === 'object')
		return Object.fromEntries(
			Object.keys(v as Params)
				.sort()
				.map((k) => [k, canon((v as Params)[k])]),
		);
	return v;
}

export interface SwitchNode {
	enable: number;
	name: string;
	[k: string]: unknown;
}

/** Finds a switch by name anywhere in the switch tree (top-level keys and nested children). */
export function findSwitch(tree: unknown, name: string): SwitchNode | undefined {
	if (!tree || typeof tree !== 'object') return undefined;
	const t = tree as Params;
	if (t.name === name && 'enable' in t) return t as unknown as SwitchNode;
	if (t[name] && typeof t[name] === 'object' && 'enable' in (t[name] as Params)) return t[name] as SwitchNode;
	for (const v of Object.values(t)) {
		if (v && typeof v === 'object') {
			const f = findSwitch(v, name);
			if (f) return f;
		}
	}
	return undefined;
}

export function errText(e: unknown): string {
	if (!e || typeof e !== 'object') return String(e);
	const err = e as { message?: string; cause?: { message?: string; type?: string } };
	const cause = err.cause?.message ? ` (${err.cause.type ? `${err.cause.type}: ` : ''}${err.cause.message})` : '';
	return `${err.message ?? String(e)}${cause}`;
}

/** Runs `fns` `limit` at a time, waits for ALL of them (nothing left in flight), rethrows the first failure. */
export async function settleAll(fns: (() => Promise<unknown>)[], limit: number): Promise<void> {
	let first: { e: unknown } | undefined;
	for (let i = 0; i < fns.length; i += limit) {
		const rs = await Promise.allSettled(fns.slice(i, i + limit).map((f) => f()));
		for (const r of rs) if (r.status === 'rejected') first ??= { e: r.reason };
		if (first) break;
	}
	if (first) throw first.e;
}

export type SettingKind = Exclude<Change['kind'], 'blacklistAdd'>;
export const SETTING_OPS = {
	detectionMode: 'detection.setMode',
	detectionPolicy: 'detection.setPolicy',
	ipAuth: 'applicationProtection.authIp.set',
	switch: 'applicationProtection.switch.set',
} as const satisfies Record<SettingKind, string>;

/** A setting change's write of `value`: the operation's params. */
export function settingParams(c: Change, value: unknown): Params {
	const t = c.target;
	switch (c.kind as SettingKind) {
		case 'detectionMode':
			return { ...opOf(t), model: String(value) };
		case 'detectionPolicy':
			return { ...opOf(t), name: t.name, type: t.type, ...leafBody(value as Params) };
		case 'ipAuth':
			return { ...dpOf(t), ...(value as Params) };
		case 'switch':
			return { ...dpOf(t), name: t.name, enable: value };
	}
}
