/** §4.3 IP blacklist and whitelist of a domain-port: add one entry, get, remove a comma-separated list. */
import type { Simulator } from '../index.mts';
import { type IpEntry } from '../state.mts';
import { intToIp, ipToInt, parseCidr, parseRange } from '../util.mts';
import { type Ctx, type HandlerDef, deep, apGet } from './shared.mts';

function ipEntry(s: string): IpEntry | undefined {
	const t = s.trim();
	if (t.includes('-')) {
		const r = parseRange(t);
		return r ? { type: 'range', start_ip: intToIp(r.start), end_ip: intToIp(r.end) } : undefined;
	}
	if (t.includes('/')) {
		const r = parseCidr(t);
		if (!r) return undefined;
		return { type: 'network', ip: `${intToIp(r.start)}/${t.slice(t.indexOf('/') + 1)}` };
	}
	return ipToInt(t) === undefined ? undefined : { type: 'network', ip: t };
}

const sameEntry = (a: IpEntry, b: IpEntry) =>
	a.type === b.type && a.ip === b.ip && a.start_ip === b.start_ip && a.end_ip === b.end_ip;

const IP_ENTRY_RULE = 'must be an IPv4 range written start-end (start ≤ end), an IPv4 address or a CIDR a.b.c.d/n';

// ---------------------------------------------------------------- IP lists

function ipListAdd(sim: Simulator, c: Ctx, which: 'ipBlacklist' | 'ipWhitelist', field: string) {
	const dp = sim.dp(c.params);
	const v = c.b.str(field, which === 'ipWhitelist' || sim.opts.ipBlacklistAddRequiresEntry);
	const e = v === undefined ? undefined : ipEntry(v);
	if (v !== undefined && !e) c.b.issue(field, IP_ENTRY_RULE + ' (one entry per request)');
	c.done();
	if (!e) return undefined;
	const list = dp.policy[which].entries;
	if (!list.some((x) => sameEntry(x, e))) list.push(e);
	return undefined;
}

function ipListRemove(sim: Simulator, c: Ctx, which: 'ipBlacklist' | 'ipWhitelist', field: string) {
	const dp = sim.dp(c.params);
	const required = which === 'ipWhitelist' || sim.opts.ipBlacklistDeleteWithoutList === 'reject';
	const v = c.q.str(field, required);
	const entries: IpEntry[] = [];
	if (v !== undefined) {
		for (const part of v.split(',')) {
			if (part.trim() === '') continue;
			const e = ipEntry(part);
			if (!e) c.q.issue(field, `${IP_ENTRY_RULE}; entries are separated by commas (got '${part}')`);
			else entries.push(e);
		}
		if (entries.length === 0 && c.q.issues.length === 0) c.q.issue(field, 'must name at least one entry');
	}
	c.done();
	const list = dp.policy[which];
	if (v === undefined) {
		list.entries = []; // ipBlacklistDeleteWithoutList === 'clear'
		return undefined;
	}
	// Entries not in the list are skipped (like url-bypass, §7).
	list.entries = list.entries.filter((x) => !entries.some((e) => sameEntry(x, e)));
	return undefined;
}

export const ipLists: Record<string, HandlerDef> = {
	'applicationProtection.ipBlacklist.add': {
		enc: 'multipart',
		fn: (sim, c) => ipListAdd(sim, c, 'ipBlacklist', 'ip_black_list'),
	},
	'applicationProtection.ipBlacklist.get': apGet((p) => ({
		p_info: { enable: p.ipBlacklist.enable, ipv4: { black_soc: deep(p.ipBlacklist.entries) } },
	})),
	'applicationProtection.ipBlacklist.remove': {
		enc: 'query',
		fn: (sim, c) => ipListRemove(sim, c, 'ipBlacklist', 'ip_black_list'),
	},
	'applicationProtection.ipWhitelist.add': {
		enc: 'multipart',
		fn: (sim, c) => ipListAdd(sim, c, 'ipWhitelist', 'ip_white_list'),
	},
	'applicationProtection.ipWhitelist.get': apGet((p) => ({
		p_info: { enable: p.ipWhitelist.enable, ipv4: { white_soc: deep(p.ipWhitelist.entries) } },
	})),
	'applicationProtection.ipWhitelist.remove': {
		enc: 'query',
		fn: (sim, c) => ipListRemove(sim, c, 'ipWhitelist', 'ip_white_list'),
	},
};
