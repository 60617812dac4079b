import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
	configQuery,
	configureUpdate,
	stableJson,
	statusQuery,
	watcherId,
	watcherIdPrefix,
	type FleetSite,
	type WatcherConfig,
	type WatcherStatus,
} from './shared.mts';
import type { ParsedFleet } from './clientConfig.mts';
import { WORKFLOW_TYPE } from '../../api/runbook/contract.ts';
import type { fleetWatch } from './fleetWatch.mts';

/**
 * Client side of the fleet watch: `secsvc fleet apply` makes the running watchers match a fleet file (adds,
 * changes, removes sites; starts, updates, retires watchers) and `secsvc fleet status` reads them.
 */

export interface FleetChange {
	op: '+' | '-' | '~';
	site_id: string;
	customer_id: string;
	watcher: string;
	detail?: string;
}

export interface ApplyResult {
	fleet: string;
	dryRun: boolean;
	changes: FleetChange[];
	/** Template or settings changes (apply to every site). */
	shared: string[];
	watchers: { id: string; action: 'start' | 'update' | 'retire' | 'unchanged'; sites: number }[];
	unchanged: number;
}

/** Running watchers of a fleet and their configuration (visibility, plus ids probed from 0 since visibility lags). */
export async function currentWatchers(client: Client, fleet: string): Promise<Map<number, WatcherConfig>> {
	const prefix = watcherIdPrefix(fleet);
	const listed = new Set<number>();
	try {
		for await (const w of client.workflow.list({
			query: `WorkflowType = '${WORKFLOW_TYPE.fleetWatch}' AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH '${prefix}'`,
		})) {
			const n = Number(w.workflowId.slice(prefix.length));
			if (Number.isInteger(n) && n >= 0) listed.add(n);
		}
	} catch {
		// visibility unavailable: probing below still finds consecutive watchers
	}
	const max = Math.max(-1, ...listed);
	const running = async (i: number) => {
		try {
			return (await client.workflow.getHandle(watcherId(fleet, i)).describe()).status.name === 'RUNNING';
		} catch (e) {
			if (e instanceof WorkflowNotFoundError) return false;
			throw e;
		}
	};
	const indexes = new Set(listed);
	for (let i = 0; ; i++) {
		if (listed.has(i)) continue;
		if (await running(i)) indexes.add(i);
		else if (i > max) break;
	}
	const out = new Map<number, WatcherConfig>();
	await Promise.all(
		[...indexes].map(async (i) => {
			try {
				out.set(i, await client.workflow.getHandle(watcherId(fleet, i)).query(configQuery));
			} catch (e) {
				if (!(e instanceof WorkflowNotFoundError)) throw e; // closed meanwhile
			}
		}),
	);
	return new Map([...out].sort((a, b) => a[0] - b[0]));
}

const siteKey = (s: FleetSite) => stableJson({ c: s.customer_id, d: s.domain_ports, o: s.overrides ?? {} });

function describeSiteChange(a: FleetSite, b: FleetSite): string {
	const parts: string[] = [];
	if (a.customer_id !== b.customer_id) parts.push(`customer ${a.customer_id} → ${b.customer_id}`);
	if (stableJson(a.domain_ports) !== stableJson(b.domain_ports))
		parts.push(`domain_ports ${a.domain_ports.join(',') || '-'} → ${b.domain_ports.join(',') || '-'}`);
	const oa = (a.overrides ?? {}) as Record<string, unknown>;
	const ob = (b.overrides ?? {}) as Record<string, unknown>;
	for (const k of [...new Set([...Object.keys(oa), ...Object.keys(ob)])].sort())
		if (stableJson(oa[k]) !== stableJson(ob[k]))
			parts.push(
				`${k} ${oa[k] === undefined ? '-' : JSON.stringify(oa[k])} → ${ob[k] === undefined ? '-' : JSON.stringify(ob[k])}`,
			);
	return parts.join('; ');
}

function diffObjects(label: string, a: Record<string, unknown>, b: Record<string, unknown>): string[] {
	const out: string[] = [];
	for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort())
		if (stableJson(a[k]) !== stableJson(b[k]))
			out.push(
				`${label}.${k} ${a[k] === undefined ? '-' : JSON.stringify(a[k])} → ${b[k] === undefined ? '-' : JSON.stringify(b[k])}`,
			);
	return out;
}

/**
 * Makes the running watchers match the fleet file. Sites stay on their watcher; new sites go to the watcher with
 * the fewest sites below `sitesPerWatcher` (a new watcher when all are full); a watcher left without sites retires.
 * Idempotent: applying the same file twice changes nothing the second time.
 */
