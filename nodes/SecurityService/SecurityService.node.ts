import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { docsUrl } from '../docs';
import { listSearch, loadOptions } from './actions/listSearch';
import { router } from './actions/router';
import { SUBTITLE } from './actions/resources';
import { versionProperties } from './actions/versionDescription';
import { TEMPORAL_CREDENTIAL_TEST, temporalApiTest } from '../temporalCredentialTest';
import { CREDENTIAL_TEST, securityServiceApiTest } from './credentialTest/index';

export class SecurityService implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Security Service',
		name: 'securityService',
		icon: { light: 'file:securityService.svg', dark: 'file:securityService.dark.svg' },
		group: ['transform'],
		version: 1,
		documentationUrl: docsUrl('nodes-and-operations'),
		subtitle: SUBTITLE,
		description:
			'Block IPs, switch protections, manage HTTP filters and read DDoS attacks through the Security Service Open API',
		defaults: { name: 'Security Service' },
		// As an AI tool: the description the agent gets when its Tool Description is set manually (n8n's default text)
		// says what every write obeys, so the model does not try what the guard refuses.
		usableAsTool: {
			replacements: {
				description:
					"Block or unblock IP addresses and ranges, switch protections, manage HTTP filters and read DDoS attacks through the Security Service Open API. Every block is checked before it is sent and refused, naming the rule: wider than /16, a special range (0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, multicast, reserved), a protected range, or the site's own addresses. An allow-list entry obeys the first two rules.",
			},
		},
		inputs: [NodeConnectionTypes.Main],
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
		properties: versionProperties,
	};

	methods = {
		credentialTest: { [CREDENTIAL_TEST]: securityServiceApiTest, [TEMPORAL_CREDENTIAL_TEST]: temporalApiTest },
		listSearch,
		loadOptions,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
