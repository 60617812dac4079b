import { NodeConnectionTypes, type INodeType, type INodeTypeDescription } from 'n8n-workflow';
import { SITE_ID_HINT, TRIGGER_EVENTS, triggerText } from '../../api/catalog/labels';
import { docsUrl } from '../docs';
import { tokenSourceProperty } from '../SecurityService/credentialSlots';
import { CREDENTIAL_TEST, securityServiceApiTest } from '../SecurityService/credentialTest/index';
import { TEMPORAL_CREDENTIAL_TEST, temporalApiTest } from '../temporalCredentialTest';
import { MAX_SITES, pollTrigger } from './poll';
import { CHECK_RETURNS } from './returns';

/** The polling trigger's description; each poll is poll.ts. */
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
			// The same credential for Check Runbook Returns when the token is this credential's own (returns.ts).
			{
				name: 'temporalApi',
				displayName: 'Temporal Credential (Runbook Returns)',
				required: true,
				testedBy: 'temporalApiTest',
				displayOptions: { show: { tokenSource: ['credential'], event: ['attackStarted'], [CHECK_RETURNS]: [true] } },
			},
		],
		properties: [
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
				displayName: 'Check Runbook Returns',
				name: CHECK_RETURNS,
				type: 'boolean',
				default: false,
				displayOptions: { show: { event: ['attackStarted'] } },
				description:
					"Whether each item says if the attack is a return: the site's last runbook reverted within its plan's hold-down (a runbook started now re-arms from it), which runbook, and which top sources it blocked. Reads Temporal with the Temporal API credential.",
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
			// Last: rarely changed.
			tokenSourceProperty,
		],
	};

	methods = {
		credentialTest: { [CREDENTIAL_TEST]: securityServiceApiTest, [TEMPORAL_CREDENTIAL_TEST]: temporalApiTest },
	};

	poll = pollTrigger;
}
