import { z } from 'zod/v4';
import { blastRadiusIssues, type GuardSide } from '../blastRadius';
import { boundIssues, issuesText, sizeIssues } from '../limits';
import { id, ipAuthSchema, list, PLAN_LIMITS, rangeText, threshold, where } from './plan';
import { ITEM_GROUP } from './planItems';

/**
 * The drift audit's desired state (workflows/drift/driftAudit.mts documents its meaning), checked where it enters: the
 * CLI (`secsvc drift`, `secsvc schedule create drift`) validates it before anything is sent to Temporal. Errors
 * name field and rule and are bounded like the plan's. Not imported by workflow code.
 */

const ITEMS = Object.keys(ITEM_GROUP);
const flag = z.union([z.literal(0), z.literal(1), z.boolean()], { error: 'must be 0, 1, true or false' });

const item = z.strictObject({
	is_enabled: flag.optional(),
	low_pps: threshold.optional(),
	high_pps: threshold.optional(),
	low_bps: threshold.optional(),
	high_bps: threshold.optional(),
	blackhole_bps: threshold.optional(),
	blackhole_pps: threshold.optional(),
	blackhole_time: z
		.number({ error: 'must be an integer number of seconds' })
		.int({ error: 'must be an integer number of seconds' })
		.min(0)
		.max(86400 * 30)
		.optional(),
});

/** A list the drift enforce writes entry by entry: the guard's rules for its side, checked before anything starts. */
const guardedList = (side: GuardSide) =>
	list(rangeText, PLAN_LIMITS.protectedRanges).superRefine((entries, ctx) =>
		entries.forEach((e, i) => {
			for (const issue of blastRadiusIssues(e, '', {}, undefined, side))
				ctx.addIssue({ code: 'custom', path: [i], message: issue.rule.replace(/; an audited override.*$/, '') });
		}),
	);

const domainPort = z.strictObject({
	ipAuth: ipAuthSchema.optional(),
	switches: z
		.record(
			z.string().min(1).max(64, { error: 'must be a switch name of at most 64 characters' }),
			z.union([z.literal(0), z.literal(1)], { error: 'must be 0 or 1' }),
		)
		.optional(),
	blacklistIncludes: guardedList('block').optional(),
	whitelistIncludes: guardedList('allow').optional(),
	xForwardedFor: z
		.strictObject({
			mode: z
				.string({ error: 'must be a string (an X-Forwarded-For mode)' })
				.min(1)
				.max(32, { error: 'must be at most 32 characters' }),
			name: z
				.string({ error: 'must be a string (a header name)' })
				.max(128, { error: 'must be at most 128 characters' })
				.optional(),
		})
		.optional(),
});

export const desiredSchema = z
	.strictObject({
		site_id: id('a site id', true, 'the site to audit'),
		customer_id: id('a customer id', false).optional(),
		network_id: id('a network id', false).optional(),
		host_id: id('a host id', false).optional(),
		detection: z
			.strictObject({
				model: z
					.union([z.literal(0), z.literal(1), z.literal('0'), z.literal('1')], {
						error: 'must be 0 (normal) or 1 (rapid), as a number or a string',
					})
					.optional(),
				items: z
					.partialRecord(
						z.enum(ITEMS as [string, ...string[]], { error: `must be a detection item (${ITEMS.join(', ')})` }),
						item,
					)
					.optional(),
			})
			.optional(),
		domain_ports: z.record(id('a domain-port id'), domainPort).optional(),
	})
	.superRefine((d, ctx) => {
		if (d.detection && !d.customer_id)
			ctx.addIssue({ code: 'custom', path: ['customer_id'], message: 'is required when detection is given' });
		const dps = Object.keys(d.domain_ports ?? {}).length;
		if (dps > PLAN_LIMITS.domainPorts)
			ctx.addIssue({
				code: 'custom',
				path: ['domain_ports'],
				message: `must have at most ${PLAN_LIMITS.domainPorts} domain-ports`,
			});
	});

export type DesiredStateInput = z.input<typeof desiredSchema>;

export class DesiredStateError extends Error {
	readonly issues: { field: string; rule: string }[];
	readonly moreIssues: number;
	constructor(issues: { field: string; rule: string }[]) {
		super(`invalid desired state — ${issuesText(issues)}`);
		this.name = 'DesiredStateError';
		const { shown, more } = boundIssues(issues);
		this.issues = shown;
		this.moreIssues = more;
	}
}

/** Checks a desired state; returns it unchanged (the workflow reads the document as given). */
export function checkDesiredState(input: unknown): DesiredStateInput {
	if (typeof input !== 'object' || input === null || Array.isArray(input))
		throw new DesiredStateError([{ field: '(desired)', rule: 'must be a JSON object' }]);
	const sized = sizeIssues(input, { maxString: PLAN_LIMITS.string, maxList: PLAN_LIMITS.protectedRanges, maxDepth: 8 });
	if (sized.length) throw new DesiredStateError(sized);
	const r = desiredSchema.safeParse(input);
	if (r.success) return input as DesiredStateInput;
	throw new DesiredStateError(
		r.error.issues.map((i) => ({ field: where(i.path).replace(/^\(plan\)$/, '(desired)'), rule: i.message })),
	);
}
