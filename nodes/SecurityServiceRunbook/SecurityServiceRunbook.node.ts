import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { RUNBOOK } from '../../api/catalog/labels';
import { docsUrl } from '../docs';
import { router } from './actions/router';
import { TEMPORAL_CREDENTIAL_TEST, temporalApiTest } from '../temporalCredentialTest';
import { versionProperties } from './actions/versionDescription';

/**
 * Security Service Runbook: start, decide (approve / reject through the runbook's `decide` Update), signal (abort /
 * extend cooldown; approve / reject for older runbooks), query, describe and cancel attack-response runbooks, and
 * expiring blocks (add, extend or shorten, remove now, list) on Temporal, through the server's HTTP API and n8n's
 * request helpers (no runtime dependencies); Attack Report renders a finished runbook's result as one self-contained
 * HTML file (binary data, to mail or post it). One file per operation under actions/ (router.ts picks it), Temporal's
 * HTTP API in transport/. The plan never carries credentials: the worker holds them.
 */
export class SecurityServiceRunbook implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Security Service Runbook',
		name: 'securityServiceRunbook',
		icon: { light: 'file:securityServiceRunbook.svg', dark: 'file:securityServiceRunbook.dark.svg' },
		group: ['transform'],
		version: 1,
		documentationUrl: docsUrl('runbook-plans'),
		subtitle: RUNBOOK.subtitle,
		description:
			'Start, approve, signal, query and cancel durable attack-response runbooks, and add expiring blocks, on Temporal',
		defaults: { name: 'Security Service Runbook' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'temporalApi', required: true, testedBy: 'temporalApiTest' }],
		properties: versionProperties,
	};

	methods = { credentialTest: { [TEMPORAL_CREDENTIAL_TEST]: temporalApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
