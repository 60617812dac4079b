import { z } from 'zod/v4';
import { boundIssues, ID_ALPHABET, ID_MAX, ID_RE, issuesText, sizeIssues } from '../limits';
import { parseEntry } from '../ranges';
import { CONTINUE_AS_NEW_EVENTS, ITEM_TYPE, THRESHOLD_FIELDS } from './planItems';
import { wavesSchema } from './wavesSchema';
import { holdDownSchema, stopWhenSchema } from './holdDownSchema';

export { CONTINUE_AS_NEW_EVENTS, ITEM_GROUP, ITEM_TYPE } from './planItems';
const SETTABLE_ITEMS = Object.keys(ITEM_TYPE);

/**
 * The attack-response plan (JSON). Validated with zod before a runbook starts (CLI / n8n bridge) and again
 * inside the workflow. Durations are in seconds. The plan never carries credentials.
 */

const THRESHOLD = /^\d+(\.\d+)?[KMG]?$/;
export const threshold = z
	.string({ error: 'must be a string: a number, or a number with suffix K, M or G' })
	.max(32, { error: 'must be at most 32 characters' })
	.regex(THRESHOLD, { error: 'must be a number, or a number with suffix K, M or G' });
const seconds = (min: number, max: number) =>
	z
		.number({ error: 'must be an integer number of seconds' })
		.int({ error: 'must be an integer number of seconds' })
		.min(min, { error: `must be at least ${min}` })
		.max(max, { error: `must be at most ${max}` });
export const rangeText = z
	.string({ error: 'must be a string: an IPv4 address, start-end range or CIDR' })
	.max(64, { error: 'must be at most 64 characters (an IPv4 address, start-end range or CIDR)' })
	.refine((s) => parseEntry(s) !== undefined, { error: 'must be an IPv4 address, start-end range or CIDR' });
/** Ids that end up in API paths: the safe alphabet of api/limits.ts. A number is not an id ("must be a string"). */
export const id = (what: string, required = true, hint = what) =>
	z
		.string({
			error: (iss) => (iss.input === undefined && required ? `is required (${hint})` : `must be a string (${what})`),
		})
		.max(ID_MAX, { error: `must be at most ${ID_MAX} characters (${what})` })
		.regex(ID_RE, { error: `must be ${what}: ${ID_ALPHABET}` });
/** Most entries of the plan's lists (a runbook acts on a handful; these bounds keep errors and history small). */
export const PLAN_LIMITS = {
	domainPorts: 100,
	thresholds: 64,
	protectedRanges: 1000,
	switches: 64,
	string: 1024,
} as const;
export const list = <T extends z.ZodType>(item: T, max: number) =>
	z.array(item, { error: 'must be an array' }).max(max, { error: `must have at most ${max} entries` });

const thresholdItem = z.strictObject({
	name: z.enum(SETTABLE_ITEMS as [string, ...string[]], {
		error: `must be a settable protocol item (${SETTABLE_ITEMS.join(', ')}); icmp items have no settable type (§4.5)`,
	}),
	/** Multiply the current low/high thresholds by this factor (0 < factor ≤ 1 lowers them). */
	factor: z
		.number()
		.gt(0, { error: 'must be greater than 0' })
		.max(1, { error: 'must be at most 1 (the runbook only lowers thresholds)' })
		.optional(),
	low_pps: threshold.optional(),
	high_pps: threshold.optional(),
	low_bps: threshold.optional(),
	high_bps: threshold.optional(),
});

export const ipAuthSchema = z.strictObject({
	action: z.enum(['ratelimit', 'blacklist', 'ratelimit_blacklist'], {
		error: 'must be ratelimit, blacklist or ratelimit_blacklist',
	}),
	enable: z.union([z.literal(0), z.literal(1), z.literal(2)], { error: 'must be 0, 1 or 2' }),
	mode: z.union([z.literal(0), z.literal(1), z.literal(2)], { error: 'must be 0, 1 or 2' }),
	action_ratelimit: z
		.strictObject({ duration: z.number().int(), ratelimit_rps: z.number().int(), threshold_rps: z.number().int() })
		.optional(),
	action_blacklist: z.strictObject({ duration: z.number().int(), threshold_rps: z.number().int() }).optional(),
	action_ratelimit_blacklist: z
		.strictObject({
			blacklist_threshold_rps: z.number().int(),
			duration: z.number().int(),
			ratelimit_rps: z.number().int(),
			ratelimit_threshold_rps: z.number().int(),
		})
		.optional(),
});

