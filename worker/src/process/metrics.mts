/**
 * Prometheus metrics of the worker: the Temporal SDK's Runtime telemetry (its Prometheus exporter serves `/metrics`)
 * carries the SDK's own metrics (workflow task latency, activity failures, sticky cache, pollers…) and ours,
 * recorded with the SDK's metric meters — here the activity context's `metricMeter` for API calls (worker side),
 * in workflows/attackResponse/observe.mts the workflow `metricMeter` for runbook times, changes and phases.
 * Names and meanings: docs/worker/metrics.md. Label values never carry a secret, a token or an IP address:
 * operation ids come from the catalog, outcomes are API codes / HTTP statuses / failure kinds.
 */
import { Context } from '@temporalio/activity';
import type { MetricMeter, MetricTags } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import type { ClientEvent } from '../../../api/client.ts';

/**
 * Names of our metrics (the SDK's own carry the prefix `temporal_`, ours `secsvc_`; counters get `_total`). The
 * workflow-side ones are in workflows/attackResponse/observe.mts (WF_METRIC).
 */
export const METRIC = {
	apiRequests: 'secsvc_api_requests',
	apiLatency: 'secsvc_api_request_latency',
	tokenRenewals: 'secsvc_api_token_renewals',
	retries: 'secsvc_api_retries',
	rateLimitWaits: 'secsvc_api_rate_limit_waits',
	rateLimitWaitTime: 'secsvc_api_rate_limit_wait_time',
	budgetGranted: 'secsvc_api_budget_granted',
	budgetWait: 'secsvc_api_budget_wait',
	budgetDeferred: 'secsvc_api_budget_deferred',
	budgetShare: 'secsvc_api_budget_share_rps',
	budgetWorkers: 'secsvc_api_budget_workers',
	refusals: 'secsvc_api_refusals',
	admissionLimit: 'secsvc_worker_admission_limit',
	admissionHolding: 'secsvc_worker_admission_holding',
} as const;

/** Prefix of the SDK's own metrics (its default; the SDK does not put it before metrics made with a meter). */
export const METRIC_PREFIX = 'temporal_';

const MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000];
/** A token wait is 0 ms when the held token serves (first bucket), else an Update's round trip: finer around 1 s. */
const TOKEN_WAIT_MS = [1, 5, 10, 25, 50, 100, 250, 500, 750, 1000, 1500, 2000, 2500, 5000, 10_000, 30_000];
const SECONDS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200];
/** Histogram buckets of ours (the exporter's default, 50…10000, fits neither milliseconds on loopback nor seconds). */
export const BUCKETS: Record<string, number[]> = {
	secsvc_api_request_latency: MS,
	secsvc_tenant_token_wait: TOKEN_WAIT_MS,
	secsvc_api_rate_limit_wait_time: MS,
	secsvc_api_budget_wait: MS,
	secsvc_runbook_time_to_detect: SECONDS,
	secsvc_runbook_time_to_mitigate: SECONDS,
	secsvc_runbook_time_to_revert: SECONDS,
};

let installedAt: string | undefined;

/**
 * Installs the SDK Runtime with the Prometheus exporter on `address` (host:port). Must run before anything creates
 * the Runtime (a NativeConnection or a Worker): it is process-wide and cannot change afterwards.
 */
export function installMetrics(address: string): void {
	if (installedAt === address) return;
	if (installedAt) throw new Error(`metrics: already served on ${installedAt}; one address per process`);
	if (!/^[^\s:]+:\d{1,5}$/.test(address))
		throw new Error(`metrics.address (SECSVC_METRICS_ADDRESS): must be host:port (got ${JSON.stringify(address)})`);
	try {
		Runtime.install({
			telemetryOptions: {
				metrics: {
					metricPrefix: METRIC_PREFIX,
					prometheus: { bindAddress: address, countersTotalSuffix: true, histogramBucketOverrides: BUCKETS },
				},
			},
		});
	} catch (e) {
		throw new Error(
			`metrics: cannot install the Temporal runtime with the Prometheus exporter on ${address} (${(e as Error).message}); it must be installed before any connection or worker is created`,
		);
	}
	installedAt = address;
}

