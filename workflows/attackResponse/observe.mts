import {
	CancellationScope,
	metricMeter,
	proxyLocalActivities,
	proxySinks,
	upsertSearchAttributes,
	type Sinks,
} from '@temporalio/workflow';
import type { AttackResponseResult, Change, EventTraffic, Phase, TrafficSample } from '../../api/runbook/contract.ts';
import { SA } from './searchAttributes.mts';

/**
 * What the attack response shows operators while it runs, in one place (deterministic; workflow code):
 *  - search attributes (workflows/attackResponse/searchAttributes.mts): site, dry run, phase, event id, outcome — upserted on change;
 *  - metrics through the SDK's workflow `metricMeter` (not emitted while replaying): time to detect / mitigate /
 *    revert histograms, changes applied / restored / conflicts / re-applied by kind, runbooks finished by outcome;
 *  - runbooks by phase: a gauge kept by the worker (worker/src/process/runbookMetrics.mts) from phase transitions sent
 *    through a sink — a gauge of "how many runbooks are in phase X" needs one place that sees all of them;
 *  - the runbook's own `is_under_attack` samples, kept for the attack report's traffic chart.
 * Names and meanings of the metrics: docs/worker/metrics.md. Labels: kind, outcome, phase — never an IP,
 * a site's address, a token or a secret.
 */

export interface RunbookSinks extends Sinks {
	secsvcRunbooks: {
		/** This run entered `phase` ('done' removes it). */
		phase(phase: Phase): void;
	};
}

export const WF_METRIC = {
	timeToDetect: 'secsvc_runbook_time_to_detect',
	timeToMitigate: 'secsvc_runbook_time_to_mitigate',
	timeToRevert: 'secsvc_runbook_time_to_revert',
	applied: 'secsvc_changes_applied',
	restored: 'secsvc_changes_restored',
	conflicts: 'secsvc_change_conflicts',
	reapplied: 'secsvc_changes_reapplied',
	finished: 'secsvc_runbooks_finished',
	inPhase: 'secsvc_runbooks_in_phase',
} as const;

/** At most this many samples are kept (a day of 1-minute polls); older ones are thinned to every other one. */
const MAX_SAMPLES = 1440;

export interface Observer {
	phase(p: Phase): void;
	event(id: string | undefined): void;
	/** One `is_under_attack` answer. */
	sample(at: number, status: number, bps: number | undefined): void;
	applied(c: Change): void;
	/** A change written again after someone else undid it during the attack. */
	reapplied(c: Change): void;
	/** After the revert of `c` (restored, conflict, unchanged, revert-failed). */
	reverted(c: Change): void;
	/** `c` was found changed by someone else (during the wait or at the revert); counted once per change. */
	conflict(c: Change): void;
	finish(r: AttackResponseResult): void;
	samples(): TrafficSample[];
	/** This run continues as new: the worker's phase gauge stops counting it (the next run counts itself). */
	handOff(): void;
}

/**
 * `carried`: what a run continued as new brings along (workflows/attackResponse/continue.mts): the samples so far
 * and the changes already counted as conflicts (a metric is never counted twice across runs).
 */
const count = (name: string, description: string, tags: Record<string, string>) =>
	metricMeter.createCounter(name, '1', description).add(1, tags);
const seconds = (name: string, description: string, v: number | undefined) => {
	if (v !== undefined && Number.isFinite(v) && v >= 0)
		metricMeter.createHistogram(name, 'float', 's', description).record(v);
};

/** A traffic sample; past MAX_SAMPLES every other one is dropped (the series keeps its span at half the density). */
function addSample(samples: TrafficSample[], at: number, status: number, bps: number | undefined): void {
	if (samples.length >= MAX_SAMPLES) samples.splice(0, samples.length, ...samples.filter((_, i) => i % 2 === 0));
	samples.push({
		at: new Date(at).toISOString(),
		underAttack: status === 1,
		...(bps !== undefined && Number.isFinite(bps) ? { bps } : {}),
	});
}

