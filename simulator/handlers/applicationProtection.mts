/** §4.3 application protection policies of a domain-port (authentication, IP authentication, header compliance, X-Forwarded-For, switches, UA blacklist, URL bypass). HTTP filters, IP lists and status codes have files of their own. */
import { HEADER_NAMES, HTTP_TYPES, IP_AUTH_ACTIONS, IP_AUTH_OBJECT_FIELDS, type SwitchNode } from '../state.mts';
import { INT_RE, notFound, validationError, type Issue } from '../util.mts';
import { type HandlerDef, deep, ap, apGet, isRegex } from './shared.mts';

function switchIndex(tree: Record<string, SwitchNode>): Map<string, SwitchNode> {
	const m = new Map<string, SwitchNode>();
	const walk = (n: SwitchNode) => {
		m.set(n.name, n);
		for (const v of Object.values(n)) if (v && typeof v === 'object') walk(v as SwitchNode);
	};
	for (const n of Object.values(tree)) walk(n);
	return m;
}

export const applicationProtection: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.3 application protection
	'applicationProtection.authBase.set': ap((_s, c, p) => {
		const duration = c.b.int('duration', true, 0);
		const threshold_tps = c.b.int('threshold_tps', true, 0);
		c.done();
		p.authBase.duration = duration as number;
		p.authBase.threshold_tps = threshold_tps as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.authBase.get': apGet((p) => ({ ...p.authBase })),
	'applicationProtection.authBypass.add': ap((sim, c, p) => {
		const host = c.b.str('host', true);
		const scheme = c.b.oneOf('scheme', ['http', 'https'] as const, true);
		const uri = c.b.str('uri', true);
		c.done();
		if (!p.authBypass.some((r) => r.host === host && r.scheme === scheme && r.uri === uri))
			p.authBypass.push({
				host: host as string,
				scheme: scheme as string,
				uri: uri as string,
				url_id: ++sim.world.counters.urlId,
			});
		return undefined;
	}, 'multipart'),
	'applicationProtection.authBypass.list': apGet((p) => p.authBypass.map((r) => ({ ...r }))),
	'applicationProtection.authBypass.delete': ap((_s, c, p) => {
		if (!INT_RE.test(c.params.url_id))
			throw validationError([{ field: 'url_id', rule: 'must be an integer (bypass record id)' }]);
		c.done();
		const id = Number(c.params.url_id);
		const i = p.authBypass.findIndex((r) => r.url_id === id);
		if (i < 0) throw notFound(`url_id: bypass record ${id} does not exist`);
		p.authBypass.splice(i, 1);
		return undefined;
	}),
	'applicationProtection.authHttp.set': ap((_s, c, p) => {
		const enforce_protect = c.b.intOneOf('enforce_protect', [1, 2, 3], true);
		const max_http_request = c.b.int('max_http_request', true, 0);
		const mode = c.b.intOneOf('mode', [0, 1, 2], true);
		const p3p_enabled = c.b.intOneOf('p3p_enabled', [0, 1], true);
		const p3p_string = c.b.str('p3p_string');
		const trust_duration = c.b.int('trust_duration', true, 0);
		c.done();
		p.authHttp = {
			enforce_protect: enforce_protect as number,
			max_http_request: max_http_request as number,
			mode: mode as number,
			p3p_enabled: p3p_enabled as number,
			p3p_string: p3p_string ?? '',
			trust_duration: trust_duration as number,
		};
		return undefined;
	}, 'multipart'),
	'applicationProtection.authHttp.get': apGet((p) => ({ ...p.authHttp })),
	'applicationProtection.authIp.set': ap((sim, c, p) => {
		c.done();
		const body = c.json;
		if (!body || typeof body !== 'object' || Array.isArray(body))
			throw validationError([{ field: 'body', rule: 'must be a JSON object' }]);
		const v = body as Record<string, unknown>;
		const issues: Issue[] = [];
		const isInt = (x: unknown) => typeof x === 'number' && Number.isInteger(x);
		const action = v.action;
		if (action === undefined || action === '') issues.push({ field: 'action', rule: 'is required' });
		else if (!(IP_AUTH_ACTIONS as readonly unknown[]).includes(action))
			issues.push({ field: 'action', rule: `must be one of ${IP_AUTH_ACTIONS.join(', ')}` });
		for (const [f, allowed] of [
			['enable', [0, 1, 2]],
			['mode', [0, 1, 2]],
		] as const) {
			if (v[f] === undefined) issues.push({ field: f, rule: 'is required' });
			else if (!isInt(v[f]) || !(allowed as readonly number[]).includes(v[f] as number))
				issues.push({ field: f, rule: `must be one of ${allowed.join(', ')} (a JSON integer)` });
		}
		for (const [key, fields] of Object.entries(IP_AUTH_OBJECT_FIELDS)) {
			const o = v[key];
			if (o === undefined) continue;
			if (typeof action === 'string' && key !== `action_${action}`) {
				issues.push({
					field: key,
					rule: `must not be set when action is ${action}: only action_${action} may be set (§4.3.3)`,
				});
				continue;
			}
			if (!o || typeof o !== 'object' || Array.isArray(o)) {
				issues.push({ field: key, rule: `must be an object with integer fields ${fields.join(', ')}` });
				continue;
			}
			for (const f of fields) {
				const x = (o as Record<string, unknown>)[f];
				if (x === undefined) issues.push({ field: `${key}.${f}`, rule: 'is required' });
				else if (!isInt(x) || (x as number) < 0)
					issues.push({ field: `${key}.${f}`, rule: 'must be a non-negative integer' });
			}
			for (const k of Object.keys(o))
				if (!fields.includes(k))
					issues.push({ field: `${key}.${k}`, rule: `is not a field of ${key} (${fields.join(', ')})` });
		}
		if (sim.opts.unknownFields === 'reject')
			for (const k of Object.keys(v))
				if (!['action', 'enable', 'mode', ...Object.keys(IP_AUTH_OBJECT_FIELDS)].includes(k))
					issues.push({ field: k, rule: 'is not a field of this operation' });
		if (issues.length) throw validationError(issues);
		p.authIp.action = action as string;
		p.authIp.enable = v.enable as number;
		p.authIp.mode = v.mode as number;
		const key = `action_${action}`;
		if (v[key] !== undefined) p.authIp.objects[key] = { ...(v[key] as Record<string, number>) };
		return undefined;
	}, 'json'),
	'applicationProtection.authIp.get': apGet((p) => {
		const key = `action_${p.authIp.action}`;
		return {
			action: p.authIp.action,
			enable: p.authIp.enable,
			mode: p.authIp.mode,
			[key]: { ...p.authIp.objects[key] },
		};
	}),
	'applicationProtection.headerCompliance.set': ap((_s, c, p) => {
		const http_type = c.b.oneOf('http_type', HTTP_TYPES, true);
		const name = c.b.oneOf('name', HEADER_NAMES, true);
		const value = c.b.intOneOf('value', [0, 1], true);
		c.done();
		p.headerCompliance[http_type as 'http09'][name as string] = value as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.headerCompliance.get': apGet((p) => deep(p.headerCompliance)),
	'applicationProtection.xForwardedFor.set': ap((sim, c, p) => {
		const modes =
			sim.opts.portalVersion === '2023.2.6'
				? (['append', 'reset', 'insert'] as const)
				: (['secure', 'append', 'reset', 'insert'] as const);
		const mode = c.b.oneOf('mode', modes, true);
		const name = c.b.str('name');
		if (mode === 'secure' && name === undefined) c.b.issue('name', 'is required when mode is secure');
		c.done();
		p.xForwardedFor = { mode: mode as string, name: name ?? '' };
		return undefined;
	}, 'multipart'),
	'applicationProtection.xForwardedFor.get': apGet((p) => ({ ...p.xForwardedFor })),
	'applicationProtection.switch.set': ap((_s, c, p) => {
		const enable = c.b.intOneOf('enable', [0, 1], true);
		const idx = switchIndex(p.switches);
		const name = c.b.oneOf('name', [...idx.keys()], true);
		c.done();
		(idx.get(name as string) as SwitchNode).enable = enable as number;
		return undefined;
	}, 'multipart'),
	'applicationProtection.switch.list': apGet((p) => deep(p.switches)),
	'applicationProtection.uaBlacklist.add': ap((_s, c, p) => {
		const regs = c.b.list('ua_regex', true) ?? [];
		for (const r of regs)
			if (!isRegex(r)) c.b.issue('ua_regex', `each value must be a valid regular expression (got '${r}')`);
		const action = c.b.str('action');
		const page = c.b.str('action_annex_page');
		const enable = c.b.intOneOf('enable', [0, 1]);
		c.done();
		const ua = p.uaBlacklist.ua_black_list;
		for (const r of regs) if (!ua.ua_regex.includes(r)) ua.ua_regex.push(r);
		if (action !== undefined) ua.action = action;
		if (page !== undefined) ua.action_annex_page = page;
		if (enable !== undefined) ua.enable = enable;
		return undefined;
	}, 'multipart'),
	'applicationProtection.urlBypass.delete': ap((_s, c, p) => {
		const urls = c.q.list('url_bypass', true);
		c.done();
		// Unknown URLs are skipped without processing (§7).
		p.urlBypass = p.urlBypass.filter((u) => !(urls as string[]).includes(u));
		return undefined;
	}),
};
