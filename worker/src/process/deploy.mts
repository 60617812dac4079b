import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { WorkerConfig } from './config.mts';

/**
 * Worker Deployment Versioning ("safe upgrades"): every worker polls as version `<deploymentName>:<buildId>`, the
 * build id being the workflow bundle's source hash (bundle.mts), so changed workflow code never runs under the id
 * of runbooks started on the old code. attackResponse is PINNED (it finishes on the build it started on); every
 * other workflow type declares AUTO_UPGRADE (moves to the current build at its next task); the worker default is
 * PINNED, for the tasks the SDK completes without asking the workflow (workflows/index.mts says why).
 *
 * Routing: new workflows go to the deployment's CURRENT version. A worker makes its own build current only when the
 * deployment has none yet (fresh install, fresh dev server); otherwise a rollout is an explicit operator step,
 * `secsvc deploy set-current <buildId>`. Everything goes through the gRPC workflowService (no temporal CLI).
 */

export type Svc = Client['workflowService'];
/** A connection (the client's, or the worker's NativeConnection): its workflow service, and deadlines for calls. */
export type Conn = Pick<Client['connection'], 'workflowService' | 'withDeadline'>;
export type TemporalCfg = WorkerConfig['temporal'];

// temporal.api.enums.v1 values (the proto package is CommonJS without named ESM exports; only its types are imported).
const VERSION_STATUS = { INACTIVE: 1, CURRENT: 2, RAMPING: 3, DRAINING: 4, DRAINED: 5, CREATED: 6 } as const;
const DRAINAGE = { DRAINING: 1, DRAINED: 2 } as const;
export const TQ_TYPE = { WORKFLOW: 1, ACTIVITY: 2 } as const;
const TQ_KIND_NORMAL = 1;
const DESCRIBE_ENHANCED = 1;

export class DeployError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'DeployError';
	}
}

/** `Worker.create` options for the configured deployment, or none when versioning is off (SECSVC_WORKER_VERSIONING=0). */
export function workerDeploymentOptions(t: TemporalCfg, buildId: string) {
	if (t.workerVersioning === false) return {};
	return {
		workerDeploymentOptions: {
			useWorkerVersioning: true as const,
			version: { deploymentName: deploymentNameOf(t), buildId },
			// Every workflow type declares its behaviour (workflows/index.mts); this default only reaches the workflow
			// tasks the SDK completes by itself (heartbeats while a local activity runs long), and there PINNED is the
			// safe one: AUTO_UPGRADE would let a rollout move a waiting runbook to new code.
			defaultVersioningBehavior: 'PINNED' as const,
		},
	};
}

export const deploymentNameOf = (t: TemporalCfg) => t.deploymentName || 'secsvc';
/** The version string the server uses in search attributes and task-queue APIs. */
export const versionString = (deploymentName: string, buildId: string) => `${deploymentName}:${buildId}`;

