import type { IDataObject, IPollFunctions } from 'n8n-workflow';
import { withinHoldDown } from '../../api/runbook/holdDownRules';
import { covers, parseAll, parseEntry } from '../../api/ranges';
import { temporalTransport } from '../SecurityServiceRunbook/transport';
import { findLastRunbook, type TemporalHttp } from '../SecurityServiceRunbook/transport/lastRun';
import { TEMPORAL_CREDENTIAL } from '../SecurityService/transport/clusterToken';

/**
 * An Attack Started item's `runbook_return` (issue 39 item 5): is this attack a RETURN — the site's last runbook
 * reverted within its plan's hold-down, so a runbook started now re-arms from it (workflows/attackResponse/rearm.mts,
 * the same rule) — which runbook that was, and which of the event's top sources its last waves already blocked.
 * Read from Temporal with the trigger's Temporal API credential (docs/spec-decisions.md "The trigger's return flag");
 * without one, or when Temporal cannot be read, the item says so (`checked: false`) and is emitted all the same.
 */
export const CHECK_RETURNS = 'checkReturns';

/** Per poll: the item's `runbook_return` for a site and its top sources (Check Runbook Returns off: says so). */
export async function returnChecker(
	ctx: IPollFunctions,
): Promise<(siteId: string, sources: readonly string[]) => Promise<IDataObject>> {
	if (!ctx.getNodeParameter(CHECK_RETURNS, false))
		return async () => ({ checked: false, why: 'Check Runbook Returns is off' });
	const cred = await ctx.getCredentials(TEMPORAL_CREDENTIAL).catch(() => undefined);
	if (!cred)
		return async () => ({
			checked: false,
			why: 'Check Runbook Returns needs a Temporal API credential on the trigger',
		});
	const t = temporalTransport(ctx, cred);
	if (t.tlsProblem) {
		const why = `Temporal API credential › ${t.tlsProblem}`;
		return async () => ({ checked: false, why });
	}
	const http: TemporalHttp = { ...t, call: (method, url, body, qs) => t.call(0, method, url, body, qs) };
	return (siteId, sources) => runbookReturn(http, siteId, sources, Date.now());
}

export async function runbookReturn(
	t: TemporalHttp,
	siteId: string,
	sources: readonly string[],
	nowMs: number,
): Promise<IDataObject> {
	let last;
	try {
		last = await findLastRunbook(t, siteId);
	} catch (error) {
		return { checked: false, why: `the last runbook could not be read: ${(error as Error).message}` };
	}
	if (!last) return { checked: true, is_return: false, last_runbook: null, overlap: [] };
	const entries = Object.values(last.entries).flat();
	const blocked = parseAll(entries).ranges;
	const overlap = sources.filter((s) => {
		const r = parseEntry(s);
		return r !== undefined && blocked.some((b) => covers(b, r));
	});
	const within = withinHoldDown(last.revertedAt, nowMs, last.holdDownSeconds);
	return {
		checked: true,
		is_return: within,
		hold_down_seconds: last.holdDownSeconds,
		seconds_since_revert: Math.max(0, Math.round((nowMs - Date.parse(last.revertedAt)) / 1000)),
		overlap,
		overlap_share: sources.length ? Math.round((overlap.length / sources.length) * 100) / 100 : 0,
		last_runbook: {
			workflow_id: last.workflowId,
			run_id: last.runId,
			outcome: last.outcome,
			reverted_at: last.revertedAt,
			returns: last.returns,
			blocked_entries: entries,
		},
	};
}
