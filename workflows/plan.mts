import { z } from 'zod/v4';
import { parseEntry } from './ranges.mts';
import { ITEM_TYPE } from './planShared.mts';

export { ITEM_GROUP, ITEM_TYPE } from './planShared.mts';
const SETTABLE_ITEMS = Object.keys(ITEM_TYPE);

/**
 * The attack-response plan (JSON). Validated with zod before a runbook starts (CLI / n8n bridge) and again
 * inside the workflow. Durations are in seconds. The plan never carries credentials.
 */

const THRESHOLD = /^\d+(\.\d+)?[KMG]?$/;
const threshold = z.string().regex(THRESHOLD, { error: 'must be a number, or a number with suffix K, M or G' });
const seconds = (min: number, max: number) =>
	z.number().int({ error: 'must be an integer number of seconds' }).min(min, { error: `must be at least ${min}` }).max(max, { error: `must be at most ${max}` });
const rangeText = z.string().refine((s) => parseEntry(s) !== undefined, { error: 'must be an IPv4 address, start-end range or CIDR' });

const thresholdItem = z.strictObject({
	name: z.enum(SETTABLE_ITEMS as [string, ...string[]], { error: `must be a settable protocol item (${SETTABLE_ITEMS.join(', ')}); icmp items have no settable type (§4.5)` }),
	/** Multiply the current low/high thresholds by this factor (0 < factor ≤ 1 lowers them). */
	factor: z.number().gt(0, { error: 'must be greater than 0' }).max(1, { error: 'must be at most 1 (the runbook only lowers thresholds)' }).optional(),
	low_pps: threshold.optional(),
	high_pps: threshold.optional(),
	low_bps: threshold.optional(),
	high_bps: threshold.optional(),
});

const ipAuth = z.strictObject({
	action: z.enum(['ratelimit', 'blacklist', 'ratelimit_blacklist'], { error: 'must be ratelimit, blacklist or ratelimit_blacklist' }),
	enable: z.union([z.literal(0), z.literal(1), z.literal(2)], { error: 'must be 0, 1 or 2' }),
	mode: z.union([z.literal(0), z.literal(1), z.literal(2)], { error: 'must be 0, 1 or 2' }),
	action_ratelimit: z.strictObject({ duration: z.number().int(), ratelimit_rps: z.number().int(), threshold_rps: z.number().int() }).optional(),
	action_blacklist: z.strictObject({ duration: z.number().int(), threshold_rps: z.number().int() }).optional(),
	action_ratelimit_blacklist: z
		.strictObject({ blacklist_threshold_rps: z.number().int(), duration: z.number().int(), ratelimit_rps: z.number().int(), ratelimit_threshold_rps: z.number().int() })
		.optional(),
});