export async function applyFleet(
	client: Client,
	taskQueue: string,
	f: ParsedFleet,
	o: { dryRun?: boolean } = {},
): Promise<ApplyResult> {
	const current = await currentWatchers(client, f.fleet);
	const { next, changes } = placeSites(current, f);
	const revision = new Date().toISOString();
	const watchers: ApplyResult['watchers'] = [];
	for (const [i, sites] of [...next].sort((a, b) => a[0] - b[0])) {
		const cfg: WatcherConfig = {
			fleet: f.fleet,
			index: i,
			revision,
			taskQueue,
			settings: f.settings,
			template: f.template,
			sites,
		};
		const old = current.get(i);
		const id = watcherId(f.fleet, i);
		const same = old && stableJson({ ...old, revision: '' }) === stableJson({ ...cfg, revision: '' });
		const action: ApplyResult['watchers'][number]['action'] = !old
			? 'start'
			: same
				? 'unchanged'
				: sites.length === 0
					? 'retire'
					: 'update';
		if (!old && sites.length === 0) continue;
		watchers.push({ id, action, sites: sites.length });
		if (!o.dryRun && action !== 'unchanged') await applyWatcher(client, taskQueue, id, cfg, action === 'start');
	}
	const touched = new Set(changes.map((c) => c.site_id));
	return {
		fleet: f.fleet,
		dryRun: o.dryRun === true,
		changes,
		shared: sharedChanges(current, f),
		watchers,
		unchanged: f.sites.filter((s) => !touched.has(s.site_id)).length,
	};
}

/** Starts a watcher (an already running one is updated instead) or sends it its new configuration. */
async function applyWatcher(client: Client, taskQueue: string, id: string, cfg: WatcherConfig, start: boolean) {
	if (start) {
		try {
			await client.workflow.start<typeof fleetWatch>(WORKFLOW_TYPE.fleetWatch, {
				workflowId: id,
				taskQueue,
				args: [{ config: cfg }],
			});
			return;
		} catch (e) {
			if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
		}
	}
	await client.workflow.getHandle(id).executeUpdate(configureUpdate, { args: [cfg] });
}

/** Each watcher's sites after the file: removed and changed sites in place, new ones where there is room. */
function placeSites(current: Map<number, WatcherConfig>, f: ParsedFleet) {
	const desired = new Map(f.sites.map((s) => [s.site_id, s]));
	const where = new Map<string, { index: number; site: FleetSite }>();
	for (const [i, c] of current) for (const s of c.sites) where.set(s.site_id, { index: i, site: s });

	const next = new Map<number, FleetSite[]>();
	const changes: FleetChange[] = [];
	for (const [i, c] of current) {
		const kept: FleetSite[] = [];
		for (const s of c.sites) {
			const d = desired.get(s.site_id);
			if (!d) changes.push({ op: '-', site_id: s.site_id, customer_id: s.customer_id, watcher: watcherId(f.fleet, i) });
			else {
				if (siteKey(s) !== siteKey(d))
					changes.push({
						op: '~',
						site_id: s.site_id,
						customer_id: d.customer_id,
						watcher: watcherId(f.fleet, i),
						detail: describeSiteChange(s, d),
					});
				kept.push(d);
			}
		}
		next.set(i, kept);
	}
	for (const s of f.sites) {
		if (where.has(s.site_id)) continue;
		let best: number | undefined;
		for (const [i, list] of next)
			if (
				list.length < f.sitesPerWatcher &&
				(best === undefined || list.length < (next.get(best) as FleetSite[]).length)
			)
				best = i;
		if (best === undefined) {
			best = 0;
			while (next.has(best)) best++;
			next.set(best, []);
		}
		(next.get(best) as FleetSite[]).push(s);
		changes.push({ op: '+', site_id: s.site_id, customer_id: s.customer_id, watcher: watcherId(f.fleet, best) });
	}

	return { next, changes };
}

/** What changes for every watcher: the fleet's settings and its runbook template. */
function sharedChanges(current: Map<number, WatcherConfig>, f: ParsedFleet): string[] {
	const shared: string[] = [];
	const any = current.values().next().value as WatcherConfig | undefined;
	if (any) {
		shared.push(
			...diffObjects(
				'settings',
				any.settings as unknown as Record<string, unknown>,
				f.settings as unknown as Record<string, unknown>,
			),
		);
		shared.push(...diffObjects('template', any.template, f.template));
	}
	return shared;
}

