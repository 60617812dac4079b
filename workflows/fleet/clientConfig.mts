import { z } from 'zod/v4';
import { ID_ALPHABET, idProblem } from '../../api/limits.ts';
import { parsePlan, PlanError } from '../../api/runbook/plan.ts';
import { FLEET_BOUNDS as B, sitePlan, type FleetSettings, type FleetSite } from './shared.mts';
import { parseEntry } from '../pure/ranges.mts';

/**
 * The fleet file (`secsvc fleet apply FILE`): sites (customer, site, domain-ports) → a plan template + per-site
 * overrides, and how the watchers poll. Validated whole before anything is sent: every error names the site and
 * the field, and a file with any error changes nothing. Example: examples/fleet/fleet.json.
 */

// Ids reach API paths and workflow ids: the ids' rule of every entry point (api/limits.ts).
const id = (what: string) =>
	z
		.string({ error: `is required (${what})` })
		.refine((v) => !idProblem(v), { error: `must be a ${what}: ${ID_ALPHABET}` });
const int = (min: number, max: number) =>
	z
		.number({ error: 'must be a number' })
		.int({ error: 'must be an integer' })
		.min(min, { error: `must be at least ${min}` })
		.max(max, { error: `must be at most ${max}` });

const overrides = z.strictObject({
	cooldownSeconds: int(0, 7 * 86400).optional(),
	approval: z
		.strictObject({
			required: z.boolean({ error: 'must be true or false' }).optional(),
			timeoutSeconds: int(1, 86400).optional(),
			onTimeout: z.enum(['approve', 'reject'], { error: 'must be approve or reject' }).optional(),
		})
		.optional(),
	protectedRanges: z
		.array(
			z
				.string()
				.refine((s) => parseEntry(s) !== undefined, { error: 'must be an IPv4 address, start-end range or CIDR' }),
		)
		.optional(),
});

const site = z.strictObject({
	customer_id: id('customer id'),
	site_id: id('site id'),
	domain_ports: z.array(id('domain-port id')).default([]),
	overrides: overrides.optional(),
});

const TEMPLATE_OWN = ['site_id', 'customer_id', 'domain_ports', 'event_id'];

export const fleetSchema = z.strictObject({
	/** Name of the fleet: watcher ids are `fleet-watch-<fleet>-<n>`. */
	fleet: z.string().regex(B.fleetRe, { error: 'must be 1–40 letters, digits, _ . -' }).default('default'),
	intervalSeconds: int(...B.intervalSeconds).default(60),
	sitesPerWatcher: int(...B.sitesPerWatcher).default(250),
	batchSize: int(...B.batchSize).default(50),
	concurrency: int(...B.concurrency).default(8),
	parallelBatches: int(...B.parallelBatches).default(4),
	activities: z.enum(['local', 'regular'], { error: 'must be local or regular' }).default('local'),
	ticksPerRun: int(...B.ticksPerRun).default(100),
	/** Starvation bound under a request budget: every site checked at least once per this many intervals. */
	maxIntervalStretch: int(...B.maxIntervalStretch).default(3),
	/** Plan fields every site shares (api/runbook/plan.ts), without site_id, customer_id, domain_ports, event_id. */
	template: z
		.record(z.string(), z.unknown(), { error: 'must be an object (plan fields shared by every site)' })
		.superRefine((t, ctx) => {
			for (const k of TEMPLATE_OWN)
				if (k in t)
					ctx.addIssue({ code: 'custom', path: [k], message: 'must not be in the template (it is per site)' });
		})
		.default({}),
	sites: z.array(site, { error: 'must be a list of sites' }),
});

export interface FleetIssue {
	/** `site 20004` / `template` / `(fleet)` */
	where: string;
	field: string;
	rule: string;
}

export class FleetConfigError extends Error {
	constructor(readonly issues: FleetIssue[]) {
		const shown = issues.slice(0, 20).map((i) => `${i.where}: ${i.field}: ${i.rule}`);
		super(`invalid fleet file — ${shown.join('; ')}${issues.length > 20 ? `; … ${issues.length - 20} more` : ''}`);
		this.name = 'FleetConfigError';
	}
}

export interface ParsedFleet {
	fleet: string;
	settings: FleetSettings;
	sitesPerWatcher: number;
	template: Record<string, unknown>;
	sites: FleetSite[];
}

/** Validates a fleet file; throws FleetConfigError listing every problem (site and field). */
export function parseFleet(input: unknown): ParsedFleet {
	const r = fleetSchema.safeParse(input);
	if (!r.success) {
		const raw = input as { sites?: { site_id?: unknown }[] };
		throw new FleetConfigError(
			r.error.issues.map((i) => {
				const p = i.path.map(String);
				if (p[0] === 'sites' && p.length >= 2) {
					const n = Number(p[1]);
					const sid = raw?.sites?.[n]?.site_id;
					return {
						where: `site ${typeof sid === 'string' ? sid : '?'} (sites[${n}])`,
						field: p.slice(2).join('.') || '(site)',
						rule: i.message,
					};
				}
				if (p[0] === 'template')
					return { where: 'template', field: p.slice(1).join('.') || '(template)', rule: i.message };
				return { where: '(fleet)', field: p.join('.') || '(file)', rule: i.message };
			}),
		);
	}
	const f = r.data;
	const issues: FleetIssue[] = [];
	// The template alone (with placeholder ids) first, so its errors are reported once, not once per site.
	try {
		parsePlan({ ...f.template, site_id: 'template', customer_id: 'template', domain_ports: ['template'] });
	} catch (e) {
		if (!(e instanceof PlanError)) throw e;
		for (const i of e.issues) issues.push({ where: 'template', field: i.field, rule: i.rule });
	}
	const seen = new Map<string, number>();
	for (const [n, s] of f.sites.entries()) {
		const where = `site ${s.site_id} (sites[${n}])`;
		const prev = seen.get(s.site_id);
		if (prev !== undefined) issues.push({ where, field: 'site_id', rule: `is listed twice (also sites[${prev}])` });
		else seen.set(s.site_id, n);
		if (issues.some((i) => i.where === 'template')) continue;
		try {
			parsePlan(sitePlan(f.template, s));
		} catch (e) {
			if (!(e instanceof PlanError)) throw e;
			for (const i of e.issues) issues.push({ where, field: overrideField(i.field), rule: i.rule });
		}
	}
	if (issues.length) throw new FleetConfigError(issues);
	return {
		fleet: f.fleet,
		sitesPerWatcher: f.sitesPerWatcher,
		settings: {
			intervalSeconds: f.intervalSeconds,
			batchSize: f.batchSize,
			concurrency: f.concurrency,
			parallelBatches: f.parallelBatches,
			activities: f.activities,
			ticksPerRun: f.ticksPerRun,
			maxIntervalStretch: f.maxIntervalStretch,
		},
		template: f.template,
		sites: f.sites.map((s) => ({
			site_id: s.site_id,
			customer_id: s.customer_id,
			domain_ports: s.domain_ports,
			...(s.overrides ? { overrides: s.overrides } : {}),
		})),
	};
}

/** A plan field that comes from a site's own entry, named the way the fleet file spells it. */
function overrideField(planField: string): string {
	if (planField === 'cooldownSeconds' || planField.startsWith('approval'))
		return `overrides.${planField} (or template)`;
	if (planField.startsWith('blacklist.protectedRanges')) return `overrides.protectedRanges (or template.${planField})`;
	return planField;
}