export const planSchema = z
	.strictObject({
		/** Site and the customer / network / host used by the detection operations. */
		site_id: z.string({ error: 'is required (the site to protect)' }).regex(/^[^/?#\s]+$/, { error: 'must be a site id (no /, ?, #, spaces)' }),
		customer_id: z.string({ error: 'is required (customer id used by the detection operations)' }).regex(/^[^/?#\s]+$/, { error: 'must be a customer id (no /, ?, #, spaces)' }),
		network_id: z.string().default('0'),
		host_id: z.string().default('0'),
		domain_ports: z.array(z.string().regex(/^[^/?#\s]+$/, { error: 'must be a domain-port id' })).default([]),
		/** Event to act on; when absent the runbook looks up the ongoing event of the site. */
		event_id: z.string().optional(),
		approval: z
			.strictObject({
				required: z.boolean().default(false),
				timeoutSeconds: seconds(1, 86400).default(300),
				/** Decision taken when nobody answers in time. Conservative default: reject (change nothing). */
				onTimeout: z.enum(['approve', 'reject']).default('reject'),
				/** Identities allowed to approve or reject (the `by` of the decision). Empty: anyone who can reach the runbook. */
				approvers: z
					.array(z.string({ error: 'must be an identity (text)' }).min(1, { error: 'must not be empty' }).max(200), { error: 'must be a list of identities' })
					.max(100, { error: 'must list at most 100 identities' })
					.default([]),
			})
			.default({ required: false, timeoutSeconds: 300, onTimeout: 'reject', approvers: [] }),
		detection: z
			.strictObject({
				rapidMode: z.boolean().default(true),
				thresholds: z.array(thresholdItem).default([]),
			})
			.default({ rapidMode: true, thresholds: [] }),
		blacklist: z
			.strictObject({
				enabled: z.boolean().default(true),
				topN: z.number().int().min(1).max(1000, { error: 'must be at most 1000' }).default(20),
				metric: z.enum(['bps', 'pps']).default('bps'),
				minPercent: z.number().min(0).max(100).default(0),
				/** Ranges the runbook must never blacklist (in addition to the live whitelist). */
				protectedRanges: z.array(rangeText).default([]),
				/**
				 * Register every entry the runbook adds as an expiring block (workflows/blocks.mts) ending this many seconds
				 * after it was added: the revert hands the entries over to their blocks instead of removing them, and a
				 * runbook that dies for good leaves no permanent block (the block removes the entry once the runbook's hold
				 * ends). Absent: the revert removes the entries, as before.
				 */
				expireAfterSeconds: seconds(1, 90 * 86400).optional(),
			})
			.default({ enabled: true, topN: 20, metric: 'bps', minPercent: 0, protectedRanges: [] }),
		ipAuth: ipAuth.optional(),
		/** Policy switches to set on every domain-port (e.g. p_auth on). */
		switches: z.array(z.strictObject({ name: z.string().min(1), enable: z.union([z.literal(0), z.literal(1)]) })).default([]),
		cooldownSeconds: seconds(0, 7 * 86400).default(600),
		pollSeconds: seconds(1, 3600).default(30),
		/** Upper bound on the mitigation phase; the runbook reverts when it is reached. */
		maxDurationSeconds: seconds(1, 30 * 86400).default(86400),
		/**
		 * How long the revert keeps trying while the API does not answer (outage, timeouts, rate limiting) before it
		 * gives up on a setting and reports it as revert-failed. Default 24 h: nothing is left tightened by an outage.
		 */
		revertPatienceSeconds: seconds(1, 30 * 86400).default(86400),
		/** Per-activity start-to-close timeout. */
		activityTimeoutSeconds: seconds(1, 600).default(30),
		/** How the runbook runs its API calls (speed vs. visibility; see workflows/README.md). */
		execution: z
			.strictObject({
				/** Independent reads at once (snapshot + event lookup); independent writes of one kind at once. */
				parallel: z.boolean().default(true),
				/**
				 * Which calls run as local activities (in the worker, no task-queue round trip; recorded as markers):
				 * none; reads (snapshot, event lookup, attack polls, revert reads); all (also the mitigation writes,
				 * which are idempotent; the snapshot is made durable before the first write).
				 */
				localActivities: z.enum(['none', 'reads', 'all']).default('all'),
				/** Blacklist adds sent at once to one domain-port's list (1 = one after another). */
				blacklistConcurrency: z.number().int().min(1, { error: 'must be at least 1' }).max(16, { error: 'must be at most 16' }).default(1),
			})
			.default({ parallel: true, localActivities: 'all', blacklistConcurrency: 1 }),
	})
	.superRefine((p, ctx) => {
		if (p.ipAuth) {
			for (const a of ['ratelimit', 'blacklist', 'ratelimit_blacklist'] as const) {
				if (a !== p.ipAuth.action && p.ipAuth[`action_${a}`] !== undefined)
					ctx.addIssue({ code: 'custom', path: ['ipAuth', `action_${a}`], message: `must not be set when action is ${p.ipAuth.action} (§4.3.3)` });
			}
		}
		if ((p.ipAuth || p.switches.length > 0) && p.domain_ports.length === 0)
			ctx.addIssue({ code: 'custom', path: ['domain_ports'], message: 'must list at least one domain-port when ipAuth or switches are set' });
		for (const [i, t] of p.detection.thresholds.entries()) {
			if (t.factor === undefined && !t.low_pps && !t.high_pps && !t.low_bps && !t.high_bps)
				ctx.addIssue({ code: 'custom', path: ['detection', 'thresholds', i], message: 'must give factor or at least one of low_pps, high_pps, low_bps, high_bps' });
		}
	});

export type Plan = z.output<typeof planSchema>;
export type PlanInput = z.input<typeof planSchema>;

export interface PlanIssue {
	field: string;
	rule: string;
}

export class PlanError extends Error {
	constructor(readonly issues: PlanIssue[]) {
		super(`invalid plan — ${issues.map((i) => `${i.field}: ${i.rule}`).join('; ')}`);
		this.name = 'PlanError';
	}
}

export function parsePlan(input: unknown): Plan {
	const r = planSchema.safeParse(input);
	if (r.success) return r.data;
	throw new PlanError(r.error.issues.map((i) => ({ field: i.path.length ? i.path.map(String).join('.') : '(plan)', rule: i.message })));
}