/** The activity's metric meter when called inside an activity, else the runtime's (calls outside activities). */
function meter(): MetricMeter {
	try {
		return Context.current().metricMeter;
	} catch {
		return Runtime.instance().metricMeter;
	}
}

const outcomeOf = (e: Extract<ClientEvent, { type: 'response' }>) =>
	e.code !== undefined ? String(e.code) : e.status >= 200 && e.status < 300 ? 'decode' : `http_${e.status}`;

/** The client's retry reason as a bounded label: rate_limited, not_sent, timeout, network, http, decode, result. */
const retryReason = (r: string) =>
	r.startsWith('rate limited') ? 'rate_limited' : r.startsWith('not sent') ? 'not_sent' : r.split(' ')[0];

/**
 * The API client's event listener (api/client.ts onEvent) recording requests, latency, token renewals, retries
 * and rate-limit waits. Events carry no secrets; only the operation id and outcome become labels.
 */
const requests = (m: ReturnType<typeof meter>) =>
	m.createCounter(
		METRIC.apiRequests,
		'1',
		'API requests answered or failed, by operation and outcome (API code, http_<status>, timeout, network)',
	);

export function apiMetricsListener(): (e: ClientEvent) => void {
	return (e) => {
		const m = meter();
		switch (e.type) {
			case 'response': {
				const tags: MetricTags = { operation: e.opId, outcome: outcomeOf(e) };
				requests(m).add(1, tags);
				m.createHistogram(METRIC.apiLatency, 'int', 'ms', 'API request round trip (ms), by operation').record(
					Math.max(0, Math.round(e.ms)),
					{ operation: e.opId },
				);
				return;
			}
			case 'failure':
				requests(m).add(1, { operation: e.opId, outcome: e.kind });
				return;
			case 'token':
				m.createCounter(
					METRIC.tokenRenewals,
					'1',
					'access token requests (one per renewal), by reason: missing, expired, refused_code, refused_message, refused_unverified',
				).add(1, { reason: e.reason });
				return;
			case 'retry': {
				const rateLimited = e.reason.startsWith('rate limited');
				m.createCounter(METRIC.retries, '1', 'API requests repeated by the client, by operation and reason').add(1, {
					operation: e.opId,
					reason: retryReason(e.reason),
				});
				if (rateLimited) {
					m.createCounter(METRIC.rateLimitWaits, '1', 'waits after a rate-limited answer, by operation').add(1, {
						operation: e.opId,
					});
					m.createHistogram(
						METRIC.rateLimitWaitTime,
						'int',
						'ms',
						'time waited after a rate-limited answer (ms)',
					).record(Math.max(0, Math.round(e.delayMs)), { operation: e.opId });
				}
				return;
			}
			case 'budget':
				// budget: 'app' or 'tenant:<customer id>' (an id of the provider, no secret)
				if (e.granted) {
					m.createCounter(
						METRIC.budgetGranted,
						'1',
						'requests sent within the request budget, by class and budget (budget in use per class)',
					).add(1, { class: e.cls, budget: e.budget });
					m.createHistogram(
						METRIC.budgetWait,
						'int',
						'ms',
						'wait for a turn in the request budget (ms), by class and budget',
					).record(Math.max(0, Math.round(e.waitMs)), { class: e.cls, budget: e.budget });
				} else
					m.createCounter(
						METRIC.budgetDeferred,
						'1',
						'calls that gave up their turn at their deadline (nothing sent; the fleet watch stretches), by class',
					).add(1, { class: e.cls, budget: e.budget });
				return;
			case 'refused':
				m.createCounter(
					METRIC.refusals,
					'1',
					'rate-limit refusals received (HTTP 429 or a rate-limit code), by budget, outcome and whether a retry hint came',
				).add(1, {
					budget: e.budget,
					outcome: e.code !== undefined ? String(e.code) : `http_${e.status}`,
					hint: e.retryAfterMs !== undefined ? 'yes' : 'no',
				});
				return;
			default:
				return;
		}
	};
}
