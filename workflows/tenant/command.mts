// `secsvc tenants …` and `secsvc entrance` (the install entrance the SPE portal calls). docs/worker/tenants.md.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Client as TemporalClient } from '@temporalio/client';
import { redactText } from '../../api/redact.ts';
import { afterTenantRanges } from '../blocks/clientAllow.mts';
import { tenantInputProblem, type TenantView } from './shared.mts';
import { CodecKeyError, requireKeys, tenantTokenKey } from '../../worker/src/temporal/codec.mts';
import { loadConfig, type WorkerConfig } from '../../worker/src/process/config.mts';
import { createApiClient } from '../../worker/src/service/client.mts';
import {
	checkInstallInput,
	connectForCode,
	exchangeCode,
	formatTenants,
	installTenant,
	listTenants,
	removeTenant,
	showTenant,
	TenantInputError,
	tenantTemporalClient,
} from './client.mts';

export const TENANTS_USAGE = `  tenants add --customer C --code CODE [--sites S1,S2]   install with a code obtained elsewhere (exchanged here)
  tenants add --customer C --app [--sites S1,S2]        a tenant served with the app token (the operator says so)
  tenants install --customer C [--xspe X] [--sites …]   run the install flow (connect, state check, exchange) now
      add/install [--protected R1,R2]                   the customer's own networks: never blocked (replaces the
                                                        declared ones; a re-install without it keeps them)
  tenants list [--json] | show C [--json] | remove C    token state (valid until, last renewal, needs-reinstall); no secret
                                                        list/show exit 3 when a tenant needs re-install
  tenants token-key C                                   the customer's token key for its n8n credential (Token Source
                                                        "From the cluster"): opens only C's access tokens; a secret
  entrance [--listen HOST:PORT]                         the install entrance the portal calls (default 127.0.0.1:8787)
`;

const MAX_PARAM = 512;
const sitesOf = (v: unknown): string[] => (typeof v === 'string' && v !== '' ? v.split(',').map((s) => s.trim()) : []);
/** `--protected`: absent = keep what is declared; '' = none. */
const rangesOf = (v: string | undefined): string[] | undefined =>
	v === undefined ? undefined : v.split(/[\s,;]+/).filter(Boolean);

function redirectUri(env: Record<string, string | undefined>): string {
	const v = env.SECSVC_REDIRECT_URI;
	if (!v)
		throw new TenantInputError(
			'SECSVC_REDIRECT_URI',
			'is required for the install flow (an https URL on the host registered on the developer platform)',
		);
	return v;
}

function bounded(field: string, v: unknown, max = MAX_PARAM): string | undefined {
	if (v === undefined || v === true) return undefined;
	if (typeof v !== 'string') throw new TenantInputError(field, 'must be text');
	if (v.length > max) throw new TenantInputError(field, `must be at most ${max} characters (got ${v.length})`);
	if (/[\u0000-\u001f\u007f]/.test(v)) throw new TenantInputError(field, 'must not contain control characters');
	return v;
}

/** The install flow for one customer: connect (fresh state, checked), exchange, tenant workflow started/updated. */
async function installFlow(
	cfg: WorkerConfig,
	temporal: TemporalClient,
	p: { customerId: string; xspe?: string; sites: string[]; protectedRanges?: string[] },
	env = process.env,
): Promise<TenantView> {
	checkInstallInput({ customerId: p.customerId, sites: p.sites, kind: 'user', protectedRanges: p.protectedRanges });
	const app = createApiClient({
		baseUrl: cfg.api.baseUrl,
		credentials: { appId: cfg.api.appId, secret: cfg.api.secret, tokenKind: 'app' },
		timeoutMs: cfg.api.timeoutMs,
		retries: 0,
	});
	try {
		const connect = { redirectUri: redirectUri(env), ...(p.xspe ? { xspe: p.xspe } : {}) };
		const code = await connectForCode(app, { appId: cfg.api.appId, redirectUri: connect.redirectUri }, p);
		const token = await exchangeCode(app, cfg.api, code);
		return await installTenant(
			temporal,
			cfg.temporal.taskQueue,
			{ customerId: p.customerId, kind: 'user', sites: p.sites, protectedRanges: p.protectedRanges },
			{ ...token, connect },
		);
	} finally {
		await app.close();
	}
}

