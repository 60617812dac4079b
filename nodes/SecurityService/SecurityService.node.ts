import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { router } from './actions/router';
import { versionProperties } from './actions/versionDescription';

export class SecurityService implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Security Service',
		name: 'securityService',
		icon: { light: 'file:securityService.svg', dark: 'file:securityService.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{$parameter["resource"] + ": " + $parameter["operation"]}}',
		description: 'Configure DDoS protection and read attack data through the Security Service Open API',
		defaults: { name: 'Security Service' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'securityServiceApi', required: true }],
		properties: versionProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
