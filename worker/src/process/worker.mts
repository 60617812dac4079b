import { dataConverterFor, requireKeys } from '../temporal/codec.mts';
import { Client as TemporalClient } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Client } from '../../../api/client.ts';
import { redactText, registerSecret } from '../../../api/redact.ts';
import { createActivities } from '../activities/operations.mts';
import { playbookActivities } from '../playbooks.mts';
import { AdmissionSlots, coordinatorQueueFor } from './admission.mts';
import { admissionGauges, workerSizing } from './sizing.mts';
import { workflowBundle } from './bundle.mts';
import { connectWithBearer } from './temporalToken.mts';
import { connectionOptions, type WorkerConfig } from './config.mts';
import { createApiClient } from '../service/client.mts';
import { ensureRouting, workerDeploymentOptions, type ReadyResult } from './deploy.mts';
import { installMetrics } from './metrics.mts';
import { budgetFromConfig, type WorkerBudget } from './budget.mts';
import { tenantMode } from './tenantWorker.mts';
import { clientSafety } from './clientSafety.mts';
import { tenantQueueFor } from '../../../workflows/tenant/shared.mts';
import { ensureSearchAttributes, markMetricsOn, runbookSinks } from './runbookMetrics.mts';

/** Builds the API client from the worker configuration (the only place credentials enter). */
export function clientFromConfig(cfg: WorkerConfig): {
	client: Client;
	close: () => Promise<void>;
	budget?: WorkerBudget;
} {
	const budget = budgetFromConfig(cfg);
	const safety = clientSafety(cfg);
	registerSecret(cfg.api.secret);
	registerSecret(cfg.api.refreshToken);
	registerSecret(cfg.api.authCode);
	const client = createApiClient({
		baseUrl: cfg.api.baseUrl,
		credentials: {
			appId: cfg.api.appId,
			secret: cfg.api.secret,
			tokenKind: cfg.api.tokenKind,
			refreshToken: cfg.api.refreshToken,
		},
		tokenStoreFile: cfg.api.tokenStoreFile,
		timeoutMs: cfg.api.timeoutMs ?? 10_000,
		// Temporal retries activities; the client's own retries stay small so one attempt stays short.
		retries: cfg.api.retries ?? 1,
		authFailureCodes: cfg.api.authFailureCodes,
		rateLimitCodes: cfg.api.rateLimitCodes,
		connections: 8,
		// the guard, the answer bound, the override audit and the API metrics (clientSafety.mts)
		...safety,
		...budget?.clientOptions,
	});
	return {
		client,
		close: () => client.close(),
		budget,
	};
}

export interface RunningWorker {
	worker: Worker;
	/** Resolves when the worker has stopped. */
	done: Promise<void>;
	shutdown(): Promise<void>;
	/** Worker Deployment version of this worker (undefined with SECSVC_WORKER_VERSIONING=0). */
	deployment?: ReadyResult;
	/** Admission control (undefined with SECSVC_ADMIT_WORKFLOWS=0). */
	admission?: AdmissionSlots;
	/** The second worker of the process: site coordinators on `<task queue>-coordinators`. */
	coordinators: Worker;
}

export interface StartOptions {
	connection?: NativeConnection;
	identity?: string;
	// worker process (main.mts): an API client already checked (a token obtained), and the drain times
	api?: ReturnType<typeof clientFromConfig>;
	shutdown?: Pick<WorkerOptions, 'shutdownGraceTime' | 'shutdownForceTime'>;
}

