/**
 * Raw-HTTP helpers for the simulator conformance tests (fetch + FormData / URLSearchParams; the project's
 * client is deliberately not used).
 */
import { startSimulator, type SimOptions } from '../../simulator/index.mts';
import '../helpers/started.mts'; // a failing test prints what its file started

export const APP = { appId: 'test-app', secret: 'test-secret-value' };

export type Params = Record<string, string | number | (string | number)[] | undefined>;

export interface Env {
	url: string;
	sim: Awaited<ReturnType<typeof startSimulator>>['sim'];
	ids: { customer_id: string; site_id: string; domain_port_id: string; network_id: string; host_id: string };
	token: string;
	close(): Promise<void>;
	/** AP prefix for the first site/domain-port. */
	ap: string;
	op: string;
	siteDash: string;
}

export interface Envelope {
	code: number;
	msg: string;
	result?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function qs(p: Params = {}): string {
	const u = new URLSearchParams();
	for (const [k, v] of Object.entries(p)) {
		if (v === undefined) continue;
		if (Array.isArray(v)) for (const x of v) u.append(k, String(x));
		else u.append(k, String(v));
	}
	const s = u.toString();
	return s ? `?${s}` : '';
}

export function form(p: Params): FormData {
	const f = new FormData();
	for (const [k, v] of Object.entries(p)) {
		if (v === undefined) continue;
		if (Array.isArray(v)) for (const x of v) f.append(k, String(x));
		else f.append(k, String(v));
	}
	return f;
}

export async function boot(extra: Partial<SimOptions> = {}): Promise<Env> {
	const r = await startSimulator({ ...APP, clock: 'manual', seed: 7, ...extra });
	const ids = r.sim.firstIds();
	const res = await fetch(`${r.url}/oauth/credit/token`, {
		method: 'POST',
		body: new URLSearchParams({ app_id: APP.appId, secret: APP.secret, grant_type: 'client_credential' }),
	});
	const env = (await res.json()) as Envelope;
	if (env.code !== 0) throw new Error(`token: ${env.msg}`);
	return {
		url: r.url,
		sim: r.sim,
		ids,
		token: env.result.access_token,
		close: r.close,
		ap: `/api/specp/policy/appshield/site/${ids.site_id}/domain-port/${ids.domain_port_id}`,
		op: `/api/spe/customer/${ids.customer_id}/op/site/${ids.site_id}/network/0/host/0`,
		siteDash: `/api/specp/op/dashboard/site/${ids.site_id}`,
	};
}

export async function call(
	e: Env,
	method: string,
	path: string,
	opts: { query?: Params; form?: Params; json?: unknown; urlencoded?: Params; token?: string | null } = {},
): Promise<Envelope> {
	const query = { ...(opts.query ?? {}) };
	if (opts.token !== null) query.access_token = opts.token ?? e.token;
	let body: BodyInit | undefined;
	const headers: Record<string, string> = {};
	if (opts.form) body = form(opts.form);
	else if (opts.json !== undefined) {
		body = JSON.stringify(opts.json);
		headers['content-type'] = 'application/json';
	} else if (opts.urlencoded) body = new URLSearchParams(qs(opts.urlencoded).slice(1));
	const res = await fetch(`${e.url}${path}${qs(query)}`, { method, body, headers });
	if (res.status !== 200) throw new Error(`HTTP ${res.status} for ${method} ${path}: ${await res.text()}`);
	return (await res.json()) as Envelope;
}

export const get = (e: Env, path: string, query?: Params, token?: string | null) =>
	call(e, 'GET', path, { query, token });
export const post = (e: Env, path: string, f: Params, query?: Params) => call(e, 'POST', path, { form: f, query });
export const put = (e: Env, path: string, f: Params) => call(e, 'PUT', path, { form: f });
export const del = (e: Env, path: string, query?: Params) => call(e, 'DELETE', path, { query });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function ctl(e: Env, method: string, path: string, body?: unknown): Promise<any> {
	const res = await fetch(`${e.url}/__sim${path}`, {
		method,
		body: body === undefined ? undefined : JSON.stringify(body),
		headers: body === undefined ? {} : { 'content-type': 'application/json' },
	});
	const j = await res.json();
	if (res.status !== 200) throw new Error(`control ${method} ${path}: ${res.status} ${JSON.stringify(j)}`);
	return j;
}

/** Asserts a validation failure naming `field`. */
export function isInvalid(r: Envelope, field: string, code = 40001): boolean {
	return r.code === code && r.msg.includes(`${field}:`);
}
