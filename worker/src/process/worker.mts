import { createIdentityActivities } from '../activities/identity.mts';
import { dataConverterFor, requireKeys } from '../temporal/codec.mts';
import { Client as TemporalClient } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Client } from '../../../api/client.ts';
import { redactText, registerSecret } from '../../../api/redact.ts';
import { createActivities } from '../activities/operations.mts';
import { AdmissionSlots, admissionTuner, coordinatorQueueFor } from './admission.mts';
import { createCoordinationActivities } from '../activities/coordination.mts';
import { createFleetActivities } from '../activities/fleet.mts';
import { createBlocksActivities } from '../activities/blocks.mts';
import { workflowBundle } from './bundle.mts';
import { connectionOptions, type WorkerConfig } from './config.mts';
import { createApiClient } from '../service/client.mts';
import { ensureRouting, workerDeploymentOptions, type ReadyResult } from './deploy.mts';
import { installMetrics, METRIC } from './metrics.mts';
import { budgetFromConfig, type WorkerBudget } from './budget.mts';
import { requestTraceFromEnv } from './requestTrace.mts';
import { tenantMode } from './tenantWorker.mts';
import { clientSafety } from './clientSafety.mts';
import { tenantQueueFor } from '../../../workflows/tenant/shared.mts';
import { ensureSearchAttributes, markMetricsOn, metricMeter, runbookSinks } from './runbookMetrics.mts';

/** Builds the API client from the worker configuration (the only place credentials enter). */
export function clientFromConfig(cfg: WorkerConfig): {
	client: Client;
	close: () => Promise<void>;
	budget?: WorkerBudget;
} {
	const trace = requestTraceFromEnv();
	const budget = budgetFromConfig(cfg, trace);
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
		// the guard, the answer bound, the override audit and the API metrics (clientSafety.mts), and the request trace
		...safety,
		...(trace
			? {
					onEvent: (e: Parameters<NonNullable<typeof safety.onEvent>>[0]) => {
						safety.onEvent?.(e);
						trace.onEvent(e);
					},
				}
			: {}),
		...budget?.clientOptions,
	});
	return {
		client,
		close: async () => {
			await client.close();
			trace?.close();
		},
		budget,
	};
}

/**
 * Worker sizing (env; defaults chosen on the bench of 500 concurrent runbooks on one worker, see bench/README.md):
 *   SECSVC_MAX_CACHED_WORKFLOWS            sticky cache size (default 1000). Smaller bounds the cache, but an evicted
 *                                          runbook replays its whole history on its next poll: at 100 with 500
 *                                          polling runbooks completion took 2.6× longer and peak RSS did not drop
 *   SECSVC_MAX_CONCURRENT_WORKFLOW_TASKS   workflow tasks run at once (default 40, the SDK's; ≤ cache size)
 *   SECSVC_MAX_CONCURRENT_ACTIVITIES       activities run at once (default 50)
 *   SECSVC_MAX_CONCURRENT_LOCAL_ACTIVITIES local activities (the runbooks' reads) run at once (default 50)
 *   SECSVC_REUSE_V8_CONTEXT                1/0 (default 1: one V8 context shared by all workflows)
 *   SECSVC_ADMIT_WORKFLOWS                 admission control (admission.mts): at this many cached workflows the worker
 *                                          takes no new workflow from the task queue until one ends; the rest wait on
 *                                          the server for a worker with room (default 400; 0 = off). ≤ the cache size.
 *
 * Memory is sized by the process, not by these options: the worker runs compiled (worker/dist/main.mjs, no tsx) with
 * node flags from SECSVC_WORKER_NODE_FLAGS (default --max-old-space-size=512 --max-semi-space-size=2 --heap-growing-percent=20) and
 * MALLOC_ARENA_MAX=2 in its environment, both set by the launchers (build.mts workerCommand), see worker/README.md
 * "Memory": the live heaps are small, and without the flags V8 lets garbage pile up before collecting (it grows the
 * old generation up to 4× the live size when the machine has memory, whatever the process needs).
 * The SDK's other memory options stay at their defaults: workflowThreadPoolSize 1 (with reuseV8Context more threads
 * only add isolates), maxCachedWorkflows as above (smaller made it worse: replays).
 */
