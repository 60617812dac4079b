// Installing and inspecting tenants from outside a worker (the CLI and the install entrance): the install flow of §5.3
// (connect with a fresh state, the state checked, the code exchanged), then the tenant workflow started or updated
// with the token record (sealed: encrypted by the payload codec). Nothing here prints or returns a secret.
import {
	Client as TemporalClient,
	Connection,
	WithStartWorkflowOperation,
	WorkflowNotFoundError,
	WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { Client } from '../../api/client.ts';
import { ApiError, ValidationError } from '../../api/errors.ts';
import { randomState } from '../../api/tokens.ts';
import { redactText } from '../../api/redact.ts';
import {
	installUpdate,
	removeUpdate,
	sealed,
	TENANT_WORKFLOW,
	tenantInputProblem,
	tenantQueueFor,
	tenantWorkflowId,
	viewQuery,
	withToken,
	type ConnectParams,
	type TenantKind,
	type TenantState,
	type TenantView,
} from './shared.mts';
import { dataConverterFor, requireKeys } from '../../worker/src/temporal/codec.mts';
import { connectionOptions, type WorkerConfig } from '../../worker/src/process/config.mts';
import { connectWithBearer } from '../../worker/src/process/temporalToken.mts';

/** Bad input or a refusal of the install flow: `field: rule`; nothing was stored. */
export class TenantInputError extends Error {
	constructor(
		readonly field: string,
		rule: string,
	) {
		super(`${field}: ${rule}`);
		this.name = 'TenantInputError';
	}
}

/** A Temporal client with the payload codec (required: tenant payloads are sealed). */
export async function tenantTemporalClient(
	t: WorkerConfig['temporal'],
	env: Record<string, string | undefined> = process.env,
): Promise<TemporalClient> {
	const dataConverter = dataConverterFor(requireKeys(env));
	const connection = await connectWithBearer((o) => Connection.connect(o), connectionOptions(t), t.token);
	return new TemporalClient({ connection, namespace: t.namespace, dataConverter });
}

export interface InstallInput {
	customerId: string;
	kind: TenantKind;
	sites: string[];
	/** The customer's own networks (never blocked); replaces the declared ones when given, kept when not. */
	protectedRanges?: string[];
}

export function checkInstallInput(i: {
	customerId?: unknown;
	sites?: unknown;
	kind?: unknown;
	protectedRanges?: unknown;
}): void {
	if (i.customerId === undefined || i.customerId === '') throw new TenantInputError('customer_id', 'is required');
	const p = tenantInputProblem(i);
	if (p) {
		const at = p.indexOf(': ');
		throw new TenantInputError(p.slice(0, at), p.slice(at + 2));
	}
}

/** §5.3 connect: GET /oauth/connect with a fresh unguessable state; the redirect must carry that state. */
export async function connectForCode(
	app: Client,
	cfg: { appId: string; redirectUri: string },
	p: { customerId: string; xspe?: string },
): Promise<string> {
	const state = randomState();
	try {
		const r = await app.connect({
			app_id: cfg.appId,
			redirect_uri: cfg.redirectUri,
			response_type: 'code',
			scope: 'install_login',
			state,
			customer_id: p.customerId,
			...(p.xspe ? { xspe: p.xspe } : {}),
		});
		return r.code;
	} catch (e) {
		throw refusal(e, 'connect');
	}
}

/** §5.3 exchange: POST /oauth/access_token with the code → the token record (kept in memory only until sealed). */
export async function exchangeCode(app: Client, cfg: { appId: string; secret: string }, code: string) {
	const issuedAt = Date.now();
	try {
		const r = (await app.call('authorization.accessToken', { app_id: cfg.appId, secret: cfg.secret, code })) as {
			access_token: string;
			expires_in: number;
			refresh_token?: string;
		};
		if (!r.refresh_token) throw new TenantInputError('code', 'the service answered without a refresh token');
		return { accessToken: r.access_token, refreshToken: r.refresh_token, expiresIn: r.expires_in, issuedAt };
	} catch (e) {
		throw refusal(e, 'code');
	}
}

/** Which field a refusal of the install flow is about (the service's message names it; nothing secret in it). */
function refusal(e: unknown, step: 'connect' | 'code'): Error {
	if (e instanceof TenantInputError) return e;
	const msg = redactText((e as Error)?.message ?? String(e));
	if (/state mismatch|did not carry the state/i.test(msg))
		return new TenantInputError(
			'state',
			'the service redirected with a state other than the one sent (possible CSRF); nothing stored',
		);
	if (e instanceof ApiError || e instanceof ValidationError) {
		const named = /\b(customer_id|code|redirect_uri|app_id|secret|xspe)\b/.exec(e instanceof ApiError ? e.msg : msg);
		return new TenantInputError(named?.[1] ?? step, `${e instanceof ApiError ? e.msg : msg}; nothing stored`);
	}
	return new Error(`install flow (${step}): ${msg}; nothing stored`);
}

const emptyState = (i: InstallInput, now: number): TenantState => ({
	customerId: i.customerId,
	kind: i.kind,
	sites: i.sites,
	...(i.protectedRanges?.length ? { protectedRanges: i.protectedRanges } : {}),
	status: 'ok',
	generation: 0,
	installedAt: now,
	renewals: 0,
});

/** Starts the tenant workflow or updates the running one (Update-with-start) with the token record and sites. */
export async function installTenant(
	temporal: TemporalClient,
	taskQueue: string,
	i: InstallInput,
	token?: { accessToken: string; refreshToken: string; expiresIn: number; issuedAt: number; connect?: ConnectParams },
): Promise<TenantView> {
	checkInstallInput(i);
	if (i.kind === 'user' && !token) throw new TenantInputError('code', 'a user tenant needs an authorization code');
	// A new tenant's token record is in its start (durable at once, whether or not a worker answers the Update soon);
	// a running tenant takes it through the Update.
	const start = emptyState(i, Date.now());
	const first = token
		? withToken(start, {
				accessToken: token.accessToken,
				expiresIn: token.expiresIn,
				sentAt: token.issuedAt,
				refreshToken: token.refreshToken,
			})
		: start;
	// the install flow's connect parameters, kept sealed for an automatic re-install (SECSVC_TENANT_REINSTALL)
	if (token?.connect) first.connect = token.connect;
	const update = temporal.workflow.executeUpdateWithStart(installUpdate, {
		args: [
			sealed({
				kind: i.kind,
				sites: i.sites,
				...(i.protectedRanges ? { protectedRanges: i.protectedRanges } : {}),
				...(token ?? {}),
			}),
		],
		startWorkflowOperation: new WithStartWorkflowOperation(TENANT_WORKFLOW, {
			workflowId: tenantWorkflowId(i.customerId),
			taskQueue: tenantQueueFor(taskQueue),
			args: [sealed(first)],
			memo: {
				sites: i.sites,
				kind: i.kind,
				status: 'ok',
				...(i.protectedRanges?.length ? { protectedRanges: i.protectedRanges } : {}),
			},
			workflowIdConflictPolicy: 'USE_EXISTING',
		}),
	});
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_, reject) => {
		timer = setTimeout(
			() =>
				reject(
					new Error(
						`tenant ${i.customerId}: no worker with SECSVC_TENANTS=1 answered within ${INSTALL_WAIT_MS / 1000} s (task queue ${tenantQueueFor(taskQueue)})`,
					),
				),
			INSTALL_WAIT_MS,
		);
	});
	try {
		return await Promise.race([update, late]);
	} finally {
		clearTimeout(timer);
	}
}