/** The end of a runbook: its times (not for a dry run), its outcome counted and searchable. */
function finished(r: Parameters<Observer['finish']>[0], dryRun: boolean): void {
	if (!dryRun) {
		seconds(WF_METRIC.timeToDetect, 'event start → runbook start (s)', r.timeToDetectSeconds);
		seconds(
			WF_METRIC.timeToMitigate,
			'event start (or runbook start) → last mitigation write (s)',
			r.timeToMitigateSeconds,
		);
		seconds(WF_METRIC.timeToRevert, 'attack no longer reported → revert done (s)', r.timeToRevertSeconds);
	}
	count(WF_METRIC.finished, 'runbooks finished, by outcome', { outcome: r.outcome });
	upsertSearchAttributes([{ key: SA.outcome, value: r.outcome }]);
}

export function observer(
	site: string,
	dryRun: boolean,
	carried: { samples?: TrafficSample[]; conflicts?: string[] } = {},
): Observer {
	const sinks = proxySinks<RunbookSinks>();
	const samples: TrafficSample[] = [...(carried.samples ?? [])].slice(-MAX_SAMPLES);
	let current: Phase | undefined;
	let eventId: string | undefined;
	upsertSearchAttributes([
		{ key: SA.site, value: site },
		{ key: SA.dryRun, value: dryRun },
	]);
	const conflicted = new Set<string>(carried.conflicts ?? []);
	const conflict = (c: Change) => {
		if (conflicted.has(c.id)) return;
		conflicted.add(c.id);
		count(WF_METRIC.conflicts, 'settings changed by someone else during the attack and kept (not restored), by kind', {
			kind: c.kind,
		});
	};
	const phase = (p: Phase) => {
		if (p === current) return;
		current = p;
		upsertSearchAttributes([{ key: SA.phase, value: p }]);
		sinks.secsvcRunbooks.phase(p);
	};
	return {
		phase,
		event(id) {
			if (!id || id === eventId) return;
			eventId = id;
			upsertSearchAttributes([{ key: SA.eventId, value: id }]);
		},
		sample: (at, status, bps) => addSample(samples, at, status, bps),
		applied(c) {
			count(WF_METRIC.applied, 'settings changed by runbooks, by kind', { kind: c.kind });
		},
		reapplied(c) {
			count(WF_METRIC.reapplied, 'settings written again after someone undid them during the attack, by kind', {
				kind: c.kind,
			});
		},
		reverted(c) {
			if (c.status === 'restored')
				count(WF_METRIC.restored, 'settings restored to the snapshot by the revert, by kind', { kind: c.kind });
			else if (c.status === 'conflict') conflict(c);
		},
		conflict,
		finish: (r) => finished(r, dryRun),
		samples: () => samples,
		handOff() {
			current = undefined;
			sinks.secsvcRunbooks.phase('done');
		},
	};
}

type Detail = (p: Record<string, unknown>) => Promise<{ traffic?: EventTraffic } & EventTraffic>;
const reportReads = proxyLocalActivities<Record<string, Detail>>({
	startToCloseTimeout: '10s',
	retry: { maximumAttempts: 2, initialInterval: '500ms' },
});

/**
 * The event's `traffic` module (attack and clean bps series) for the attack report, read once after the revert.
 * Best effort: without an event, or when the read fails, the report shows the runbook's own samples only.
 */
export async function eventTraffic(eventId: string | undefined): Promise<EventTraffic | undefined> {
	if (!eventId) return undefined;
	try {
		return await CancellationScope.nonCancellable(async () => {
			const d = await reportReads['dashboard.eventDetail']({ event_id: eventId, module: 'traffic' });
			const t = d?.traffic ?? d; // the module's content may come wrapped or bare (like threat_map)
			return t?.bps ? { bps: t.bps } : undefined;
		});
	} catch {
		return undefined;
	}
}