export function workerTuning(env: Record<string, string | undefined> = process.env) {
	const int = (name: string, def: number, min: number) => {
		const v = env[name];
		if (v === undefined || v === '') return def;
		const n = Number(v);
		if (!Number.isInteger(n) || n < min)
			throw new Error(`${name}: must be an integer ≥ ${min} (got ${JSON.stringify(v)})`);
		return n;
	};
	const reuse = env.SECSVC_REUSE_V8_CONTEXT;
	if (reuse !== undefined && reuse !== '' && reuse !== '0' && reuse !== '1')
		throw new Error(`SECSVC_REUSE_V8_CONTEXT: must be 0 or 1 (got ${JSON.stringify(reuse)})`);
	const maxCachedWorkflows = int('SECSVC_MAX_CACHED_WORKFLOWS', 1000, 2);
	const admit = int('SECSVC_ADMIT_WORKFLOWS', 400, 0);
	if (admit > maxCachedWorkflows)
		throw new Error(
			`SECSVC_ADMIT_WORKFLOWS: must be ≤ SECSVC_MAX_CACHED_WORKFLOWS (${maxCachedWorkflows}) or 0 (got ${admit})`,
		);
	return {
		admitWorkflows: admit,
		maxCachedWorkflows,
		maxConcurrentWorkflowTaskExecutions: Math.min(
			maxCachedWorkflows,
			int('SECSVC_MAX_CONCURRENT_WORKFLOW_TASKS', 40, 2),
		),
		maxConcurrentActivityTaskExecutions: int('SECSVC_MAX_CONCURRENT_ACTIVITIES', 50, 1),
		maxConcurrentLocalActivityExecutions: int('SECSVC_MAX_CONCURRENT_LOCAL_ACTIVITIES', 50, 1),
		reuseV8Context: reuse !== '0',
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

export async function startWorker(
	cfg: WorkerConfig,
	opts: {
		connection?: NativeConnection;
		identity?: string;
		// worker process (main.mts): an API client already checked (a token obtained), and the drain times
		api?: ReturnType<typeof clientFromConfig>;
		shutdown?: Pick<WorkerOptions, 'shutdownGraceTime' | 'shutdownForceTime'>;
	} = {},
): Promise<RunningWorker> {
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
	const { client: app, close: closeApp, budget } = opts.api ?? clientFromConfig(cfg);
	const connection = opts.connection ?? (await NativeConnection.connect(connectionOptions(cfg.temporal)));
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
	const bundle = await workflowBundle({ unversioned: cfg.temporal.workerVersioning === false });
	const { admitWorkflows, ...tuning } = workerTuning();
	const {
		maxConcurrentWorkflowTaskExecutions,
		maxConcurrentActivityTaskExecutions,
		maxConcurrentLocalActivityExecutions,
		...cacheAndContext
	} = tuning;
	// Admission control (admission.mts): a tuner replaces the maxConcurrent* options.
	const admission =
		admitWorkflows > 0
			? new AdmissionSlots({ limit: admitWorkflows, maxConcurrent: maxConcurrentWorkflowTaskExecutions })
			: undefined;
	const sizing = admission
		? {
				...cacheAndContext,
				tuner: admissionTuner(admission, {
					activities: maxConcurrentActivityTaskExecutions,
					localActivities: maxConcurrentLocalActivityExecutions,
				}),
			}
		: tuning;
	// Site coordinators on their own task queue, with no admission limit: a runbook admitted here claims its settings
	// from a coordinator whose first task must not wait behind the runbooks the limit holds back.
	const coordinators = await Worker.create({
		connection,
		namespace: cfg.temporal.namespace,
		taskQueue: coordinatorQueueFor(cfg.temporal.taskQueue),
		workflowBundle: { codePath: bundle.codePath },
		...workerDeploymentOptions(cfg.temporal, bundle.buildId),
		sinks: runbookSinks(),
		...(opts.identity ? { identity: opts.identity } : {}),
		maxCachedWorkflows: cacheAndContext.maxCachedWorkflows,
		reuseV8Context: cacheAndContext.reuseV8Context,
		...opts.shutdown,
	});
	// Tenant workflows and their renewals: only workers with the payload key poll this queue.
	const tenants = tenancy
		? await Worker.create({
				connection,
				namespace: cfg.temporal.namespace,
				taskQueue: tenantQueueFor(cfg.temporal.taskQueue),
				workflowBundle: { codePath: bundle.codePath },
				...workerDeploymentOptions(cfg.temporal, bundle.buildId),
				dataConverter: tenancy.dataConverter,
				activities: tenancy.activities(app),
				...(opts.identity ? { identity: opts.identity } : {}),
				maxCachedWorkflows: tenancy.cachedWorkflows,
				maxConcurrentWorkflowTaskExecutions: Math.min(tenancy.cachedWorkflows, maxConcurrentWorkflowTaskExecutions),
				// `main`: the SDK's in-thread sandbox (its debugMode) with the usual execution timeout kept
				...(tenancy.workflowThread === 'main' ? { debugMode: true, isolateExecutionTimeout: '5s' } : {}),
				reuseV8Context: cacheAndContext.reuseV8Context,
				...opts.shutdown,
			})
		: undefined;
	const worker = await Worker.create({
		connection,
		namespace: cfg.temporal.namespace,
		taskQueue: cfg.temporal.taskQueue,
		workflowBundle: { codePath: bundle.codePath },
		...workerDeploymentOptions(cfg.temporal, bundle.buildId), // versioning: deploy.mts
		activities: {
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
			...createCoordinationActivities(temporalClient),
			...createFleetActivities(client, { rateLimitCodes: cfg.api.rateLimitCodes }),
			...createBlocksActivities(client, temporalClient),
			...createIdentityActivities(cfg.identity),
		},
		...(codec ? { dataConverter: codec } : {}),
		sinks: runbookSinks(),
		...(opts.identity ? { identity: opts.identity } : {}),
		...sizing,
		...opts.shutdown,
	});
	// /metrics: the cap (0 = off) and whether it holds new workflows back now (1) — with the task queue's backlog,
	// what tells an on-call engineer that runbooks wait for a worker with room.
	const meter = metricMeter();
	meter
		?.createGauge(
			METRIC.admissionLimit,
			'int',
			'1',
			'cached workflows at which this worker takes no new one (SECSVC_ADMIT_WORKFLOWS; 0 = off)',
		)
		.set(admitWorkflows);
	const holdingGauge = meter?.createGauge(
		METRIC.admissionHolding,
		'int',
		'1',
		'1 while this worker is at its admission limit: new workflows wait on the server',
	);
	holdingGauge?.set(0);
	if (admission) {
		admission.bind(() => worker.getStatus().numCachedWorkflows);
		admission.onChange = (holding) => {
			holdingGauge?.set(holding ? 1 : 0);
			console.log(
				holding
					? `secsvc worker: ${admitWorkflows} workflows cached (SECSVC_ADMIT_WORKFLOWS): new ones wait on the server for a worker with room`
					: `secsvc worker: taking new workflows again`,
			);
		};
	}
	// The workers live and stop together: when one stops (shutdown or failure), the others are shut down too.
	const all = tenants ? [worker, coordinators, tenants] : [worker, coordinators];
	const stopBoth = () => {
		for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
	};
	const runs = all.map((w) => w.run()).map((p) => p.finally(stopBoth));
	const done = Promise.allSettled(runs)
		.then((r) => {
			const failed = r.find((x): x is PromiseRejectedResult => x.status === 'rejected');
			if (failed) throw failed.reason;
		})
		.finally(async () => {
			await close().catch(() => {});
			if (!opts.connection) await connection.close().catch(() => {});
		});
	const shutdown = async () => {
		stopBoth();
		await done;
	};
	// --- Worker Deployment Versioning (deploy.mts): usable before returning; first build of a deployment becomes current.
	let deployment: ReadyResult | undefined;
	if (cfg.temporal.workerVersioning !== false) {
		try {
			deployment = await ensureRouting(connection.workflowService, {
				namespace: cfg.temporal.namespace,
				deploymentName: cfg.temporal.deploymentName ?? 'secsvc',
				buildId: bundle.buildId,
				taskQueue: cfg.temporal.taskQueue,
				identity: opts.identity,
			});
			// the tenants' queue too: a tenant started before the server routes that queue to this version would wait
			// for an unversioned worker
			if (tenants)
				await ensureRouting(connection.workflowService, {
					namespace: cfg.temporal.namespace,
					deploymentName: cfg.temporal.deploymentName ?? 'secsvc',
					buildId: bundle.buildId,
					taskQueue: tenantQueueFor(cfg.temporal.taskQueue),
					identity: opts.identity,
				});
		} catch (e) {
			await shutdown().catch(() => {});
			throw e;
		}
		const d = deployment;
		if (d.madeCurrent)
			console.log(
				`secsvc worker: build ${d.buildId} is now the current version of deployment ${d.deploymentName} (it had none)`,
			);
		else if (d.current) console.log(`secsvc worker: build ${d.buildId} of deployment ${d.deploymentName} (current)`);
		else
			console.warn(
				`secsvc worker: build ${d.buildId} polls but is not current (deployment ${d.deploymentName} sends new runbooks to ${d.currentBuild}); roll it out with \`secsvc deploy set-current ${d.buildId}\``,
			);
	}
	// --- end versioning
	return { worker, done, shutdown, deployment, admission, coordinators };
}

export const safeMessage = (e: unknown) => redactText(e instanceof Error ? e.message : String(e));
