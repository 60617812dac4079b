/**
 * Worker side of the runbooks' observability: the `secsvcRunbooks` sink (workflows/attackResponse/observe.mts) keeps, per run,
 * the phase it is in and sets the gauge `secsvc_runbooks_in_phase{phase}`, and the search attributes are checked
 * (registered when missing) before the worker polls.
 *
 * The sink is also called during replay: a worker that restarts (or evicts a runbook from its cache) learns every
 * running runbook's current phase again from its history, so the gauge counts runs, never transitions, and cannot
 * go negative. A runbook whose next task runs on another worker stays counted here until it would move on here
 * (one gauge per worker; sum them across workers).
 */
import type { MetricGauge, MetricMeter } from '@temporalio/common';
import { Runtime, type InjectedSinks, type NativeConnection } from '@temporalio/worker';
import { PHASES as ALL_PHASES, type Phase } from '../../../api/runbook/contract.ts';
import type { RunbookSinks } from '../../../workflows/attackResponse/observe.mts';
import { WF_METRIC } from '../../../workflows/attackResponse/observe.mts';
import { SEARCH_ATTRIBUTES } from '../../../workflows/attackResponse/searchAttributes.mts';

/** The runbooks-by-phase gauge's phases: a finished runbook is not counted. */
export const PHASES: Phase[] = ALL_PHASES.filter((p) => p !== 'done');

export function runbookSinks(
	meter: MetricMeter | undefined = metricsOn ? Runtime.instance().metricMeter : undefined,
): InjectedSinks<RunbookSinks> {
	const byRun = new Map<string, Phase>();
	const counts = new Map<Phase, number>(PHASES.map((p) => [p, 0]));
	const gauge: MetricGauge | undefined = meter?.createGauge(
		WF_METRIC.inPhase,
		'int',
		'1',
		'runbooks in each phase now (this worker)',
	);
	for (const p of PHASES) gauge?.set(0, { phase: p });
	const move = (p: Phase, d: number) => {
		if (!counts.has(p)) return;
		const n = Math.max(0, (counts.get(p) ?? 0) + d);
		counts.set(p, n);
		gauge?.set(n, { phase: p });
	};
	return {
		secsvcRunbooks: {
			phase: {
				fn(info, phase) {
					const prev = byRun.get(info.runId);
					if (prev === phase) return;
					if (prev) move(prev, -1);
					if (phase === 'done') byRun.delete(info.runId);
					else {
						byRun.set(info.runId, phase);
						move(phase, +1);
					}
				},
				callDuringReplay: true,
			},
		},
	};
}

let metricsOn = false;
/** Called once the Runtime with the Prometheus exporter is installed (worker.mts). */
export const markMetricsOn = () => void (metricsOn = true);
/** The SDK Runtime's meter when /metrics is served, else undefined. */
export const metricMeter = (): MetricMeter | undefined => (metricsOn ? Runtime.instance().metricMeter : undefined);

/**
 * The runbooks' search attributes must exist in the namespace, or every runbook's first workflow task fails.
 * The project's dev servers register them at start; here the worker checks and adds missing ones (allowed on a dev
 * server and a self-hosted cluster; on Temporal Cloud add them in the namespace settings) and fails clearly otherwise.
 */
export async function ensureSearchAttributes(connection: NativeConnection, namespace: string): Promise<string[]> {
	const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
	const have = new Set(Object.keys(customAttributes ?? {}));
	const missing = Object.keys(SEARCH_ATTRIBUTES).filter((k) => !have.has(k));
	if (!missing.length) return [];
	const TYPE = { Keyword: 2, Bool: 5 } as const; // temporal.api.enums.v1.IndexedValueType
	try {
		await connection.operatorService.addSearchAttributes({
			namespace,
			searchAttributes: Object.fromEntries(missing.map((k) => [k, TYPE[SEARCH_ATTRIBUTES[k]]])),
		});
	} catch (e) {
		throw new Error(
			`search attributes ${missing.join(', ')} are not registered in namespace ${namespace} and could not be added (${(e as Error).message}); ` +
				`register them: ${missing.map((k) => `temporal operator search-attribute create --namespace ${namespace} --name ${k} --type ${SEARCH_ATTRIBUTES[k]}`).join(' && ')}`,
		);
	}
	return missing;
}