export async function startWorker(cfg: WorkerConfig, opts: StartOptions = {}): Promise<RunningWorker> {
	// Prometheus /metrics: the SDK Runtime must be installed before any connection or worker exists (main.mts does it
	// first; here for in-process callers).
	if (cfg.metrics?.address) {
		installMetrics(cfg.metrics.address);
		markMetricsOn();
	}
	// Tenant mode (tenantWorker.mts): fails here, before any connection, without the payload key.
	const tenancy = tenantMode(cfg);
	// Identity provider (docs/approvals.md): decisions carry sealed ID tokens, so the runbooks' worker runs the payload
	// codec; without a key it fails here, naming the setting.
	const codec = cfg.identity
		? dataConverterFor(
				requireKeys(process.env, "to carry approvers' ID tokens sealed (an identity provider is configured)"),
			)
		: undefined;
	const { app, client, connection, temporalClient, close } = await clientsFor(cfg, opts, tenancy);
	const bundle = await workflowBundle({ unversioned: cfg.temporal.workerVersioning === false });
	const { admitWorkflows, admission, sizing, tuning } = workerSizing();
	const { maxConcurrentWorkflowTaskExecutions, ...cacheAndContext } = tuning;
	// Site coordinators on their own task queue, with no admission limit: a runbook admitted here claims its settings
	// from a coordinator whose first task must not wait behind the runbooks the limit holds back.
	// Every worker of the process: one connection, one bundle and build (versioning: deploy.mts), one identity.
	const common = {
		connection,
		namespace: cfg.temporal.namespace,
		workflowBundle: { codePath: bundle.codePath },
		...workerDeploymentOptions(cfg.temporal, bundle.buildId),
		...(opts.identity ? { identity: opts.identity } : {}),
		reuseV8Context: cacheAndContext.reuseV8Context,
		...opts.shutdown,
	};
	const coordinators = await Worker.create({
		...common,
		taskQueue: coordinatorQueueFor(cfg.temporal.taskQueue),
		sinks: runbookSinks(),
		maxCachedWorkflows: cacheAndContext.maxCachedWorkflows,
	});
	// Tenant workflows and their renewals: only workers with the payload key poll this queue.
	const tenants = tenancy
		? await Worker.create({
				...common,
				taskQueue: tenantQueueFor(cfg.temporal.taskQueue),
				dataConverter: tenancy.dataConverter,
				activities: tenancy.activities(app, temporalClient),
				maxCachedWorkflows: tenancy.cachedWorkflows,
				maxConcurrentWorkflowTaskExecutions: Math.min(tenancy.cachedWorkflows, maxConcurrentWorkflowTaskExecutions),
				// `main`: the SDK's in-thread sandbox (its debugMode) with the usual execution timeout kept
				...(tenancy.workflowThread === 'main' ? { debugMode: true, isolateExecutionTimeout: '5s' } : {}),
			})
		: undefined;
	const worker = await Worker.create({
		...common,
		taskQueue: cfg.temporal.taskQueue,
		activities: workerActivities(client, cfg, temporalClient),
		...(codec ? { dataConverter: codec } : {}),
		sinks: runbookSinks(),
		...sizing,
	});
	admissionGauges(admitWorkflows, admission, worker);
	// The workers live and stop together: when one stops (shutdown or failure), the others are shut down too.
	const { done, shutdown } = runTogether(
		tenants ? [worker, coordinators, tenants] : [worker, coordinators],
		async () => {
			await close().catch(() => {});
			if (!opts.connection) await connection.close().catch(() => {});
		},
	);
	// Worker Deployment Versioning (deploy.mts): usable before returning; first build of a deployment becomes current.
	const deployment =
		cfg.temporal.workerVersioning === false
			? undefined
			: await routeToBuild(connection, cfg, bundle.buildId, !!tenants, opts.identity).catch(async (e) => {
					await shutdown().catch(() => {});
					throw e;
				});
	return { worker, done, shutdown, deployment, admission, coordinators };
}

/**
 * The worker's clients: the service's (in tenant mode routed per site's tenant token), the Temporal connection and a
 * Temporal client on it (the playbooks reach the site coordinator through it), the budget's share while running.
 */