export async function runTenants(
	argv: { pos: string[]; o: Record<string, string | boolean> },
	io: { out(s: string): void; err(s: string): void },
): Promise<number> {
	const { pos, o } = argv;
	const [sub, arg] = pos;
	let temporal: TemporalClient | undefined;
	const out = (v: unknown) => io.out(typeof v === 'string' ? v + '\n' : JSON.stringify(v, null, 2) + '\n');
	try {
		const cfg = sub === 'add' || sub === 'install' ? loadConfig() : undefined;
		const t = cfg?.temporal ?? (await import('../../worker/src/process/config.mts')).loadTemporalConfig();
		const c: TenantsContext = {
			o,
			arg,
			cfg,
			t,
			customerId: bounded('--customer', o.customer),
			sites: sitesOf(bounded('--sites', o.sites)),
			protectedRanges: rangesOf(bounded('--protected', o.protected, 64 * 1024)),
			conn: async () => (temporal ??= await tenantTemporalClient(t)),
			out,
		};
		const run = Object.hasOwn(TENANTS, sub ?? '') ? TENANTS[sub] : undefined;
		if (!run) throw new TenantInputError('tenants', `unknown subcommand '${sub ?? ''}'\n${TENANTS_USAGE}`);
		return await run(c);
	} catch (e) {
		io.err(`secsvc: ${redactText((e as Error)?.message ?? String(e))}\n`);
		return e instanceof TenantInputError || e instanceof CodecKeyError || (e as Error)?.name === 'ConfigError' ? 2 : 1;
	} finally {
		await temporal?.connection.close().catch(() => {});
	}
}

/** What a `secsvc tenants` subcommand gets: its checked options and the tenant-aware Temporal client. */
interface TenantsContext {
	o: Record<string, string | boolean>;
	arg: string | undefined;
	cfg: WorkerConfig | undefined;
	t: WorkerConfig['temporal'];
	customerId: string | undefined;
	sites: ReturnType<typeof sitesOf>;
	protectedRanges: ReturnType<typeof rangesOf>;
	conn: () => Promise<TemporalClient>;
	out: (v: unknown) => void;
}

const required = (arg: string | undefined): string => {
	if (!arg) throw new TenantInputError('CUSTOMER', 'is required');
	return arg;
};

const TENANTS: Record<string, (c: TenantsContext) => Promise<number>> = {
	add: addTenant,
	install: async ({ cfg, conn, customerId, o, sites, protectedRanges, out }) => {
		if (!customerId) throw new TenantInputError('--customer', 'is required');
		const xspe = bounded('--xspe', o.xspe);
		out(await installFlow(cfg as WorkerConfig, await conn(), { customerId, xspe, sites, protectedRanges }));
		await afterTenantRanges(await conn(), customerId, sites, protectedRanges, out); // the allow-list wins
		return 0;
	},
	list: async ({ conn, o, out }) => {
		const rows = await listTenants(await conn());
		out(o.json ? rows : formatTenants(rows));
		return rows.some((r) => r.status === 'needs-reinstall') ? 3 : 0;
	},
	show: async ({ arg, conn, o, out }) => {
		const v = await showTenant(await conn(), required(arg));
		out(o.json ? v : formatTenants([v]));
		return v.status === 'needs-reinstall' ? 3 : 0;
	},
	'token-key': async ({ arg, out }) => {
		// The one subcommand that prints a secret, on purpose: what the operator pastes into the n8n credential.
		const customer = required(arg);
		const problem = tenantInputProblem({ customerId: customer });
		if (problem) throw new TenantInputError('CUSTOMER', problem.replace(/^customer_id: /, ''));
		const keys = requireKeys();
		const newest = keys[keys.length - 1];
		out(`${newest.id}:${tenantTokenKey(newest.key, customer).toString('base64')}`);
		return 0;
	},
	remove: async ({ arg, conn, out }) => {
		out(await removeTenant(await conn(), required(arg)));
		return 0;
	},
};