export function formatApply(r: ApplyResult): string {
	const lines: string[] = [];
	const order = { '-': 0, '~': 1, '+': 2 };
	for (const c of [...r.changes].sort(
		(a, b) => order[a.op] - order[b.op] || a.site_id.localeCompare(b.site_id, 'en', { numeric: true }),
	))
		lines.push(
			`${c.op} site ${c.site_id} (customer ${c.customer_id}) ${c.op === '-' ? 'from' : 'on'} ${c.watcher}${c.detail ? `: ${c.detail}` : ''}`,
		);
	for (const s of r.shared) lines.push(`~ ${s} (every site)`);
	for (const w of r.watchers)
		if (w.action !== 'unchanged') lines.push(`${r.dryRun ? 'would ' : ''}${w.action} ${w.id} (${w.sites} sites)`);
	const n = (op: string) => r.changes.filter((c) => c.op === op).length;
	lines.push(
		`${r.dryRun ? 'dry run, nothing sent: ' : ''}fleet ${r.fleet}: ${n('+')} added, ${n('~')} changed, ${n('-')} removed, ${r.unchanged} unchanged${r.shared.length ? `, ${r.shared.length} shared setting(s) changed` : ''}; ${r.watchers.filter((w) => w.action !== 'retire').length} watcher(s)`,
	);
	return lines.join('\n');
}

export interface FleetStatus {
	fleet: string;
	watchers: (WatcherStatus & { workflowId: string })[];
	/** Runbook status per site, for sites whose watcher started or found one. */
	runbooks: Record<string, string>;
}

export async function fleetStatus(client: Client, fleet: string): Promise<FleetStatus> {
	const current = await currentWatchers(client, fleet);
	const watchers = await Promise.all(
		[...current.keys()].map(async (i) => ({
			workflowId: watcherId(fleet, i),
			...(await client.workflow.getHandle(watcherId(fleet, i)).query(statusQuery)),
		})),
	);
	const runbooks: Record<string, string> = {};
	const ids = watchers.flatMap((w) => w.sites.filter((s) => s.runbook).map((s) => [s.site_id, s.runbook!.id] as const));
	await Promise.all(
		ids.map(async ([site, id]) => {
			try {
				runbooks[site] = (await client.workflow.getHandle(id).describe()).status.name;
			} catch (e) {
				runbooks[site] = e instanceof WorkflowNotFoundError ? 'NOT_FOUND' : 'UNKNOWN';
			}
		}),
	);
	return { fleet, watchers, runbooks };
}

const hms = (ms?: number) => (ms === undefined ? '-' : new Date(ms).toISOString().slice(11, 19));

export function formatStatus(s: FleetStatus, now = Date.now()): string {
	if (s.watchers.length === 0) return `fleet ${s.fleet}: no running watchers`;
	const lines: string[] = [];
	const total = s.watchers.reduce((n, w) => n + w.sites.length, 0);
	const count = (st: string) => s.watchers.reduce((n, w) => n + w.sites.filter((x) => x.state === st).length, 0);
	lines.push(
		`fleet ${s.fleet}: ${s.watchers.length} watcher(s), ${total} sites — ${count('attack')} under attack, ${count('quiet')} quiet, ${count('deferred')} deferred, ${count('error')} error, ${count('unchecked')} unchecked`,
	);
	for (const w of s.watchers) {
		lines.push(
			`${w.workflowId}: ${w.sites.length} sites, every ${w.settings.intervalSeconds}s, ${w.settings.activities} batches of ${w.settings.batchSize}, concurrency ${w.concurrency}/${w.settings.concurrency}, tick ${w.ticks} of run ${w.runs}, last tick ${hms(w.lastTickAt)} (${w.lastTickMs ?? '-'} ms), rate-limited ticks ${w.rateLimitedTicks}, oldest check ${w.oldestCheckIntervals ?? '-'} intervals (bound ${w.maxIntervalStretch ?? 3}, overdue ${w.overdue ?? 0}), revision ${w.revision}`,
		);
		lines.push(
			`  ${'site'.padEnd(10)} ${'customer'.padEnd(10)} ${'state'.padEnd(9)} ${'last check'.padEnd(16)} runbook`,
		);
		for (const x of w.sites) {
			const age = x.at === undefined ? '' : ` (${Math.max(0, Math.round((now - x.at) / 1000))}s ago)`;
			const rb = x.runbook
				? `${x.runbook.id} ${s.runbooks[x.site_id] ?? ''} (${x.runbook.by} ${hms(x.runbook.at)})`
				: '-';
			lines.push(
				`  ${x.site_id.padEnd(10)} ${x.customer_id.padEnd(10)} ${x.state.padEnd(9)} ${(hms(x.at) + age).padEnd(16)} ${rb}${x.why ? `  ${x.why}` : ''}`,
			);
		}
	}
	return lines.join('\n');
}
