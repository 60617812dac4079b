import {
	allHandlersFinished,
	ApplicationFailure,
	condition,
	continueAsNew,
	defineQuery,
	defineUpdate,
	setHandler,
	workflowInfo,
} from '@temporalio/workflow';
import { decayed, MAX_OFFENDERS, type RepeatRule } from '../../api/escalation.ts';
import { parseEntry, formatRange } from '../pure/ranges.mts';

/**
 * A customer's history of blocked sources (issue 39 item 3), entity workflow `offenders-<key>` (key: the customer id,
 * or `site-<site>` where no customer is known): range → how often it was blocked, when last. Durable (Temporal),
 * bounded (MAX_OFFENDERS ranges, the least recently blocked go first), decaying (a count halves after each quiet
 * period of the rule). Update `offend` records blocks and answers each range's earlier count (after decay) — one call,
 * so two blocks at once never both count as first; a retried call (same `dedupe` id) answers as the first time.
 * Continues as new every 500 Updates.
 */
export interface OffenderRecord {
	n: number;
	lastMs: number;
}

export interface OffendRequest {
	ranges: string[];
	rule: RepeatRule;
	/** Id of the calling attempt's work (activity or CLI call): a retry with it records nothing twice. */
	dedupe?: string;
}

export interface OffendAnswer {
	range: string;
	prior: number;
	lastAt?: string;
}

export interface OffendersInput {
	key: string;
	carry?: { records: [string, OffenderRecord][]; recent: [string, OffendAnswer[]][] };
}

export const offendUpdate = defineUpdate<OffendAnswer[], [OffendRequest]>('offend');
export const offendersQuery = defineQuery<[string, OffenderRecord][]>('offenders');

const MAX_RANGES_PER_CALL = 1000;
const RECENT_CALLS = 200;
const UPDATES_PER_RUN = 500;

function checkRequest(r: OffendRequest): string[] {
	if (!r || typeof r !== 'object' || !Array.isArray(r.ranges) || r.ranges.length > MAX_RANGES_PER_CALL)
		throw new Error(`ranges: must be a list of at most ${MAX_RANGES_PER_CALL} ranges`);
	const out = r.ranges.map((x, i) => {
		const p = typeof x === 'string' ? parseEntry(x) : undefined;
		if (!p) throw new Error(`ranges.${i}: must be an IPv4 address, start-end range or CIDR`);
		return formatRange(p);
	});
	const q = r.rule;
	if (!q || !(q.factor >= 1) || !(q.maxMultiplier >= 1) || !(q.quietDays > 0))
		throw new Error('rule: must be { factor ≥ 1, maxMultiplier ≥ 1, quietDays > 0 }');
	if (r.dedupe !== undefined && (typeof r.dedupe !== 'string' || r.dedupe.length > 500))
		throw new Error('dedupe: must be a text of at most 500 characters');
	return out;
}

export async function offenders(input: OffendersInput): Promise<void> {
	if (!input || typeof input.key !== 'string' || !input.key || input.key.length > 200)
		throw ApplicationFailure.nonRetryable(
			'invalid offenders input — key: must be a text of 1 to 200 characters',
			'ValidationError',
		);
	const records = new Map<string, OffenderRecord>(input.carry?.records ?? []);
	const recent = new Map<string, OffendAnswer[]>(input.carry?.recent ?? []);
	let updates = 0;
	setHandler(
		offendUpdate,
		(req) => {
			if (req.dedupe && recent.has(req.dedupe)) return recent.get(req.dedupe) as OffendAnswer[];
			const now = Date.now();
			const out = checkRequest(req).map((range) => {
				const r = records.get(range);
				const prior = r ? decayed(r.n, r.lastMs, now, req.rule) : 0;
				records.delete(range); // re-inserted last: the Map's order is least recently blocked first
				records.set(range, { n: prior + 1, lastMs: now });
				return { range, prior, ...(r ? { lastAt: new Date(r.lastMs).toISOString() } : {}) };
			});
			for (const k of records.keys()) {
				if (records.size <= MAX_OFFENDERS) break;
				records.delete(k);
			}
			if (req.dedupe) {
				recent.set(req.dedupe, out);
				if (recent.size > RECENT_CALLS) recent.delete(recent.keys().next().value as string);
			}
			updates++;
			return out;
		},
		{ validator: (req) => void checkRequest(req) },
	);
	setHandler(offendersQuery, () => [...records]);
	await condition(() => updates >= UPDATES_PER_RUN || workflowInfo().continueAsNewSuggested);
	await condition(allHandlersFinished);
	await continueAsNew<typeof offenders>({ key: input.key, carry: { records: [...records], recent: [...recent] } });
}