async function clientsFor(cfg: WorkerConfig, opts: StartOptions, tenancy: ReturnType<typeof tenantMode>) {
	const { client: app, close: closeApp, budget } = opts.api ?? clientFromConfig(cfg);
	const connection =
		opts.connection ??
		(await connectWithBearer((o) => NativeConnection.connect(o), connectionOptions(cfg.temporal), cfg.temporal.token));
	await ensureSearchAttributes(connection, cfg.temporal.namespace);
	// The playbooks reach the site coordinator (one owner per setting) through this worker's own connection.
	let temporal: TemporalClient | undefined;
	const temporalClient = () =>
		(temporal ??= new TemporalClient({
			connection,
			namespace: cfg.temporal.namespace,
			...(tenancy ? { dataConverter: tenancy.dataConverter } : {}),
		}));
	// Activities get a client; in tenant mode it sends each call with its site's tenant token.
	const routed = tenancy?.route(app, temporalClient, budget?.clientOptions);
	const client = routed?.client ?? app;
	// The budget's share of the cluster and its pauses (budget.mts), while the worker runs.
	const sharing = budget?.start(temporalClient, {
		namespace: cfg.temporal.namespace,
		taskQueue: cfg.temporal.taskQueue,
		identity: opts.identity,
	});
	const close = async () => {
		sharing?.stop();
		await routed?.close().catch(() => {});
		await closeApp();
	};
	return { app, client, connection, temporalClient, close };
}

/** The activities of the runbooks' task queue: the operations' and each playbook's (worker/src/playbooks.mts). */
function workerActivities(client: Client, cfg: WorkerConfig, temporalClient: () => TemporalClient) {
	return {
		...createActivities(client, {
			retryableApiCodes: cfg.api.retryableApiCodes,
			authInputs: {
				appId: cfg.api.appId,
				secret: cfg.api.secret,
				refreshToken: cfg.api.refreshToken,
				authCode: cfg.api.authCode,
			},
			coordination: temporalClient,
		}),
		...playbookActivities({ client, cfg, temporalClient }),
	};
}

/** Runs the workers; when one stops (shutdown or failure) the others are shut down too, then `close` runs once. */
function runTogether(all: Worker[], close: () => Promise<void>) {
	const stopAll = () => {
		for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
	};
	const runs = all.map((w) => w.run()).map((p) => p.finally(stopAll));
	const done = Promise.allSettled(runs)
		.then((r) => {
			const failed = r.find((x): x is PromiseRejectedResult => x.status === 'rejected');
			if (failed) throw failed.reason;
		})
		.finally(close);
	const shutdown = async () => {
		stopAll();
		await done;
	};
	return { done, shutdown };
}

/**
 * Routes the task queue (and the tenants' queue, else a tenant started before the server routes it to this version
 * would wait for an unversioned worker) to this build; the first build of a deployment becomes current. Logs where the
 * build stands.
 */
async function routeToBuild(
	connection: NativeConnection,
	cfg: WorkerConfig,
	buildId: string,
	tenants: boolean,
	identity: string | undefined,
): Promise<ReadyResult> {
	const route = (taskQueue: string) =>
		ensureRouting(connection, {
			namespace: cfg.temporal.namespace,
			deploymentName: cfg.temporal.deploymentName ?? 'secsvc',
			buildId,
			taskQueue,
			identity,
		});
	const d = await route(cfg.temporal.taskQueue);
	if (tenants) await route(tenantQueueFor(cfg.temporal.taskQueue));
	if (d.madeCurrent)
		console.log(
			`secsvc worker: build ${d.buildId} is now the current version of deployment ${d.deploymentName} (it had none)`,
		);
	else if (d.current) console.log(`secsvc worker: build ${d.buildId} of deployment ${d.deploymentName} (current)`);
	else
		console.warn(
			`secsvc worker: build ${d.buildId} polls but is not current (deployment ${d.deploymentName} sends new runbooks to ${d.currentBuild}); roll it out with \`secsvc deploy set-current ${d.buildId}\``,
		);
	return d;
}

export const safeMessage = (e: unknown) => redactText(e instanceof Error ? e.message : String(e));
