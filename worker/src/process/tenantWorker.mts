// Tenant mode of the worker (SECSVC_TENANTS=1; docs/worker/tenants.md): the payload key is required (checked at
// start, one line naming the setting), activities get a client that routes each call to its tenant, and a third SDK
// Worker polls `<task queue>-tenants` for the tenant workflows and their renewals.
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client, ClientOptions } from '../../../api/client.ts';
import { setTimeout as delay } from 'node:timers/promises';
import { dataConverterFor, requireKeys } from '../temporal/codec.mts';
import { ConfigError, type WorkerConfig } from './config.mts';
import { createUndiciTransport } from '../service/undici.mts';
import { clientSafety } from './clientSafety.mts';
import { createTenantActivities, DEFAULT_REINSTALL_POLICY } from '../../../workflows/tenant/activitiesRenew.mts';
import { REINSTALL_POLICIES, type ReinstallPolicy } from '../../../workflows/tenant/shared.mts';
import { TenantDirectory, tenantClients, tenantRoutingClient } from '../../../workflows/tenant/activities.mts';

export const tenantsEnabled = (env: Record<string, string | undefined> = process.env) => {
	const v = env.SECSVC_TENANTS;
	if (v === undefined || v === '' || v === '0') return false;
	if (v === '1') return true;
	throw new Error(`SECSVC_TENANTS: must be 0 or 1 (got ${JSON.stringify(v)})`);
};

/**
 * SECSVC_TENANT_CACHED_WORKFLOWS: tenant workflows this worker keeps cached (the sticky cache of its tenants SDK
 * Worker; default DEFAULT_TENANT_CACHED_WORKFLOWS). A tenant not cached replays its run (short: the workflow continues as
 * new often) on its next Update; a cached one costs the worker memory for as long as it stays cached.
 */
export const DEFAULT_TENANT_CACHED_WORKFLOWS = 1000;
export function tenantCachedWorkflows(env: Record<string, string | undefined> = process.env): number {
	const v = env.SECSVC_TENANT_CACHED_WORKFLOWS;
	if (v === undefined || v === '') return DEFAULT_TENANT_CACHED_WORKFLOWS;
	const n = Number(v);
	if (!Number.isInteger(n) || n < 2)
		throw new Error(`SECSVC_TENANT_CACHED_WORKFLOWS: must be an integer ≥ 2 (got ${JSON.stringify(v)})`);
	return n;
}

/**
 * SECSVC_TENANT_WORKFLOW_THREAD: where the tenant workflows run. `main` (default): in the worker's main thread (the
 * SDK's in-thread sandbox, with the same 5 s execution timeout per activation), which spares the process a third
 * workflow thread and its isolate; a tenant's activations are short (hand out a token, schedule a renewal), so they
 * hold the main thread's event loop only briefly. `own`: a workflow thread of their own, like the runbooks' and the
 * coordinators'.
 */
export const DEFAULT_TENANT_WORKFLOW_THREAD: 'own' | 'main' = 'main';
export function tenantWorkflowThread(env: Record<string, string | undefined> = process.env): 'own' | 'main' {
	const v = env.SECSVC_TENANT_WORKFLOW_THREAD;
	if (v === undefined || v === '') return DEFAULT_TENANT_WORKFLOW_THREAD;
	if (v === 'own' || v === 'main') return v;
	throw new Error(`SECSVC_TENANT_WORKFLOW_THREAD: must be 'own' or 'main' (got ${JSON.stringify(v)})`);
}

export interface TenantMode {
	dataConverter: NonNullable<ReturnType<typeof dataConverterFor>>;
	/** The tenants SDK Worker's sticky cache size (SECSVC_TENANT_CACHED_WORKFLOWS). */
	cachedWorkflows: number;
	/** Where the tenant workflows run (SECSVC_TENANT_WORKFLOW_THREAD). */
	workflowThread: 'own' | 'main';
	/** The activities' client: each call with its tenant's token (portal/token operations with the app's). */
	/** `budget`: the request budget's client options (process/budget.mts), when api.rateLimit is set. */
	route(
		app: Client,
		temporal: () => TemporalClient,
		budget?: Partial<ClientOptions>,
	): { client: Client; close(): Promise<void> };
	activities(app: Client, temporal: () => TemporalClient): Record<string, (...a: never[]) => Promise<unknown>>;
}

/** Undefined when tenant mode is off; throws one line naming SECSVC_PAYLOAD_KEYS when it is on without a key. */
export function tenantMode(
	cfg: WorkerConfig,
	env: Record<string, string | undefined> = process.env,
): TenantMode | undefined {
	if (!tenantsEnabled(env)) return undefined;
	const dataConverter = dataConverterFor(requireKeys(env)) as TenantMode['dataConverter'];
	const cachedWorkflows = tenantCachedWorkflows(env);
	const workflowThread = tenantWorkflowThread(env);
	const refreshRejectedCodes = refreshRejected(env);
	const reinstall = reinstallPolicy(env);
	return {
		dataConverter,
		cachedWorkflows,
		workflowThread,
		route(app, temporal, budget) {
			const transport = createUndiciTransport({ connections: 8 });
			const clientFor = tenantClients(
				{
					baseUrl: cfg.api.baseUrl,
					transport,
					timeoutMs: cfg.api.timeoutMs ?? 10_000,
					retries: cfg.api.retries ?? 1,
					authFailureCodes: cfg.api.authFailureCodes,
					rateLimitCodes: cfg.api.rateLimitCodes,
					sleep: (ms) => delay(ms),
					// the same guard, answer bound, override audit and metrics as the app's client
					...clientSafety(cfg),
					// the app's request budget, each tenant also within its own (api.rateLimit.tenant)
					...budget,
				},
				temporal,
			);
			const dir = new TenantDirectory(temporal);
			const client = tenantRoutingClient(app, async (site, customer) => {
				const c = await dir.customerOf(site, customer);
				return clientFor(c, dir.protectedRangesOf(c));
			});
			return { client, close: () => transport.close() };
		},
		activities: (app, temporal) =>
			createTenantActivities(
				app,
				{ appId: cfg.api.appId, secret: cfg.api.secret, refreshRejectedCodes, reinstall },
				temporal,
			) as never,
	};
}

/** SECSVC_REFRESH_REJECTED_CODES: refresh answers that mean the refresh token is gone (unset: the activity's default). */
export function refreshRejected(env: NodeJS.ProcessEnv = process.env): number[] | undefined {
	return env.SECSVC_REFRESH_REJECTED_CODES?.split(',')
		.map((s) => Number(s.trim()))
		.filter(Number.isInteger);
}

/** SECSVC_TENANT_REINSTALL: when a worker re-installs a locked-out tenant by itself (shared.mts ReinstallPolicy). */
export function reinstallPolicy(env: NodeJS.ProcessEnv = process.env): ReinstallPolicy {
	const v = env.SECSVC_TENANT_REINSTALL?.trim() || DEFAULT_REINSTALL_POLICY;
	if (!(REINSTALL_POLICIES as readonly string[]).includes(v))
		throw new ConfigError([
			{ field: 'SECSVC_TENANT_REINSTALL', rule: `must be one of ${REINSTALL_POLICIES.join(', ')} (got '${v}')` },
		]);
	return v as ReinstallPolicy;
}
