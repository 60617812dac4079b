import {
	NodeApiError,
	NodeConnectionTypes,
	NodeOperationError,
	type IDataObject,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	type IPollFunctions,
	type JsonObject,
} from 'n8n-workflow';
import { docsUrl } from '../docs';
import { SITE_ID_HINT, TRIGGER_EVENTS, triggerText } from '../../api/catalog/labels';
import { idProblem } from '../../api/limits';
import { formatYmdhms } from '../../api/catalog/rules';
import { withReadableForms } from '../SecurityService/actions/readable';
import { attackerFields, domainPortsFor } from './attackers';
import { sampleItem, triggerError } from './sample';
import { SecurityServiceError, ValidationError } from '../../api/errors';
import { CREDENTIAL_TEST, securityServiceApiTest } from '../SecurityService/credentialTest/index';
import { tokenSourceProperty } from '../SecurityService/credentialSlots';
import { TEMPORAL_CREDENTIAL_TEST, temporalApiTest } from '../SecurityServiceRunbook/credentialTest/index';
import { getClient, CLIENT_AUTH_STANDIN } from '../SecurityService/transport';

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

export class SecurityServiceTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Security Service Trigger',
		name: 'securityServiceTrigger',
		icon: { light: 'file:securityServiceTrigger.svg', dark: 'file:securityServiceTrigger.dark.svg' },
		group: ['trigger'],
		version: 1,
		documentationUrl: docsUrl('nodes-and-operations'),
		subtitle: `={{ ${JSON.stringify(Object.fromEntries(TRIGGER_EVENTS.map((e) => [e.value, e.action])))}[$parameter["event"]] || "" }}`,
		description: 'Block IPs, switch protections, manage HTTP filters and react to DDoS attacks and flow-down alerts',
		defaults: { name: 'Security Service Trigger' },
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{
				name: 'securityServiceApi',
				displayName: 'Security Service Credential',
				required: true,
				testedBy: 'securityServiceApiTest',
			},
			// Shown only when the node's Token Source is the cluster (credentialSlots.ts).
			{
				name: 'temporalApi',
				displayName: 'Temporal Credential (Cluster Token)',
				required: true,
				testedBy: 'temporalApiTest',
				displayOptions: { show: { tokenSource: ['cluster'] } },
			},
		],
		properties: [
			tokenSourceProperty,
			{
				displayName: 'Event',
				name: 'event',
				type: 'options',
				noDataExpression: true,
				options: TRIGGER_EVENTS.map((e) => ({
					name: e.name,
					value: e.value,
					action: e.action,
					description: e.description,
				})),
				default: 'newDdosEvent',
				description: triggerText.event,
			},
			{
				displayName: 'Site IDs',
				name: 'site_id',
				type: 'string',
				default: '',
				required: true,
				placeholder: 'e.g. 20001, 20002',
				description: triggerText.siteIds(SITE_ID_HINT, MAX_SITES),
			},
			{
				displayName: 'Top Attacking Sources',
				name: 'topSources',
				type: 'number',
				typeOptions: { minValue: 0, maxValue: 100 },
				default: 10,
				displayOptions: { show: { event: ['attackStarted'] } },
				description:
					"How many of the event's strongest sources (its threat map, by bps) each item carries, also merged into ranges ready for IP Blacklist › Add. 0: none (no extra request).",
			},
			{
				displayName: 'Domain-Port IDs',
				name: 'domainPortIds',
				type: 'string',
				default: '',
				placeholder: 'e.g. 30001, 30002 (or 20001:30001, 20002:30002)',
				displayOptions: { show: { event: ['attackStarted'] } },
				description: triggerText.domainPortIds,
			},
			{
				displayName: 'Look Back (Hours)',
				name: 'lookbackHours',
				type: 'number',
				typeOptions: { minValue: 1 },
				default: 24,
				description:
					'How far back each poll looks (at most 31 days for DDoS events, 90 days for flow-down alerts). Alerts already seen are skipped by alert_id.',
			},
		],
	};

	methods = {
		credentialTest: { [CREDENTIAL_TEST]: securityServiceApiTest, [TEMPORAL_CREDENTIAL_TEST]: temporalApiTest },
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		const event = this.getNodeParameter('event') as EventKind;
		const sites = [
			...new Set(
				String(this.getNodeParameter('site_id') ?? '')
					.split(/[\s,;]+/)
					.map((x) => x.trim())
					.filter(Boolean),
			),
		];
		const lookbackHours = Number(this.getNodeParameter('lookbackHours', 24)) || 24;
		if (!sites.length) throw new NodeOperationError(this.getNode(), triggerText.siteRequired);
		if (sites.length > MAX_SITES)
			throw new NodeOperationError(this.getNode(), triggerText.tooManySites(sites.length, MAX_SITES));
		for (const site of sites) {
			const problem = idProblem(site);
			if (problem) throw new NodeOperationError(this.getNode(), triggerText.badSite(site, problem));
		}
		const siteId = sites.join(',');

		const fail = (error: unknown): never => {
			const { message, description } = triggerError(error);
			if (error instanceof ValidationError) throw new NodeOperationError(this.getNode(), message, { description });
			if (error instanceof SecurityServiceError)
				// The detail n8n shows is this object: the user's words, never the client's operation id.
				throw new NodeApiError(
					this.getNode(),
					{ message, ...('code' in error ? { code: error.code } : {}) } as JsonObject,
					{
						message,
						description,
					},
				);
			throw new NodeOperationError(this.getNode(), message, { description });
		};
		const read = async (lookback: number, kind: EventKind) => {
			const out: IDataObject[] = [];
			// Each entry remembers its site: several sites are read one after another (one site's failure fails the poll).
			for (const site of sites)
				for (const e of await fetchEntries(this, kind, site, lookback).catch(fail)) out.push({ ...e, [SITE]: site });
			return out;
		};
		const entries = await read(lookbackHours, event);
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
			const topN = Number(this.getNodeParameter('topSources', 10));
			const dps = String(this.getNodeParameter('domainPortIds', '') ?? '');
			const client = await getClient(this);
			const out: IDataObject[] = [];
			for (const e of list) {
				const { top_sources: top, ...lead } = await attackerFields(client, e, {
					topN,
					domainPortIds: domainPortsFor(dps, String(e[SITE])),
				}).catch((error: unknown) => fail(error));
				// What a responder maps next comes first (ranges, domain-ports), the event, then the long source list.
				const shaped = shape(e);
				out.push({ site_id: shaped.site_id, event, ...lead, ...shaped, top_sources: top });
			}
			return out;
		};
		// Oldest first by the time that makes an entry news: its end for Attack Stopped, its start otherwise.
		const at = event === 'attackStopped' ? 'end_time' : 'start_time';
		entries.sort((a, b) => Number(a[at] ?? 0) - Number(b[at] ?? 0));

		if (this.getMode() === 'manual') {
			// Manual test: a real sample (the newest entry), without touching the remembered ids. Nothing matching now
			// (no ongoing attack): the most recent DDoS event of the last 31 days, marked as such; none at all: a sample item
			// of the same shape, marked `sample: true`, so the next nodes can be mapped.
			const newest = entries[entries.length - 1];
			if (newest) return [this.helpers.returnJsonArray(await emit([newest]))];
			if (event !== 'newFlowDownAlert') {
				const past = (await read(31 * 24, 'newDdosEvent')).sort(
					(a, b) => Number(a.start_time ?? 0) - Number(b.start_time ?? 0),
				);
				const recent = past[past.length - 1];
				if (recent)
					return [
						this.helpers.returnJsonArray(
							(await emit([recent])).map((i) => ({ test_event: true, test_note: triggerText.pastEvent(event), ...i })),
						),
					];
			}
			return [
				this.helpers.returnJsonArray([
					sampleItem(
						event,
						sites[0],
						domainPortsFor(String(this.getNodeParameter('domainPortIds', '') ?? ''), sites[0]),
					),
				]),
			];
		}

		const state = this.getWorkflowStaticData('node') as TriggerState;
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
		return fresh.length ? [this.helpers.returnJsonArray(await emit(fresh))] : null;
	}
}