const grpcCode = (e: unknown) => (e as { code?: number })?.code;
const DEADLINE_EXCEEDED = 4;
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const ms = (ts: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
	ts && ts.seconds != null ? Number(String(ts.seconds)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : undefined;
export const iso = (t: number | undefined) => (t ? new Date(t).toISOString() : undefined);

export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'created' | 'unknown';
const STATUS: Record<number, VersionStatus> = {
	[VERSION_STATUS.INACTIVE]: 'inactive',
	[VERSION_STATUS.CURRENT]: 'current',
	[VERSION_STATUS.RAMPING]: 'ramping',
	[VERSION_STATUS.DRAINING]: 'draining',
	[VERSION_STATUS.DRAINED]: 'drained',
	[VERSION_STATUS.CREATED]: 'created',
};

export interface DeploymentView {
	name: string;
	current?: string;
	ramping?: string;
	rampingPercent?: number;
	conflictToken?: Uint8Array | null;
	versions: {
		buildId: string;
		status: VersionStatus;
		drainage?: 'draining' | 'drained';
		drainageCheckedAt?: string;
		createdAt?: string;
		currentSince?: string;
	}[];
}

/** The server's entity workflows of a deployment and of one version (IDs `<prefix>:<name>`, `<prefix>:<name>:<buildId>`). */
const ENTITY = { deployment: 'temporal-sys-worker-deployment', version: 'temporal-sys-worker-deployment-version' };
const OPEN = new Set([1, 6]); // WORKFLOW_EXECUTION_STATUS_RUNNING, _CONTINUED_AS_NEW (its next run is open)
/** NotFound answers in a row, each with the entity open, before a describe gives up: see describeEntity. */
export const ENTITY_DESCRIBES = 5;
/** One describe's deadline: the server's sticky leg (5 s) and the normal queue's answer (ms when answered) fit in it. */
export const DESCRIBE_DEADLINE_MS = 10_000;
/** Describes in a row that the server held past DESCRIBE_DEADLINE_MS before the describe gives up. */
export const DESCRIBES_HELD = 3;

/**
 * `call` (a Describe of a deployment or a version), or undefined when the server answers NotFound AND the entity
 * workflow is not open. Server 1.29 answers both describes with a query to the entity workflow, by ID, on the
 * server's own per-namespace worker (temporalio/temporal v1.29.1 service/worker/workerdeployment/client.go).
 *
 * NotFound: the query is sent with QueryRejectCondition NOT_OPEN and a rejected query becomes NotFound, and the entity
 * continues as new after every update and signal (workflow.go `run`: set-current, and each drainage refresh of a
 * draining version): a query that resolved the run being closed reads the deployment as absent (Server 1.30 dropped
 * the condition, commit 9940ce7). So a NotFound is checked the way the server checks existence (client.go
 * `workerDeploymentExists`: DescribeWorkflowExecution of the entity): open, the describe goes again and reaches the
 * new run; ENTITY_DESCRIBES NotFound in a row with the entity open is an error, never "absent".
 *
 * DEADLINE_EXCEEDED: the history service hands the query to the internal worker's sticky queue, gives that leg 5 s
 * (the worker's sticky schedule-to-start timeout), then clears stickiness and sends it to the worker's normal queue
 * (service/history/api/queryworkflow/api.go `queryDirectlyThroughMatching`), and the whole wait is bounded only by
 * the history client's 30 s default timeout (client/history/client.go) when the caller sets no deadline. The internal
 * worker sometimes answers after that (matching then refuses its answer: "query task not found"), and the describe
 * fails with "context deadline exceeded" although nothing is wrong with the deployment. Each describe therefore
 * carries its own deadline and a held one is sent again (a read: the new query is a new dispatch to the worker),
 * DESCRIBES_HELD times at most, then an error saying the server did not answer.
 */
async function describeEntity<T>(
	c: Conn,
	namespace: string,
	workflowId: string,
	call: (svc: Svc) => Promise<T>,
): Promise<T | undefined> {
	let held = 0;
	for (let notFound = 0; ; ) {
		try {
			return await c.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () => call(c.workflowService));
		} catch (e) {
			if (grpcCode(e) === DEADLINE_EXCEEDED) {
				if (++held < DESCRIBES_HELD) continue;
				throw new Error(
					`the Temporal server did not answer the describe of ${workflowId} within ${DESCRIBE_DEADLINE_MS / 1000} s, ${held} times (it answers by querying that workflow on its own internal worker): look again`,
					{ cause: e },
				);
			}
			if (grpcCode(e) !== NOT_FOUND) throw e;
			if (!(await entityOpen(c.workflowService, namespace, workflowId))) return undefined;
			if (++notFound >= ENTITY_DESCRIBES)
				throw new DeployError(
					`the server answered NotFound ${notFound} times for ${workflowId}, whose workflow is open (it continues as new after every change): look again`,
				);
		}
	}
}

async function entityOpen(svc: Svc, namespace: string, workflowId: string): Promise<boolean> {
	try {
		const d = await svc.describeWorkflowExecution({ namespace, execution: { workflowId } });
		return OPEN.has(d.workflowExecutionInfo?.status ?? 0);
	} catch (e) {
		if (grpcCode(e) === NOT_FOUND) return false;
		throw e;
	}
}

/** The deployment as the server sees it; undefined when no versioned worker ever polled under this name. */
export async function describeDeployment(
	c: Conn,
	namespace: string,
	name: string,
): Promise<DeploymentView | undefined> {
	let r: temporal.api.workflowservice.v1.DescribeWorkerDeploymentResponse | undefined;
	try {
		r = await describeEntity(c, namespace, `${ENTITY.deployment}:${name}`, (svc) =>
			svc.describeWorkerDeployment({ namespace, deploymentName: name }),
		);
	} catch (e) {
		if (grpcCode(e) === UNIMPLEMENTED)
			throw new DeployError(
				`the Temporal server has no Worker Deployment API: upgrade it (≥ 1.28) or run workers with SECSVC_WORKER_VERSIONING=0`,
			);
		throw e;
	}
	if (!r) return undefined;
	const info = r.workerDeploymentInfo;
	const rc = info?.routingConfig;
	const drain = (s: number | null | undefined) =>
		s === DRAINAGE.DRAINED ? 'drained' : s === DRAINAGE.DRAINING ? 'draining' : undefined;
	return {
		name,
		current: rc?.currentDeploymentVersion?.buildId || undefined,
		ramping: rc?.rampingDeploymentVersion?.buildId || undefined,
		rampingPercent: rc?.rampingDeploymentVersion?.buildId ? (rc?.rampingVersionPercentage ?? 0) : undefined,
		conflictToken: r.conflictToken,
		versions: (info?.versionSummaries ?? []).map((v) => ({
			buildId: v.deploymentVersion?.buildId ?? '',
			status: STATUS[v.status ?? 0] ?? 'unknown',
			drainage: drain(v.drainageInfo?.status),
			drainageCheckedAt: iso(ms(v.drainageInfo?.lastCheckedTime)),
			createdAt: iso(ms(v.createTime)),
			currentSince: iso(ms(v.currentSinceTime)),
		})),
	};
}

/** Workflow task queues a version has polled (server-side record); [] when the version is unknown. */
export async function versionTaskQueues(c: Conn, namespace: string, name: string, buildId: string): Promise<string[]> {
	const r = await describeEntity(c, namespace, `${ENTITY.version}:${versionString(name, buildId)}`, (svc) =>
		svc.describeWorkerDeploymentVersion({ namespace, deploymentVersion: { deploymentName: name, buildId } }),
	);
	return (r?.versionTaskQueues ?? []).filter((q) => q.type === TQ_TYPE.WORKFLOW).map((q) => q.name ?? '');
}

/**
 * Pollers of one version per task queue, as the server's own poller check sees them (DescribeTaskQueue with the
 * version selected; the server remembers a poller for matching.PollerHistoryTTL, 5 min by default).
 */
export async function versionPollers(
	c: Conn,
	namespace: string,
	name: string,
	buildId: string,
	queues?: string[],
): Promise<{ taskQueue: string; pollers: number }[]> {
	const v = versionString(name, buildId);
	const out: { taskQueue: string; pollers: number }[] = [];
	for (const tq of queues ?? (await versionTaskQueues(c, namespace, name, buildId))) {
		const r = await c.workflowService.describeTaskQueue({
			namespace,
			taskQueue: { name: tq, kind: TQ_KIND_NORMAL },
			apiMode: DESCRIBE_ENHANCED,
			versions: { buildIds: [v] },
			reportPollers: true,
			taskQueueTypes: [TQ_TYPE.WORKFLOW, TQ_TYPE.ACTIVITY],
		});
		const types = r.versionsInfo?.[v]?.typesInfo ?? {};
		const n = Object.values(types).reduce((a, t) => a + (t.pollers?.length ?? 0), 0);
		out.push({ taskQueue: tq, pollers: n });
	}
	return out;
}

export interface ReadyResult {
	deploymentName: string;
	buildId: string;
	/** True when this build receives new workflows. */
	current: boolean;
	/** True when this worker made it current (the deployment had no current version). */
	madeCurrent: boolean;
	/** The current build when it is another one. */
	currentBuild?: string;
}

/**
 * Called by a worker once it polls: waits until the server has registered its task queue in its version, then makes
 * the build current when the deployment has no current version (first install). Never replaces another current
 * build (that is `secsvc deploy set-current`). Several workers racing here are fine (conflict token: one wins).
 */
export async function ensureRouting(
	c: Conn,
	o: {
		namespace: string;
		deploymentName: string;
		buildId: string;
		taskQueue: string;
		identity?: string;
		timeoutMs?: number;
	},
): Promise<ReadyResult> {
	const { namespace, deploymentName, buildId, taskQueue } = o;
	const identity = o.identity ?? `secsvc-worker@${hostname()}/${process.pid}`;
	const deadline = Date.now() + (o.timeoutMs ?? 60_000);
	let lastError: unknown;
	// The first poll registers the version and the task queue (~100 ms); asking earlier only makes the server log
	// NotFound errors, so wait a little first and look at the deployment before the version.
	for (let wait = 150; ; wait = Math.min(wait * 2, 500)) {
		await sleep(wait);
		if (Date.now() > deadline)
			throw new DeployError(
				`worker deployment ${deploymentName}: build ${buildId} was not registered on task queue ${taskQueue} within ${o.timeoutMs ?? 60_000} ms${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
			);
		try {
			const d = await describeDeployment(c, namespace, deploymentName);
			if (!d?.versions.some((v) => v.buildId === buildId)) continue;
			if (!(await versionTaskQueues(c, namespace, deploymentName, buildId)).includes(taskQueue)) continue;
			if (d.current === buildId) return { deploymentName, buildId, current: true, madeCurrent: false };
			if (d.current) return { deploymentName, buildId, current: false, madeCurrent: false, currentBuild: d.current };
			await c.workflowService.setWorkerDeploymentCurrentVersion({
				namespace,
				deploymentName,
				buildId,
				conflictToken: d.conflictToken,
				identity,
			});
			return { deploymentName, buildId, current: true, madeCurrent: true };
		} catch (e) {
			if (e instanceof DeployError) throw e;
			lastError = e; // another worker changed the deployment first (conflict token): look again
		}
	}
}
