/** §4.1 authorization: connect (302 with code and state), code / refresh / app-credential tokens. */
import { CODES } from '../codes.mts';
import { SimError, notFound } from '../util.mts';
import { Redirect, type HandlerDef } from './shared.mts';

function registrableDomain(host: string): string {
	const parts = host.toLowerCase().split('.').filter(Boolean);
	return parts.slice(-2).join('.');
}

export const authorization: Record<string, HandlerDef> = {
	// ------------------------------------------------------------ §4.1 authorization
	'authorization.connect': {
		enc: 'redirect',
		fn: (sim, c) => {
			const app_id = c.q.str('app_id', true);
			const redirect_uri = c.q.str('redirect_uri', true);
			c.q.oneOf('response_type', ['code'] as const);
			c.q.oneOf('scope', ['install_login'] as const);
			c.q.str('xspe');
			const state = c.q.str('state', true);
			const customer_id = c.q.str('customer_id');
			let target: URL | undefined;
			if (redirect_uri !== undefined) {
				try {
					target = new URL(redirect_uri);
					if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new Error();
				} catch {
					c.q.issue('redirect_uri', 'must be an absolute http(s) URL');
				}
			}
			c.done();
			if (app_id !== sim.opts.appId) throw new SimError(CODES.INVALID_CLIENT, 'app_id: unknown app');
			const reg = new URL(sim.opts.registeredHost);
			if (registrableDomain((target as URL).hostname) !== registrableDomain(reg.hostname))
				throw new SimError(
					CODES.INVALID_REDIRECT,
					`redirect_uri: must share the domain of the registered host (${registrableDomain(reg.hostname)})`,
				);
			const cust = customer_id ?? sim.firstIds().customer_id;
			if (!sim.world.customers.has(cust)) throw notFound(`customer_id: customer '${cust}' does not exist`);
			const code = sim.issueCode(cust);
			const u = target as URL;
			u.searchParams.append('code', code);
			u.searchParams.append('state', state as string);
			return new Redirect(u.toString());
		},
	},
	'authorization.accessToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const secret = c.b.str('secret', true);
			const code = c.b.str('code', true);
			c.b.oneOf('grant_type', ['authorization_code'] as const, true);
			c.done();
			sim.checkClient(app_id as string, secret);
			const rec = sim.codes.get(code as string);
			if (!rec || rec.used || rec.expiresAtMs <= sim.nowMs())
				throw new SimError(
					CODES.INVALID_GRANT,
					`code: ${!rec ? 'unknown' : rec.used ? 'already used (codes are single-use)' : 'expired'} authorization code`,
				);
			rec.used = true;
			const t = sim.issueUserTokens(rec.customer_id);
			return {
				access_token: t.access_token,
				expires_in: sim.opts.tokenTtl,
				refresh_token: t.refresh_token,
				scope: 'install_login',
				svc_account: `svc-${rec.customer_id}`,
			};
		},
	},
	'authorization.refreshToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const refresh_token = c.b.str('refresh_token', true);
			c.b.oneOf('grant_type', ['refresh_code'] as const, true);
			c.done();
			sim.checkClient(app_id as string, undefined);
			const rec = sim.refreshTokens.get(refresh_token as string);
			if (!rec || rec.expiresAtMs <= sim.nowMs())
				throw new SimError(
					CODES.INVALID_GRANT,
					`refresh_token: ${rec ? 'expired' : 'unknown or already rotated'} refresh token`,
				);
			sim.refreshTokens.delete(refresh_token as string);
			c.caller = `user:${rec.customer_id}`;
			if (sim.opts.revokeAccessOnRefresh) sim.tokens.delete(rec.access_token);
			const t = sim.issueUserTokens(rec.customer_id);
			return {
				access_token: t.access_token,
				expires_in: sim.opts.tokenTtl,
				refresh_token: t.refresh_token,
				scope: 'install_login',
			};
		},
	},
	'authorization.appToken': {
		enc: 'form',
		fn: (sim, c) => {
			const app_id = c.b.str('app_id', true);
			const secret = c.b.str('secret', true);
			c.b.oneOf('grant_type', ['client_credential'] as const, true);
			c.done();
			sim.checkClient(app_id as string, secret);
			return { access_token: sim.issueAppToken(), expires_in: sim.opts.tokenTtl };
		},
	},
};