const INSTALL_WAIT_MS = 30_000;

export async function listTenants(temporal: TemporalClient): Promise<TenantView[]> {
	const out: TenantView[] = [];
	for await (const w of temporal.workflow.list({
		query: `WorkflowType = '${TENANT_WORKFLOW}' AND ExecutionStatus = 'Running'`,
	})) {
		try {
			out.push(await temporal.workflow.getHandle(w.workflowId).query(viewQuery));
		} catch (e) {
			if (!(e instanceof WorkflowNotFoundError)) throw e;
		}
	}
	return out.sort((a, b) => a.customerId.localeCompare(b.customerId));
}

export async function showTenant(temporal: TemporalClient, customerId: string): Promise<TenantView> {
	checkInstallInput({ customerId });
	try {
		return await temporal.workflow.getHandle(tenantWorkflowId(customerId)).query(viewQuery);
	} catch (e) {
		if (e instanceof WorkflowNotFoundError)
			throw new TenantInputError('customer_id', `tenant '${customerId}' is not installed`);
		throw e;
	}
}

export async function removeTenant(temporal: TemporalClient, customerId: string): Promise<TenantView> {
	checkInstallInput({ customerId });
	try {
		return await temporal.workflow.getHandle(tenantWorkflowId(customerId)).executeUpdate(removeUpdate);
	} catch (e) {
		if (e instanceof WorkflowNotFoundError || (e instanceof WorkflowUpdateFailedError && /not found/i.test(e.message)))
			throw new TenantInputError('customer_id', `tenant '${customerId}' is not installed`);
		throw e;
	}
}

/** One line per tenant; never a token. */
export function formatTenants(rows: TenantView[]): string {
	if (!rows.length) return 'no tenants';
	return rows
		.map(
			(r) =>
				`${r.customerId}  ${r.kind}  ${r.status}  valid until ${r.validUntil ?? '-'}  last renewal ${r.lastRenewal ?? '-'}  renewals ${r.renewals}  sites ${r.sites.length}${r.protectedRanges?.length ? `  protected ${r.protectedRanges.join(',')}` : ''}${r.lockouts ? `  lock-outs ${r.lockouts} (${r.autoReinstalls} re-installed automatically, last ${r.lastLockout?.at})` : ''}${r.problem ? `  (${r.problem})` : ''}`,
		)
		.join('\n');
}
