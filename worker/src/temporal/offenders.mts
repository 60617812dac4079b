import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { escalate, REPEAT_DEFAULTS, type RepeatRule } from '../../../api/escalation.ts';
import { normalizeEntry, type BlockRequest } from '../../../api/blockRules.ts';
import { WORKFLOW_TYPE } from '../../../api/runbook/contract.ts';
import {
	offendersQuery,
	offendUpdate,
	type offenders,
	type OffenderRecord,
} from '../../../workflows/blocks/offenders.mts';

/** SECSVC_REPEAT_RULE: `off`, or JSON `{ "factor": 2, "maxMultiplier": 4, "quietDays": 7 }` (absent fields: defaults). */
export function parseRepeatRule(text: string | undefined): RepeatRule {
	if (text === undefined || text.trim() === '') return { ...REPEAT_DEFAULTS };
	if (text.trim() === 'off') return { ...REPEAT_DEFAULTS, factor: 1, maxMultiplier: 1 };
	let o: Partial<RepeatRule>;
	try {
		o = JSON.parse(text) as Partial<RepeatRule>;
	} catch {
		throw new Error('SECSVC_REPEAT_RULE: must be off or a JSON object { factor, maxMultiplier, quietDays }');
	}
	const r = { ...REPEAT_DEFAULTS, ...o };
	const bad = (f: string, rule: string) => new Error(`SECSVC_REPEAT_RULE.${f}: ${rule}`);
	if (!(typeof r.factor === 'number' && r.factor >= 1 && r.factor <= 10))
		throw bad('factor', 'must be a number from 1 to 10');
	if (!(typeof r.maxMultiplier === 'number' && r.maxMultiplier >= 1 && r.maxMultiplier <= 100))
		throw bad('maxMultiplier', 'must be a number from 1 to 100');
	if (!(typeof r.quietDays === 'number' && r.quietDays > 0 && r.quietDays <= 365))
		throw bad('quietDays', 'must be a number of days from more than 0 to 365');
	return { factor: r.factor, maxMultiplier: r.maxMultiplier, quietDays: r.quietDays };
}

/**
 * Repeat offenders are blocked longer (issue 39 item 3; api/escalation.ts): before expiring blocks are added, their
 * ranges are recorded in the customer's history (`offenders-<key>`, workflows/blocks/offenders.mts) and each block's
 * duration escalates with its earlier count; its reason says why (`block list`, the Runbook node's List Blocks, the
 * report). The rule: SECSVC_REPEAT_RULE (`off`, or JSON; default ×2 per earlier block, cap ×4, halves after 7 quiet
 * days). Key: the customer id when known (the runbook's plan, `block add --customer`), else `site-<site>`.
 */
export const offendersIdFor = (key: string) => `offenders-${key}`;
export const offendersKey = (site: string, customer?: string) => (customer ? customer : `site-${site}`);
export const repeatRule = (env: NodeJS.ProcessEnv = process.env): RepeatRule => parseRepeatRule(env.SECSVC_REPEAT_RULE);

const REASON_MAX = 500;

/** The requests with escalated durations and reasons (entries that do not parse pass unchanged: the add names them). */
export async function escalateBlocks(
	client: Client,
	taskQueue: string,
	key: string,
	reqs: BlockRequest[],
	opts: { maxPrefix?: number; dedupe?: string; rule?: RepeatRule } = {},
): Promise<BlockRequest[]> {
	const rule = opts.rule ?? repeatRule();
	if (rule.factor === 1 || rule.maxMultiplier === 1) return reqs;
	const ranges = reqs.map((r) => {
		try {
			return normalizeEntry(r.entry, opts.maxPrefix ?? null);
		} catch {
			return undefined;
		}
	});
	const known = ranges.filter((r): r is string => r !== undefined);
	if (!known.length) return reqs;
	const answers = await client.workflow.executeUpdateWithStart(offendUpdate, {
		args: [{ ranges: known, rule, ...(opts.dedupe ? { dedupe: opts.dedupe } : {}) }],
		startWorkflowOperation: new WithStartWorkflowOperation<typeof offenders>(WORKFLOW_TYPE.offenders, {
			workflowId: offendersIdFor(key),
			taskQueue,
			args: [{ key }],
			workflowIdConflictPolicy: 'USE_EXISTING',
		}),
	});
	let i = 0;
	return reqs.map((r, k) => {
		if (ranges[k] === undefined) return r;
		const a = answers[i++];
		const e = escalate(r.seconds, a.prior, rule, a.lastAt);
		if (e.multiplier === 1) return r;
		return { ...r, seconds: e.seconds, reason: `${r.reason} — ${e.why}`.slice(0, REASON_MAX) };
	});
}

/** The history (range → count, last), least recently blocked first; empty when there is none yet. */
export async function offenderHistory(client: Client, key: string): Promise<[string, OffenderRecord][]> {
	try {
		return await client.workflow.getHandle(offendersIdFor(key)).query(offendersQuery);
	} catch {
		return [];
	}
}
