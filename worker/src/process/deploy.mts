import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { WorkerConfig } from './config.mts';
import { WORKFLOW_TYPE } from '../../../api/runbook/contract.ts';

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

type Svc = Client['workflowService'];
type TemporalCfg = WorkerConfig['temporal'];

// temporal.api.enums.v1 values (the proto package is CommonJS without named ESM exports; only its types are imported).
const VERSION_STATUS = { INACTIVE: 1, CURRENT: 2, RAMPING: 3, DRAINING: 4, DRAINED: 5, CREATED: 6 } as const;
const DRAINAGE = { DRAINING: 1, DRAINED: 2 } as const;
const TQ_TYPE = { WORKFLOW: 1, ACTIVITY: 2 } as const;
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
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const ms = (ts: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
	ts && ts.seconds != null ? Number(String(ts.seconds)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : undefined;
const iso = (t: number | undefined) => (t ? new Date(t).toISOString() : undefined);

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

/** The deployment as the server sees it; undefined when no versioned worker ever polled under this name. */
export async function describeDeployment(
	svc: Svc,
	namespace: string,
	name: string,
): Promise<DeploymentView | undefined> {
	let r: temporal.api.workflowservice.v1.DescribeWorkerDeploymentResponse;
	try {
		r = await svc.describeWorkerDeployment({ namespace, deploymentName: name });
	} catch (e) {
		if (grpcCode(e) === NOT_FOUND) return undefined;
		if (grpcCode(e) === UNIMPLEMENTED)
			throw new DeployError(
				`the Temporal server has no Worker Deployment API: upgrade it (≥ 1.28) or run workers with SECSVC_WORKER_VERSIONING=0`,
			);
		throw e;
	}
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
export async function versionTaskQueues(svc: Svc, namespace: string, name: string, buildId: string): Promise<string[]> {
	try {
		const r = await svc.describeWorkerDeploymentVersion({
			namespace,
			deploymentVersion: { deploymentName: name, buildId },
		});
		return (r.versionTaskQueues ?? []).filter((q) => q.type === TQ_TYPE.WORKFLOW).map((q) => q.name ?? '');
	} catch (e) {
		if (grpcCode(e) === NOT_FOUND) return [];
		throw e;
	}
}

/**
 * Pollers of one version per task queue, as the server's own poller check sees them (DescribeTaskQueue with the
 * version selected; the server remembers a poller for matching.PollerHistoryTTL, 5 min by default).
 */
export async function versionPollers(
	svc: Svc,
	namespace: string,
	name: string,
	buildId: string,
	queues?: string[],
): Promise<{ taskQueue: string; pollers: number }[]> {
	const v = versionString(name, buildId);
	const out: { taskQueue: string; pollers: number }[] = [];
	for (const tq of queues ?? (await versionTaskQueues(svc, namespace, name, buildId))) {
		const r = await svc.describeTaskQueue({
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
	svc: Svc,
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
			const d = await describeDeployment(svc, namespace, deploymentName);
			if (!d?.versions.some((v) => v.buildId === buildId)) continue;
			if (!(await versionTaskQueues(svc, namespace, deploymentName, buildId)).includes(taskQueue)) continue;
			if (d.current === buildId) return { deploymentName, buildId, current: true, madeCurrent: false };
			if (d.current) return { deploymentName, buildId, current: false, madeCurrent: false, currentBuild: d.current };
			await svc.setWorkerDeploymentCurrentVersion({
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

// ---------------------------------------------------------------------------------------------------------------
// Operator side: `secsvc deploy status | set-current | retire-check`

export interface VersionReport {
	buildId: string;
	status: VersionStatus;
	/** Server's drainage record (set once the version stops being current or ramping). */
	drainage?: 'draining' | 'drained';
	createdAt?: string;
	currentSince?: string;
	taskQueues: string[];
	/** Pollers seen by the server for this version, summed over its task queues. */
	pollers: number;
	/** Open workflows whose last task ran on this build (visibility). */
	running: number;
	/** Open PINNED workflows on this build (visibility): they will finish here. */
	pinnedRunning: number;
	retirable: boolean;
	reason: string;
}

export interface RunbookOnBuild {
	workflowId: string;
	runId: string;
	type: string;
	buildId?: string;
	behavior?: string;
	startedAt?: string;
}

export interface DeploymentStatus {
	namespace: string;
	deployment: string;
	current?: string;
	ramping?: string;
	rampingPercent?: number;
	versions: VersionReport[];
	runbooks: RunbookOnBuild[];
}

const q = (s: string) => `'${s.replace(/'/g, "\\'")}'`;

async function count(svc: Svc, namespace: string, query: string): Promise<number> {
	const r = await svc.countWorkflowExecutions({ namespace, query });
	return Number(String(r.count ?? 0));
}

const saString = (p: temporal.api.common.v1.IPayload | undefined): string | undefined => {
	if (!p?.data) return undefined;
	try {
		const v = JSON.parse(Buffer.from(p.data).toString('utf8'));
		return typeof v === 'string' ? v : Array.isArray(v) ? String(v[0]) : undefined;
	} catch {
		return undefined;
	}
};

/** Running attackResponse runbooks with the build each is on (search attribute TemporalWorkerDeploymentVersion). */
export async function runningRunbooks(
	svc: Svc,
	namespace: string,
	deploymentName: string,
	limit = 1000,
): Promise<RunbookOnBuild[]> {
	const out: RunbookOnBuild[] = [];
	let nextPageToken: Uint8Array | undefined;
	do {
		const r = await svc.listWorkflowExecutions({
			namespace,
			query: `WorkflowType = '${WORKFLOW_TYPE.attackResponse}' AND ExecutionStatus = 'Running'`,
			pageSize: 200,
			nextPageToken,
		});
		for (const e of r.executions ?? []) {
			const sa = e.searchAttributes?.indexedFields ?? {};
			const version = saString(sa.TemporalWorkerDeploymentVersion ?? undefined);
			const [dep, build] = version
				? [version.slice(0, version.indexOf(':')), version.slice(version.indexOf(':') + 1)]
				: [];
			out.push({
				workflowId: e.execution?.workflowId ?? '',
				runId: e.execution?.runId ?? '',
				type: e.type?.name ?? '',
				buildId: dep === deploymentName ? build : version,
				behavior: saString(sa.TemporalWorkflowVersioningBehavior ?? undefined),
				startedAt: iso(ms(e.startTime)),
			});
		}
		nextPageToken = r.nextPageToken && r.nextPageToken.length ? r.nextPageToken : undefined;
	} while (nextPageToken && out.length < limit);
	return out;
}

/** Versions, routing, pinned runbooks per build and which old builds can be retired. */
export async function deploymentStatus(svc: Svc, t: TemporalCfg): Promise<DeploymentStatus> {
	const namespace = t.namespace;
	const name = deploymentNameOf(t);
	const d = await describeDeployment(svc, namespace, name);
	if (!d)
		throw new DeployError(
			`worker deployment '${name}' not found in namespace ${namespace}: no versioned worker has polled under this name yet`,
		);
	const versions: VersionReport[] = [];
	for (const v of d.versions) {
		const vs = q(versionString(name, v.buildId));
		const taskQueues = await versionTaskQueues(svc, namespace, name, v.buildId);
		const pollers = (await versionPollers(svc, namespace, name, v.buildId, taskQueues)).reduce(
			(a, p) => a + p.pollers,
			0,
		);
		const running = await count(
			svc,
			namespace,
			`TemporalWorkerDeploymentVersion = ${vs} AND ExecutionStatus = 'Running'`,
		);
		const pinnedRunning = await count(
			svc,
			namespace,
			`TemporalWorkerDeploymentVersion = ${vs} AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'`,
		);
		const { retirable, reason } = retirement(d, v, pinnedRunning);
		versions.push({ ...v, taskQueues, pollers, running, pinnedRunning, retirable, reason });
	}
	return {
		namespace,
		deployment: name,
		current: d.current,
		ramping: d.ramping,
		rampingPercent: d.rampingPercent,
		versions,
		runbooks: await runningRunbooks(svc, namespace, name),
	};
}

/**
 * A build can be retired (its workers stopped) when it receives no new workflows (neither current nor ramping), no
 * pinned runbook is open on it (visibility), and the server agrees: drained, or never activated (inactive).
 */
function retirement(
	d: DeploymentView,
	v: DeploymentView['versions'][number],
	pinnedRunning: number,
): { retirable: boolean; reason: string } {
	if (d.current === v.buildId) return { retirable: false, reason: 'current: receives new runbooks' };
	if (d.ramping === v.buildId) return { retirable: false, reason: `ramping (${d.rampingPercent ?? 0}%)` };
	if (pinnedRunning > 0) return { retirable: false, reason: `${pinnedRunning} pinned runbook(s) still running on it` };
	if (v.status === 'drained' || v.drainage === 'drained')
		return { retirable: true, reason: 'drained: no pinned runbook left' };
	if (v.status === 'inactive' || v.status === 'created')
		return { retirable: true, reason: 'never current: no runbook on it' };
	return { retirable: false, reason: 'draining: none open in visibility, waiting for the server to confirm the drain' };
}

/**
 * Makes `buildId` the current version: new runbooks and the auto-upgrade playbooks go to it, pinned runbooks stay on
 * their build. Refuses (changing nothing) an unknown build id and a build with no worker polling.
 */
export async function setCurrent(
	svc: Svc,
	t: TemporalCfg,
	buildId: string,
	identity = `secsvc-cli@${hostname()}`,
): Promise<{ previous?: string; current: string; changed: boolean }> {
	const name = deploymentNameOf(t);
	if (!/^[A-Za-z0-9_.-]{1,255}$/.test(buildId))
		throw new DeployError(`build id: must be 1–255 letters, digits, '.', '-' or '_' (got ${JSON.stringify(buildId)})`);
	const d = await describeDeployment(svc, t.namespace, name);
	if (!d)
		throw new DeployError(
			`worker deployment '${name}' not found in namespace ${t.namespace}: no versioned worker has polled under this name yet`,
		);
	const known = d.versions.map((v) => `${v.buildId} (${v.status})`).join(', ') || 'none';
	if (!d.versions.some((v) => v.buildId === buildId))
		throw new DeployError(
			`build id ${buildId}: unknown in worker deployment '${name}' (known builds: ${known}); nothing changed`,
		);
	if (d.current === buildId) return { previous: d.current, current: buildId, changed: false };
	const pollers = await versionPollers(svc, t.namespace, name, buildId);
	if (!pollers.some((p) => p.pollers > 0))
		throw new DeployError(
			`build id ${buildId}: no worker of this build is polling${
				pollers.length
					? ` (task queues ${pollers
							.map((p) => p.taskQueue)
							.sort()
							.join(', ')})`
					: ''
			}; start its workers first; nothing changed`,
		);
	try {
		await svc.setWorkerDeploymentCurrentVersion({
			namespace: t.namespace,
			deploymentName: name,
			buildId,
			conflictToken: d.conflictToken,
			identity,
		});
	} catch (e) {
		const msg = (e as Error).message ?? String(e);
		if (/missing active task queues/i.test(msg))
			throw new DeployError(
				`build id ${buildId}: its workers do not poll every task queue the current build ${d.current} serves (${msg}); nothing changed`,
			);
		if (/conflict token/i.test(msg))
			throw new DeployError(
				`worker deployment '${name}' changed while setting the current build; look at \`secsvc deploy status\` and retry`,
			);
		throw e;
	}
	return { previous: d.current, current: buildId, changed: true };
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));

/** Plain-text rendering of `deploymentStatus` (the `secsvc deploy status` output). */
export function formatStatus(s: DeploymentStatus, only?: 'retire'): string {
	const lines = [
		`worker deployment ${s.deployment} (namespace ${s.namespace})`,
		`  current: ${s.current ?? 'none'}   ramping: ${s.ramping ? `${s.ramping} (${s.rampingPercent}%)` : 'none'}`,
		'',
		`  ${pad('BUILD', 18)}${pad('STATUS', 10)}${pad('POLLERS', 9)}${pad('RUNNING', 9)}${pad('PINNED', 8)}RETIRABLE`,
	];
	for (const v of s.versions) {
		const status =
			v.status === 'draining' || v.status === 'drained' || !v.drainage ? v.status : `${v.status}/${v.drainage}`;
		lines.push(
			`  ${pad(v.buildId, 18)}${pad(status, 10)}${pad(String(v.pollers), 9)}${pad(String(v.running), 9)}${pad(String(v.pinnedRunning), 8)}${v.retirable ? 'yes' : 'no'} — ${v.reason}`,
		);
	}
	if (only === 'retire') return lines.join('\n');
	lines.push('', `  running runbooks (attackResponse): ${s.runbooks.length}`);
	for (const r of s.runbooks)
		lines.push(
			`    ${pad(r.workflowId, 32)} build ${r.buildId ?? '(no task completed yet)'}  ${r.behavior ?? ''}  started ${r.startedAt ?? '?'}`,
		);
	return lines.join('\n');
}