export const planSchema = z
	.strictObject(
		{
			/** Site and the customer / network / host used by the detection operations. */
			site_id: id('a site id', true, 'the site to protect'),
			customer_id: id('a customer id', true, 'customer id used by the detection operations'),
			network_id: id('a network id', false).default('0'),
			host_id: id('a host id', false).default('0'),
			domain_ports: list(id('a domain-port id'), PLAN_LIMITS.domainPorts).default([]),
			/** Event to act on; when absent the runbook looks up the ongoing event of the site. */
			event_id: id('an event id', false).optional(),
			approval: z
				.strictObject({
					required: z.boolean().default(false),
					timeoutSeconds: seconds(1, 86400).default(300),
					/** Decision taken when nobody answers in time. Conservative default: reject (change nothing). */
					onTimeout: z.enum(['approve', 'reject']).default('reject'),
					/** Identities allowed to approve or reject (the `by` of the decision). Empty: anyone who can reach the runbook. */
					approvers: z
						.array(z.string({ error: 'must be an identity (text)' }).min(1, { error: 'must not be empty' }).max(200), {
							error: 'must be a list of identities',
						})
						.max(100, { error: 'must list at most 100 identities' })
						.default([]),
				})
				.default({ required: false, timeoutSeconds: 300, onTimeout: 'reject', approvers: [] }),
			detection: z
				.strictObject({
					rapidMode: z.boolean().default(true),
					thresholds: list(thresholdItem, PLAN_LIMITS.thresholds).default([]),
				})
				.default({ rapidMode: true, thresholds: [] }),
			blacklist: z
				.strictObject({
					enabled: z.boolean().default(true),
					topN: z.number().int().min(1).max(1000, { error: 'must be at most 1000' }).default(20),
					metric: z.enum(['bps', 'pps']).default('bps'),
					minPercent: z.number().min(0).max(100).default(0),
					/** Ranges the runbook must never blacklist (in addition to the live whitelist). */
					protectedRanges: list(rangeText, PLAN_LIMITS.protectedRanges).default([]),
					/**
					 * Register every entry the runbook adds as an expiring block (workflows/blocks/blocks.mts) ending this many seconds
					 * after it was added: the revert hands the entries over to their blocks instead of removing them, and a
					 * runbook that dies for good leaves no permanent block (the block removes the entry once the runbook's hold
					 * ends). Absent: the revert removes the entries, as before.
					 */
					expireAfterSeconds: seconds(1, 90 * 86400).optional(),
					/** New waves during the wait (api/runbook/waveRules.ts): new top sources blacklisted under the same guard. */
					waves: wavesSchema,
				})
				.default({ enabled: true, topN: 20, metric: 'bps', minPercent: 0, protectedRanges: [] }),
			ipAuth: ipAuthSchema.optional(),
			/** Policy switches to set on every domain-port (e.g. p_auth on). */
			switches: list(
				z.strictObject({
					name: z
						.string({ error: 'must be a string (a switch name)' })
						.min(1, { error: 'must not be empty' })
						.max(64, { error: 'must be at most 64 characters (a switch name)' }),
					enable: z.union([z.literal(0), z.literal(1)], { error: 'must be 0 or 1' }),
				}),
				PLAN_LIMITS.switches,
			).default([]),
			cooldownSeconds: seconds(0, 7 * 86400).default(600),
			pollSeconds: seconds(1, 3600).default(30),
			/**
			 * What a poll does with a setting someone else changed after the runbook's write (back to the value it replaced,
			 * or a blacklist entry of ours removed): `yield` (default) — the person wins: theirs from then on, reported as a
			 * conflict, never written again nor reverted; `reapply` — written again (held against resets), and undone at
			 * the revert. A value other than both is always theirs (workflows/README.md "Attack response semantics").
			 */
			holdTheLine: z.enum(['yield', 'reapply']).default('yield'),
			/** Upper bound on the mitigation phase; the runbook reverts when it is reached. */
			maxDurationSeconds: seconds(1, 30 * 86400).default(86400),
			/** Stop conditions and hold-down re-arm (api/runbook/holdDownRules.ts; default attack-ended, 30 min hold-down). */
			stopWhen: stopWhenSchema,
			holdDown: holdDownSchema,
			/**
			 * How long a write the runbook must finish — a mitigation write, a revert write — keeps trying while the API does
			 * not answer (outage, timeouts, rate limiting) before it gives up (the mitigation then reverts what it applied; a
			 * revert reports the setting as revert-failed). Default 24 h: an outage neither disarms nor leaves a site tightened.
			 */
			apiPatienceSeconds: seconds(1, 30 * 86400).default(86400),
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
					blacklistConcurrency: z
						.number()
						.int()
						.min(1, { error: 'must be at least 1' })
						.max(16, { error: 'must be at most 16' })
						.default(1),
					/**
					 * During the wait the runbook continues as new (same workflow id, its whole state carried over) once its run's
					 * history has this many events, or when Temporal suggests it: a long attack never reaches Temporal's history
					 * limits (warning at 10,240 events, terminated at 51,200). Lower values only for tests.
					 */
					continueAsNewAfterEvents: z
						.number({ error: 'must be an integer number of history events' })
						.int({ error: 'must be an integer number of history events' })
						.min(CONTINUE_AS_NEW_EVENTS.min, { error: `must be at least ${CONTINUE_AS_NEW_EVENTS.min}` })
						.max(CONTINUE_AS_NEW_EVENTS.max, {
							error: `must be at most ${CONTINUE_AS_NEW_EVENTS.max} (below Temporal's warning at 10,240 events)`,
						})
						.default(CONTINUE_AS_NEW_EVENTS.default),
				})
				.default({
					parallel: true,
					localActivities: 'all',
					blacklistConcurrency: 1,
					continueAsNewAfterEvents: CONTINUE_AS_NEW_EVENTS.default,
				}),
		},
		{
			error: (iss) =>
				iss.code === 'unrecognized_keys' ? `unknown field(s) ${iss.keys.map((k) => `'${k}'`).join(', ')}` : undefined,
		},
	)
	.superRefine((p, ctx) => {
		if (p.ipAuth) {
			for (const a of ['ratelimit', 'blacklist', 'ratelimit_blacklist'] as const) {
				if (a !== p.ipAuth.action && p.ipAuth[`action_${a}`] !== undefined)
					ctx.addIssue({
						code: 'custom',
						path: ['ipAuth', `action_${a}`],
						message: `must not be set when action is ${p.ipAuth.action} (§4.3.3)`,
					});
			}
		}
		if ((p.ipAuth || p.switches.length > 0) && p.domain_ports.length === 0)
			ctx.addIssue({
				code: 'custom',
				path: ['domain_ports'],
				message: 'must list at least one domain-port when ipAuth or switches are set',
			});
		for (const [i, t] of p.detection.thresholds.entries()) {
			if (t.factor === undefined && !THRESHOLD_FIELDS.some((f) => t[f]))
				ctx.addIssue({
					code: 'custom',
					path: ['detection', 'thresholds', i],
					message: `must give factor or at least one of ${THRESHOLD_FIELDS.join(', ')}`,
				});
		}
	});

