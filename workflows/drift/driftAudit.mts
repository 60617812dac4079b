import { checkInWorker } from '../input/checkInWorker.mts';
import { failOn, problems } from '../input/inputChecks.mts';
import { driftRules } from '../input/inputRules.mts';
import type { WriteResult } from '../../api/runbook/contract.ts';
import { detectionDrifts, domainPortDrifts, type Found } from './checks.mts';
import { enforceFixes, leaveHeldAlone } from './enforce.mts';

/**
 * Drift audit: compares live policy with a desired-state document (the CLI reads it from a file and passes it
 * as input; it holds no secrets) and reports every difference. With `enforce`, writes the desired values.
 *
 * One owner per setting (workflows/README.md): a setting another playbook holds (an attack response mitigating the
 * site, an expiring block) is not drift — it is reported under `held` (by whom, since when) and never written. An
 * enforce takes a short lease on what it writes, so a runbook that starts meanwhile waits for the write to end
 * and snapshots after it.
 *
 * Desired state:
 * { site_id, customer_id?, network_id?='0', host_id?='0',
 *   detection?: { model?: 0|1, items?: { <item>: { is_enabled?, low_pps?, high_pps?, low_bps?, high_bps? } } },
 *   domain_ports?: { <dp>: { ipAuth?: {action, enable, mode, action_<action>?}, switches?: { <name>: 0|1 },
 *                             blacklistIncludes?: string[], whitelistIncludes?: string[],
 *                             xForwardedFor?: { mode, name? } } } }
 */

export interface DesiredState {
	site_id: string;
	customer_id?: string;
	network_id?: string;
	host_id?: string;
	detection?: { model?: number; items?: Record<string, Record<string, string | number>> };
	domain_ports?: Record<
		string,
		{
			ipAuth?: Record<string, unknown>;
			switches?: Record<string, number>;
			blacklistIncludes?: string[];
			whitelistIncludes?: string[];
			xForwardedFor?: { mode: string; name?: string };
		}
	>;
}

export interface Drift {
	setting: string;
	target: Record<string, string>;
	desired: unknown;
	live: unknown;
	enforced?: 'fixed' | 'failed';
	error?: string;
	/** What the enforce's write changed (WriteResult: the value it replaced, or already at the desired value, not ours). */
	written?: WriteResult;
	/** "already present, not ours: …" when the enforce found the desired value already there (nothing sent). */
	note?: string;
}

/** A setting that differs from the desired state but is held by another playbook: left alone. */
export interface HeldSetting extends Drift {
	held: { by: string; since: string; until: string; reason: string };
}

export interface DriftAuditResult {
	site_id: string;
	checkedAt: string;
	checked: number;
	drifts: Drift[];
	/** Differences in settings another playbook holds (e.g. "held by attack-response-<site>"): not drift, not written. */
	held: HeldSetting[];
	enforce: boolean;
}

export async function driftAudit(input: { desired: DesiredState; enforce?: boolean }): Promise<DriftAuditResult> {
	// The shape here (no commands); the whole desired state by the CLI's schema (checkDesiredState) in the worker.
	failOn('desired state', problems(input, driftRules, { maxString: 1024, maxList: 1000, maxDepth: 8 }));
	await checkInWorker('desired', input.desired);
	const d = input.desired;
	const enforce = Boolean(input.enforce);
	const found: Found = { drifts: [], fixes: [], checked: 0 };
	if (d.detection) await detectionDrifts(d, d.detection, found);
	for (const [dp, want] of Object.entries(d.domain_ports ?? {})) await domainPortDrifts(d.site_id, dp, want, found);
	const { drifts, fixes, checked } = found;
	const held = await leaveHeldAlone(d.site_id, drifts, fixes);
	if (enforce && fixes.length) await enforceFixes(d.site_id, fixes, drifts, held);
	return { site_id: d.site_id, checkedAt: new Date(Date.now()).toISOString(), checked, drifts, held, enforce };
}