/** `tenants add`: with `--app` a tenant served with the app token, else the code exchanged here for its tokens. */
async function addTenant({
	cfg,
	conn,
	customerId,
	o,
	sites,
	protectedRanges,
	t,
	out,
}: TenantsContext): Promise<number> {
	if (!customerId) throw new TenantInputError('--customer', 'is required');
	if (o.app === true) {
		checkInstallInput({ customerId, sites, kind: 'app', protectedRanges });
		out(await installTenant(await conn(), t.taskQueue, { customerId, kind: 'app', sites, protectedRanges }));
		await afterTenantRanges(await conn(), customerId, sites, protectedRanges, out); // the allow-list wins
		return 0;
	}
	const code = bounded('--code', o.code);
	if (!code) throw new TenantInputError('--code', 'is required (or --app for a tenant served with the app token)');
	checkInstallInput({ customerId, sites, kind: 'user', protectedRanges });
	const c = cfg as WorkerConfig;
	await conn(); // the key and the connection before the code is used up
	const app = createApiClient({
		baseUrl: c.api.baseUrl,
		credentials: { appId: c.api.appId, secret: c.api.secret, tokenKind: 'app' },
		timeoutMs: c.api.timeoutMs,
		retries: 0,
	});
	try {
		const token = await exchangeCode(app, c.api, code);
		const input = { customerId, kind: 'user' as const, sites, protectedRanges };
		out(await installTenant(await conn(), t.taskQueue, input, token));
	} finally {
		await app.close();
	}
	await afterTenantRanges(await conn(), customerId, sites, protectedRanges, out);
	return 0;
}

const ENTRANCE_PARAMS = new Set(['customer_id', 'xspe', 'sites']);
const MAX_URL = 4096;

/**
 * The install entrance: `GET /install?customer_id=…&xspe=…[&sites=…]` (what the portal passes to the app's entrance,
 * §4.1/§5.3). Loopback by default; in production behind the operator's TLS proxy. 200 + the tenant's view (no
 * secret); 400 `{field, error}` for bad input or a refusal, nothing stored; 502 when the service or Temporal failed.
 */
export async function runEntrance(
	o: Record<string, string | boolean>,
	io: { out(s: string): void; err(s: string): void },
	env = process.env,
): Promise<number> {
	const cfg = loadConfig();
	redirectUri(env);
	const listen = String(o.listen ?? env.SECSVC_ENTRANCE_ADDRESS ?? '127.0.0.1:8787');
	const m = /^([^\s:]+):(\d{1,5})$/.exec(listen);
	if (!m) throw new TenantInputError('--listen', 'must be host:port');
	const temporal = await tenantTemporalClient(cfg.temporal, env);
	const server = createServer((req, res) => void handle(req, res));
	const send = (res: ServerResponse, status: number, body: unknown) => {
		res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
		res.end(JSON.stringify(body));
	};
	async function handle(req: IncomingMessage, res: ServerResponse) {
		try {
			if ((req.url ?? '').length > MAX_URL)
				return send(res, 414, {
					field: 'request',
					error: `request: the URL must be at most ${MAX_URL} characters; nothing stored`,
				});
			const u = new URL(req.url ?? '/', 'http://entrance.invalid');
			if (u.pathname !== '/install') return send(res, 404, { error: 'only /install is served' });
			if (req.method !== 'GET') return send(res, 405, { error: 'method: GET /install' });
			for (const k of u.searchParams.keys())
				if (!ENTRANCE_PARAMS.has(k))
					throw new TenantInputError(k, `unknown parameter (expected ${[...ENTRANCE_PARAMS].join(', ')})`);
			for (const k of ENTRANCE_PARAMS)
				if (u.searchParams.getAll(k).length > 1) throw new TenantInputError(k, 'must be given once');
			const customerId = bounded('customer_id', u.searchParams.get('customer_id') ?? undefined);
			if (!customerId) throw new TenantInputError('customer_id', 'is required');
			const view = await installFlow(
				cfg,
				temporal,
				{
					customerId,
					xspe: bounded('xspe', u.searchParams.get('xspe') ?? undefined),
					sites: sitesOf(bounded('sites', u.searchParams.get('sites') ?? undefined)),
				},
				env,
			);
			io.out(`secsvc entrance: tenant ${view.customerId} installed (${view.sites.length} sites)\n`);
			send(res, 200, view);
		} catch (e) {
			if (e instanceof TenantInputError) return send(res, 400, { field: e.field, error: e.message });
			io.err(`secsvc entrance: ${redactText((e as Error)?.message ?? String(e))}\n`);
			send(res, 502, { error: redactText((e as Error)?.message ?? String(e)) });
		}
	}
	await new Promise<void>((resolve, reject) =>
		server.once('error', reject).listen(Number(m[2]), m[1], () => resolve()),
	);
	const a = server.address() as { address: string; port: number };
	io.out(`secsvc entrance: listening on http://${a.address}:${a.port}/install\n`);
	await new Promise<void>((resolve) => {
		const stop = () => server.close(() => resolve());
		process.once('SIGTERM', stop);
		process.once('SIGINT', stop);
	});
	await temporal.connection.close().catch(() => {});
	return 0;
}