export type Plan = z.output<typeof planSchema>;
export type PlanInput = z.input<typeof planSchema>;

export interface PlanIssue {
	field: string;
	rule: string;
}

export class PlanError extends Error {
	/** The first MAX_ISSUES issues; `moreIssues` counts the rest (the message stays short whatever the plan). */
	readonly issues: PlanIssue[];
	readonly moreIssues: number;
	constructor(issues: PlanIssue[]) {
		super(`invalid plan — ${issuesText(issues)}`);
		this.name = 'PlanError';
		const { shown, more } = boundIssues(issues);
		this.issues = shown;
		this.moreIssues = more;
	}
}

export const where = (path: readonly PropertyKey[]) => (path.length ? path.map(String).join('.') : '(plan)');

/**
 * The one check of a plan, shared by the n8n Runbook node, the CLI and the workflow (through the worker's
 * `runbook.parsePlan`): the parsed plan with its defaults, or every issue, each naming the field and the rule.
 */
const CREDENTIAL_KEYS = ['secret', 'access_token', 'refresh_token', 'app_secret'];

export function checkPlan(input: unknown): { plan: Plan } | { issues: PlanIssue[] } {
	if (typeof input !== 'object' || input === null || Array.isArray(input))
		return { issues: [{ field: '(plan)', rule: 'must be a JSON object' }] };
	// Sizes first: a 10⁶-entry list or a megabyte string gets one short issue instead of a slow parse.
	const sized = sizeIssues(input, {
		maxString: PLAN_LIMITS.string,
		maxList: PLAN_LIMITS.protectedRanges,
		maxDepth: 8,
		path: '',
	});
	if (sized.length)
		return { issues: sized.map((i) => ({ field: i.field === '(input)' ? '(plan)' : i.field, rule: i.rule })) };
	const secrets = CREDENTIAL_KEYS.filter((k) => k in input);
	if (secrets.length)
		return {
			issues: secrets.map((field) => ({ field, rule: 'must not be in a plan (credentials live in the worker only)' })),
		};
	const r = planSchema.safeParse(input);
	if (r.success) return { plan: r.data };
	return { issues: r.error.issues.map((i) => ({ field: where(i.path), rule: i.message })) };
}

export function parsePlan(input: unknown): Plan {
	const checked = checkPlan(input);
	if ('issues' in checked) throw new PlanError(checked.issues);
	return checked.plan;
}
