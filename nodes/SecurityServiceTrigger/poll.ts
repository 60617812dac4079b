import {
	NodeApiError,
	NodeOperationError,
	type IDataObject,
	type INodeExecutionData,
	type IPollFunctions,
	type JsonObject,
} from 'n8n-workflow';
import { triggerText } from '../../api/catalog/labels';
import { formatYmdhms } from '../../api/catalog/rules';
import { SecurityServiceError, ValidationError } from '../../api/errors';
import { idProblem } from '../../api/limits';
import { withReadableForms } from '../SecurityService/actions/readable';
import { CLIENT_AUTH_STANDIN, getClient } from '../SecurityService/transport';
import { attackerFields, domainPortsFor } from './attackers';
import { returnChecker } from './returns';
import { sampleItem, triggerError } from './sample';

/**
 * One poll of the Security Service Trigger: the sites' entries read (paged, one site after another), new ones emitted
 * once (ids remembered in the node's static data), Attack Started items completed with their attackers; in a manual
 * test the newest entry, else the site's last past event or a sample, both marked `test_event`.
 */

/** Most alert ids remembered per trigger node (oldest dropped first). */
export const MAX_REMEMBERED = 2000;
const PAGE_SIZE = 50;
const MAX_PAGES = 200;
const DAY = 86400;
/** Most sites one trigger watches (each poll reads every one of them). */
export const MAX_SITES = 50;

/** Where an entry's site rides until its item is shaped (never in an output). */
const SITE = '__site';

export type EventKind = 'newDdosEvent' | 'attackStarted' | 'attackStopped' | 'newFlowDownAlert';

interface TriggerState {
	initialized?: boolean;
	event?: string;
	siteId?: string;
	seen?: string[];
}

async function fetchEntries(
	ctx: IPollFunctions,
	event: EventKind,
	siteId: string,
	lookbackHours: number,
): Promise<IDataObject[]> {
	const client = await getClient(ctx);
	const now = Math.floor(Date.now() / 1000);
	const opts = { accessToken: CLIENT_AUTH_STANDIN };
	if (event === 'newFlowDownAlert') {
		const span = Math.min(lookbackHours * 3600, 90 * DAY);
		const params = { site_id: siteId, start_time: String(now - span), end_time: String(now), status: 2 as const };
		client.validate('dashboard.flowDownEvents', params);
		return (await client.call('dashboard.flowDownEvents', params, opts)) as IDataObject[];
	}
	const span = Math.min(lookbackHours * 3600, 31 * DAY);
	const base = {
		site_id: siteId,
		start_time: formatYmdhms(now - span),
		end_time: formatYmdhms(now),
		status: event === 'attackStarted' ? 'ongoing' : event === 'attackStopped' ? 'stopped' : 'all',
	} as const;
	client.validate('dashboard.ddosEvents', { ...base, start: 0, num: PAGE_SIZE });
	const out: IDataObject[] = [];
	let start = 0;
	for (let page = 0; page < MAX_PAGES; page++) {
		const r = (await client.call('dashboard.ddosEvents', { ...base, start, num: PAGE_SIZE }, opts)) as {
			events: IDataObject[];
			total: number;
		};
		out.push(...r.events);
		start += r.events.length;
		if (r.events.length < PAGE_SIZE || start >= r.total) break;
	}
	// The status filter is applied by the service; check it again (status 1 ongoing, 0 stopped).
	if (event === 'attackStarted') return out.filter((e) => Number(e.status) === 1);
	if (event === 'attackStopped') return out.filter((e) => Number(e.status) === 0);
	return out;
}

type Ctx = IPollFunctions;

/** The Site IDs parameter: one or more, each checked (no request before they pass). */
function sitesOf(ctx: Ctx): string[] {
	const sites = [
		...new Set(
			String(ctx.getNodeParameter('site_id') ?? '')
				.split(/[\s,;]+/)
				.map((x) => x.trim())
				.filter(Boolean),
		),
	];
	if (!sites.length) throw new NodeOperationError(ctx.getNode(), triggerText.siteRequired);
	if (sites.length > MAX_SITES)
		throw new NodeOperationError(ctx.getNode(), triggerText.tooManySites(sites.length, MAX_SITES));
	for (const site of sites) {
		const problem = idProblem(site);
		if (problem) throw new NodeOperationError(ctx.getNode(), triggerText.badSite(site, problem));
	}
	return sites;
}

/** A poll's failure in the user's words (sample.ts); the detail n8n shows never carries an operation id. */
function failWith(ctx: Ctx) {
	return (error: unknown): never => {
		const { message, description } = triggerError(error);
		if (error instanceof ValidationError) throw new NodeOperationError(ctx.getNode(), message, { description });
		if (error instanceof SecurityServiceError)
			throw new NodeApiError(
				ctx.getNode(),
				{ message, ...('code' in error ? { code: error.code } : {}) } as JsonObject,
				{ message, description },
			);
		throw new NodeOperationError(ctx.getNode(), message, { description });
	};
}

