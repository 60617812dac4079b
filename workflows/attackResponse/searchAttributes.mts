import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes of the runbooks (Temporal visibility): set by the attack response as it moves
 * (workflows/attackResponse/observe.mts), registered by every dev-server start of the project (scripts/temporal.sh start,
 * demo/stack.mts, test/temporal/helpers.mts createEnv) and checked by the worker at start (worker/src/process/runbookMetrics.mts).
 * `secsvc list` and the Temporal Web UI filter on them, e.g. `SecsvcPhase IN ('tightening','blacklisting','rate-limiting','waiting')`.
 */
export const SA = {
	site: defineSearchAttributeKey('SecsvcSite', SearchAttributeType.KEYWORD),
	phase: defineSearchAttributeKey('SecsvcPhase', SearchAttributeType.KEYWORD),
	outcome: defineSearchAttributeKey('SecsvcOutcome', SearchAttributeType.KEYWORD),
	eventId: defineSearchAttributeKey('SecsvcEventId', SearchAttributeType.KEYWORD),
	dryRun: defineSearchAttributeKey('SecsvcDryRun', SearchAttributeType.BOOL),
} as const;

/** Name → CLI type (`temporal server start-dev --search-attribute Name=Type`). */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Bool'> = {
	SecsvcSite: 'Keyword',
	SecsvcPhase: 'Keyword',
	SecsvcOutcome: 'Keyword',
	SecsvcEventId: 'Keyword',
	SecsvcDryRun: 'Bool',
};

/** `--search-attribute Name=Type` for each, as `temporal server start-dev` takes them. */
export const searchAttributeArgs = (): string[] =>
	Object.entries(SEARCH_ATTRIBUTES).flatMap(([k, t]) => ['--search-attribute', `${k}=${t}`]);

/** The phases in which a runbook holds changes on the service ("under mitigation"). */
export const MITIGATION_PHASES = ['tightening', 'blacklisting', 'rate-limiting', 'waiting'] as const;
