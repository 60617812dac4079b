// Tenants in the worker (docs/worker/tenants.md): a site resolves to its tenant, a call for the site
// carries that tenant's token, which comes from the tenant's entity workflow (tenant-<customer_id>) and is held and
// renewed ahead by ClusterTokens (clusterTokens.mts). Renewals happen in the workflow (one at a time, once per expiry,
// cluster-wide).
import { Context } from '@temporalio/activity';
import { WorkflowUpdateFailedError, type Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { getOperation } from '../../api/catalog/index.ts';
import { createClient, type Client, type ClientOptions } from '../../api/client.ts';
import { redactText } from '../../api/redact.ts';
import { TENANT_WORKFLOW, tenantWorkflowId, tokenUpdate, type TokenGrant, type TokenRequest } from './shared.mts';
import { ClusterTokens } from '../../worker/src/activities/clusterTokens.mts';

export { ClusterTokens };

/**
 * Asks `tenant-<customer>` for a token. A tenant that needs re-install fails the call naming it, retryable: a
 * re-install (a person's, or the worker's own: SECSVC_TENANT_REINSTALL) brings the token back, so a runbook's write or
 * revert waits for it patiently and says so (withPatience), and its polls are blind, instead of giving up its revert.
 */
export async function askTenant(temporal: TemporalClient, customerId: string, req: TokenRequest): Promise<TokenGrant> {
	for (let attempt = 0; ; attempt++) {
		try {
			return await temporal.workflow
				.getHandle(tenantWorkflowId(customerId))
				.executeUpdate(tokenUpdate, { args: [req] });
		} catch (e) {
			const cause = e instanceof WorkflowUpdateFailedError ? (e.cause as ApplicationFailure | undefined) : undefined;
			if (cause?.type === 'NeedsReinstall')
				throw ApplicationFailure.retryable(cause.message, 'NeedsReinstall', { customerId });
			if (cause?.type === 'TokenUnavailable')
				throw ApplicationFailure.retryable(cause.message, 'TokenUnavailable', { customerId });
			const notFound =
				e instanceof WorkflowNotFoundError || /not found|already completed/i.test((e as Error).message ?? '');
			// a run that just continued as new: the next attempt reaches the new run
			if (notFound && attempt < 2) {
				await new Promise((r) => setTimeout(r, 200));
				continue;
			}
			if (notFound)
				throw ApplicationFailure.nonRetryable(
					`customer_id: tenant '${customerId}' is not installed (secsvc tenants add)`,
					'TenantUnknown',
					{ customerId },
				);
			throw ApplicationFailure.retryable(
				`tenant ${customerId}: ${redactText((e as Error).message ?? String(e))}`,
				'TokenUnavailable',
				{ customerId },
			);
		}
	}
}

/**
 * site → customer and each customer's declared protected ranges, from the running tenant workflows' memo, read by a
 * visibility list; reloaded on a miss (at most once a second, three times: a tenant installed elsewhere is usable
 * within seconds) and when older than `maxAgeMs` (a changed declaration reaches every worker within a minute).
 */
export class TenantDirectory {
	private bySite = new Map<string, string>();
	private customers = new Set<string>();
	private ranges = new Map<string, string[]>();
	private loadedAt = 0;
	private triedAt = 0;
	private loading?: Promise<void>;
	constructor(
		private readonly temporal: () => TemporalClient,
		private readonly minIntervalMs = 1000,
		private readonly maxAgeMs = 60_000,
	) {}

	/** The protected ranges the operator declared for a customer at install (`secsvc tenants … --protected`). */
	protectedRangesOf = (customer: string): readonly string[] => this.ranges.get(customer) ?? [];

	async reload(): Promise<void> {
		const wait = this.loadedAt + this.minIntervalMs - Date.now();
		if (wait > 0) await new Promise((r) => setTimeout(r, wait));
		const bySite = new Map<string, string>();
		const customers = new Set<string>();
		const ranges = new Map<string, string[]>();
		for await (const w of this.temporal().workflow.list({
			query: `WorkflowType = '${TENANT_WORKFLOW}' AND ExecutionStatus = 'Running'`,
		})) {
			const customer = w.workflowId.slice(tenantWorkflowId('').length);
			customers.add(customer);
			const sites = (w.memo?.sites ?? []) as unknown;
			if (Array.isArray(sites)) for (const s of sites) if (typeof s === 'string') bySite.set(s, customer);
			const pr = w.memo?.protectedRanges as unknown;
			if (Array.isArray(pr))
				ranges.set(
					customer,
					pr.filter((r): r is string => typeof r === 'string'),
				);
		}
		this.bySite = bySite;
		this.customers = customers;
		this.ranges = ranges;
		this.loadedAt = Date.now();
	}

	/** The tenant of a call: its site's tenant (and the customer_id it names must be that tenant), else its customer_id. */
	async customerOf(site: string | undefined, customer: string | undefined): Promise<string> {
		if (this.loadedAt && Date.now() - Math.max(this.loadedAt, this.triedAt) > this.maxAgeMs) {
			this.triedAt = Date.now();
			await this.load().catch(() => {}); // a failed refresh keeps what was read; the next one is a minute later
		}
		for (let attempt = 0; ; attempt++) {
			const found =
				site !== undefined
					? this.bySite.get(site)
					: customer !== undefined && this.customers.has(customer)
						? customer
						: undefined;
			if (found !== undefined) {
				if (site !== undefined && customer !== undefined && customer !== found)
					throw ApplicationFailure.nonRetryable(
						`customer_id: site '${site}' belongs to tenant '${found}', not '${customer}'`,
						'TenantMismatch',
					);
				return found;
			}
			if (attempt >= 3)
				throw ApplicationFailure.nonRetryable(
					site !== undefined
						? `site_id: site '${site}' belongs to no installed tenant (secsvc tenants add … --sites ${site})`
						: `customer_id: tenant '${customer}' is not installed`,
					'TenantUnknown',
				);
			await this.load();
		}
	}

	/** One reload at a time, shared by every caller waiting for it. */
	private load(): Promise<void> {
		return (this.loading ??= this.reload().finally(() => (this.loading = undefined)));
	}
}

/** Portal operations (§5.4: customer list and detail) and the token operations act for the app, never a tenant. */
const APP_RESOURCES = new Set(['customer', 'authorization']);

/**
 * The site a workflow acts for, from its id (attack-response-<site>[-dry-run-N], attack-report-<site>-<ms>,
 * drift-audit-<site>-<ms>): for the calls that name no site or customer (the event detail names only its event).
 */
export function siteOfWorkflowId(id: string): string | undefined {
	const m = /^attack-response-(.+?)(?:-dry-run-\d+)?$/.exec(id) ?? /^(?:attack-report|drift-audit)-(.+)-\d+$/.exec(id);
	return m?.[1];
}

/** The calling activity's workflow id, when called from an activity. */
function callerWorkflowId(): string | undefined {
	try {
		return Context.current().info.workflowExecution?.workflowId;
	} catch {
		return undefined;
	}
}

/**
 * A `Client` that sends each call with its tenant's token: `site_id` (else `customer_id`) picks the tenant; portal and
 * token operations go to `app` (the worker's own app credential). The activity factories receive it as their client.
 */
export function tenantRoutingClient(
	app: Client,
	route: (site: string | undefined, customer: string | undefined) => Promise<Client>,
): Client {
	/** The client whose token serves this call: the app's for portal operations, else the site's tenant's. */
	const clientFor = async (opId: string, params: Record<string, unknown>): Promise<Client> => {
		const op = getOperation(opId);
		const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
		if (APP_RESOURCES.has(op.resource)) return app;
		const customer = str(params?.customer_id);
		let site = str(params?.site_id);
		if (site === undefined && customer === undefined) {
			const wf = callerWorkflowId();
			site = wf === undefined ? undefined : siteOfWorkflowId(wf);
			if (site === undefined) return app;
		}
		return route(site, customer);
	};
	const call = async (opId: string, params: Record<string, unknown> = {}, o?: Parameters<Client['call']>[2]) =>
		(await clientFor(opId, params)).call(opId, params, o);
	const ops = (path: string[]): unknown =>
		new Proxy(() => {}, {
			get: (_t, k) => (typeof k === 'string' ? ops([...path, k]) : undefined),
			apply: (_t, _this, args: [Record<string, unknown>?, Parameters<Client['call']>[2]?]) =>
				call(path.join('.'), ...args),
		});
	return {
		call: call as Client['call'],
		validate: app.validate,
		check: async (opId, params = {}, o) => (await clientFor(opId, params)).check(opId, params, o),
		ops: ops([]) as Client['ops'],
		connect: app.connect,
		tokens: app.tokens,
		options: app.options,
	};
}

/**
 * One client per tenant (shared transport), each with its ClusterTokens and its guard: the worker's protected ranges
 * and the tenant's declared ones (`protectedRanges`; a changed declaration builds the tenant a new client).
 */
export function tenantClients(
	opts: Omit<ClientOptions, 'credentials' | 'tokenManager' | 'tokenStore'>,
	temporal: () => TemporalClient,
) {
	const byCustomer = new Map<string, { ranges: string; client: Client }>();
	return (customerId: string, protectedRanges: readonly string[] = []): Client => {
		const ranges = protectedRanges.join(',');
		let c = byCustomer.get(customerId);
		if (!c || c.ranges !== ranges) {
			const declared = protectedRanges.map((range) => ({ range, source: `tenant ${customerId} --protected` }));
			const guard = [...(opts.blastRadius?.protectedRanges ?? []), ...declared];
			const client = createClient({
				...opts,
				credentials: { appId: '', secret: '', tokenKind: 'user' },
				tokenManager: c?.client.tokens ?? new ClusterTokens((req) => askTenant(temporal(), customerId, req)),
				// with a request budget: this tenant's own, within the app's (docs/rate-budget.md)
				budgetKey: customerId,
				blastRadius: { ...opts.blastRadius, protectedRanges: guard },
			});
			byCustomer.set(customerId, (c = { ranges, client }));
		}
		return c.client;
	};
}
