// The worker's request budget (docs/rate-budget.md): api.rateLimit as one RateBudget per process (api/rateBudget.ts),
// its share of the cluster and the cluster's pauses (service/budgetShare.mts), the class of each call from its call
// site (service/priority.mts), and the gauges of /metrics that are not per request (share, live workers).
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client as TemporalClient } from '@temporalio/client';
import type { ClientOptions } from '../../../api/client.ts';
import { RateBudget } from '../../../api/rateBudget.ts';
import { startClusterShare, type ClusterShare } from '../service/budgetShare.mts';
import { activityPriority } from '../service/priority.mts';
import type { WorkerConfig } from './config.mts';
import { METRIC } from './metrics.mts';
import { metricMeter } from './runbookMetrics.mts';

export interface WorkerBudget {
	budget: RateBudget;
	/** What every API client of the process gets (the app's, each tenant's with its `budgetKey`). */
	clientOptions: Pick<ClientOptions, 'rateBudget' | 'priorityOf' | 'onRetryHint'>;
	/** Follows the cluster (worker count, pauses) until stopped. */
	start(temporal: () => TemporalClient, o: { namespace: string; taskQueue: string; identity?: string }): ClusterShare;
}

export function budgetFromConfig(cfg: WorkerConfig): WorkerBudget | undefined {
	const rl = cfg.api.rateLimit;
	if (!rl) return undefined;
	const budget = new RateBudget({
		app: { rps: rl.rps, burst: rl.burst },
		...(rl.tenant ? { tenant: rl.tenant } : {}),
		sleep: (ms) => delay(ms),
	});
	let share: ClusterShare | undefined;
	return {
		budget,
		clientOptions: { rateBudget: budget, priorityOf: activityPriority, onRetryHint: (ms) => share?.retryHint(ms) },
		start(temporal, o) {
			const meter = metricMeter();
			const shareGauge = meter?.createGauge(
				METRIC.budgetShare,
				'float',
				'1/s',
				"this worker's share of api.rateLimit (requests per second)",
			);
			const workersGauge = meter?.createGauge(
				METRIC.budgetWorkers,
				'int',
				'1',
				'worker processes the budget is shared by (0 while unknown)',
			);
			const identity = o.identity ?? `${process.pid}@${hostname()}`;
			share = startClusterShare(budget, temporal, {
				...o,
				identity,
				refreshMs: rl.refreshSeconds * 1000,
				unknownWorkers: rl.unknownWorkers,
				// the share follows demand at every refresh; the gauge with it
				onRefresh: () => shareGauge?.set(budget.rate, { budget: 'app' }),
				onChange: ({ workers }) => {
					shareGauge?.set(budget.rate, { budget: 'app' });
					workersGauge?.set(workers ?? 0);
					console.log(
						`secsvc worker: request budget ${rl.rps}/s shared by ${workers ?? `an unknown number of workers (assumed ${rl.unknownWorkers})`}: ${budget.rate.toFixed(2)}/s here`,
					);
				},
			});
			return share;
		},
	};
}