/** Reading the sites' entries and turning entries into items (Attack Started: with their attackers). */
function reader(ctx: Ctx, event: EventKind, sites: string[]) {
	const fail = failWith(ctx);
	const read = async (lookback: number, kind: EventKind) => {
		const out: IDataObject[] = [];
		// Each entry remembers its site: several sites are read one after another (one site's failure fails the poll).
		for (const site of sites)
			for (const e of await fetchEntries(ctx, kind, site, lookback).catch(fail)) out.push({ ...e, [SITE]: site });
		return out;
	};
	// Each item names its site and event, and carries readable forms next to the wire values.
	const opId = event === 'newFlowDownAlert' ? 'dashboard.flowDownEvents' : 'dashboard.ddosEvents';
	const shape = (e: IDataObject): IDataObject => {
		const { [SITE]: site, ...rest } = e;
		return { site_id: site as string, event, ...withReadableForms(opId, rest) };
	};
	// Attack Started: what a responder needs next (attacking sources and ranges, domain-ports), one detail
	// request per emitted event.
	const emit = async (list: IDataObject[]) => {
		if (event !== 'attackStarted') return list.map(shape);
		const topN = Number(ctx.getNodeParameter('topSources', 10));
		const dps = String(ctx.getNodeParameter('domainPortIds', '') ?? '');
		const client = await getClient(ctx);
		const returnOf = await returnChecker(ctx);
		const out: IDataObject[] = [];
		for (const e of list) {
			const { top_sources: top, ...lead } = await attackerFields(client, e, {
				topN,
				domainPortIds: domainPortsFor(dps, String(e[SITE])),
			}).catch((error: unknown) => fail(error));
			// What a responder maps next comes first (ranges, domain-ports), the event, then the long source list.
			const shaped = shape(e);
			const runbook_return = await returnOf(String(shaped.site_id), lead.attacking_sources as string[]);
			out.push({ site_id: shaped.site_id, event, ...lead, runbook_return, ...shaped, top_sources: top });
		}
		return out;
	};
	return { read, emit };
}

/**
 * Manual test: a real sample (the newest entry), without touching the remembered ids. Nothing matching now (no
 * ongoing attack): the most recent DDoS event of the last 31 days; none at all: a sample item of the same shape
 * (`sample: true`). Both are marked `test_event: true`, so a write step on them refuses unless told otherwise.
 */
async function manualItems(
	ctx: Ctx,
	event: EventKind,
	sites: string[],
	entries: IDataObject[],
	r: ReturnType<typeof reader>,
): Promise<IDataObject[]> {
	const newest = entries[entries.length - 1];
	if (newest) return await r.emit([newest]);
	if (event !== 'newFlowDownAlert') {
		const past = (await r.read(31 * 24, 'newDdosEvent')).sort(
			(a, b) => Number(a.start_time ?? 0) - Number(b.start_time ?? 0),
		);
		const recent = past[past.length - 1];
		if (recent)
			return (await r.emit([recent])).map((i) => ({
				test_event: true,
				test_note: triggerText.pastEvent(event),
				...i,
			}));
	}
	return [
		sampleItem(event, sites[0], domainPortsFor(String(ctx.getNodeParameter('domainPortIds', '') ?? ''), sites[0])),
	];
}

/** The entries not seen by an earlier poll of the same settings; remembers the current ones. */
function freshEntries(ctx: Ctx, event: EventKind, siteId: string, entries: IDataObject[]): IDataObject[] {
	const state = ctx.getWorkflowStaticData('node') as TriggerState;
	if (state.event !== event || state.siteId !== siteId) {
		// New activation or changed settings: remember what exists now, replay nothing.
		state.initialized = false;
		state.seen = [];
	}
	const seen = new Set(state.seen ?? []);
	const key = (e: IDataObject) => `${event}:${String(e.alert_id)}`;
	// Only the newest MAX_REMEMBERED entries count, and all of their ids are kept (ids that left the window are
	// dropped first): an id dropped while its entry is still listed would be emitted again by the next poll.
	const current = entries.slice(-MAX_REMEMBERED);
	const fresh = state.initialized ? current.filter((e) => !seen.has(key(e))) : [];
	const currentKeys = current.map(key);
	const listed = new Set(currentKeys);
	state.seen = [...(state.seen ?? []).filter((k) => !listed.has(k)), ...currentKeys].slice(-MAX_REMEMBERED);
	state.initialized = true;
	state.event = event;
	state.siteId = siteId;
	return fresh;
}

export async function pollTrigger(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
	const event = this.getNodeParameter('event') as EventKind;
	const sites = sitesOf(this);
	const lookbackHours = Number(this.getNodeParameter('lookbackHours', 24)) || 24;
	const r = reader(this, event, sites);
	const entries = await r.read(lookbackHours, event);
	// Oldest first by the time that makes an entry news: its end for Attack Stopped, its start otherwise.
	const at = event === 'attackStopped' ? 'end_time' : 'start_time';
	entries.sort((a, b) => Number(a[at] ?? 0) - Number(b[at] ?? 0));

	if (this.getMode() === 'manual')
		return [this.helpers.returnJsonArray(await manualItems(this, event, sites, entries, r))];
	const fresh = freshEntries(this, event, sites.join(','), entries);
	return fresh.length ? [this.helpers.returnJsonArray(await r.emit(fresh))] : null;
}
