import type { IAuthenticateGeneric, ICredentialTestRequest, ICredentialType, INodeProperties, Icon } from 'n8n-workflow';

/**
 * Temporal connection for the Security Service Runbook node: the server's HTTP API (the dev server exposes it with
 * `temporal server start-dev --http-port N`; Temporal Cloud on the namespace endpoint), a namespace and an
 * optional API key (sent as a bearer token).
 */
export class TemporalApi implements ICredentialType {
	name = 'temporalApi';

	displayName = 'Temporal API';

	icon: Icon = {
		light: 'file:../nodes/SecurityServiceRunbook/securityServiceRunbook.svg',
		dark: 'file:../nodes/SecurityServiceRunbook/securityServiceRunbook.dark.svg',
	};

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-security-service#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'HTTP API Address',
			name: 'address',
			type: 'string',
			default: 'http://127.0.0.1:7243',
			required: true,
			placeholder: 'http://127.0.0.1:7243',
			description: "Base URL of the Temporal server's HTTP API (not the gRPC port), without /api/v1",
		},
		{
			displayName: 'Namespace',
			name: 'namespace',
			type: 'string',
			default: 'default',
			required: true,
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'Sent as "Authorization: Bearer <key>"; leave empty for a local dev server',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '={{$credentials.apiKey ? "Bearer " + $credentials.apiKey : ""}}',
			},
		},
	};

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.address.replace(/\\/+$/, "")}}',
			url: '=/api/v1/namespaces/{{encodeURIComponent($credentials.namespace)}}',
			method: 'GET',
		},
	};
}
