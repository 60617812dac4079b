import type { Worker } from '@temporalio/worker';
import { AdmissionSlots, admissionTuner } from './admission.mts';
import { METRIC } from './metrics.mts';
import { metricMeter } from './runbookMetrics.mts';

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

/** The SDK's sizing options: admission control's tuner (admission.mts) replaces the maxConcurrent* options. */
export function workerSizing() {
	const { admitWorkflows, ...tuning } = workerTuning();
	const { maxConcurrentActivityTaskExecutions, maxConcurrentLocalActivityExecutions, ...rest } = tuning;
	const { maxConcurrentWorkflowTaskExecutions, ...cacheAndContext } = rest;
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
	return { admitWorkflows, admission, sizing, tuning };
}

/**
 * /metrics: the cap (0 = off) and whether it holds new workflows back now (1) — with the task queue's backlog, what
 * tells an on-call engineer that runbooks wait for a worker with room.
 */
export function admissionGauges(admitWorkflows: number, admission: AdmissionSlots | undefined, worker: Worker): void {
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
}
