import { hostname } from 'node:os';
import type { temporal } from '@temporalio/proto';
import { WORKFLOW_TYPE } from '../../../api/runbook/contract.ts';
import {
	DeployError,
	deploymentNameOf,
	describeDeployment,
	iso,
	ms,
	versionPollers,
	versionString,
	versionTaskQueues,
	type Conn,
	type DeploymentView,
	type Svc,
	type TemporalCfg,
	type VersionStatus,
} from './deploy.mts';

/** The operator's side of Worker Deployment Versioning (deploy.mts): `secsvc deploy status | set-current | retire-check`. */

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
export async function deploymentStatus(c: Conn, t: TemporalCfg): Promise<DeploymentStatus> {
	const namespace = t.namespace;
	const name = deploymentNameOf(t);
	const svc = c.workflowService;
	const d = await describeDeployment(c, namespace, name);
	if (!d)
		throw new DeployError(
			`worker deployment '${name}' not found in namespace ${namespace}: no versioned worker has polled under this name yet`,
		);
	const versions: VersionReport[] = [];
	for (const v of d.versions) {
		const vs = q(versionString(name, v.buildId));
		const taskQueues = await versionTaskQueues(c, namespace, name, v.buildId);
		const pollers = (await versionPollers(c, namespace, name, v.buildId, taskQueues)).reduce(
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
	c: Conn,
	t: TemporalCfg,
	buildId: string,
	identity = `secsvc-cli@${hostname()}`,
): Promise<{ previous?: string; current: string; changed: boolean }> {
	const name = deploymentNameOf(t);
	if (!/^[A-Za-z0-9_.-]{1,255}$/.test(buildId))
		throw new DeployError(`build id: must be 1–255 letters, digits, '.', '-' or '_' (got ${JSON.stringify(buildId)})`);
	const d = await describeDeployment(c, t.namespace, name);
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
	const pollers = await versionPollers(c, t.namespace, name, buildId);
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
		await c.workflowService.setWorkerDeploymentCurrentVersion({
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
