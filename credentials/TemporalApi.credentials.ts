import type {
	ICredentialDataDecryptedObject,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
	Icon,
} from 'n8n-workflow';
import { addressProblem, temporalTlsOptions } from '../nodes/SecurityServiceRunbook/transport/tls';

/**
 * Temporal connection for the Security Service Runbook node: the server's HTTP API (the dev server exposes it with
 * `temporal server start-dev --http-port N`; a self-hosted cluster on the frontend's HTTP port, mutual TLS with a
 * client certificate; Temporal Cloud on the namespace endpoint with an API key), a namespace, an optional API key
 * (sent as a bearer token) and optional TLS material as PEM text: the server's CA, a client certificate and its key
 * (given to n8n's request helper as HTTPS agent options).
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
		{
			displayName: 'Payload Key',
			name: 'payloadSecretKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				"For verified approvals: the newest key of the workers' SECSVC_PAYLOAD_KEYS (id:BASE64). Runbook › Decide seals a decision that carries an ID token with it, so the token is encrypted in the runbook's history",
		},
		{
			displayName: 'Server CA Certificate',
			name: 'caCertificate',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			placeholder: '-----BEGIN CERTIFICATE-----',
			description:
				"PEM certificate of the CA that signed the server's certificate; leave empty for a public CA (Temporal Cloud)",
		},
		{
			displayName: 'Client Certificate',
			name: 'clientCertificate',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			placeholder: '-----BEGIN CERTIFICATE-----',
			description: 'PEM client certificate for mutual TLS (a cluster whose frontend requires one)',
		},
		{
			displayName: 'Client Private Key',
			name: 'clientPrivateKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: "The client certificate's unencrypted PEM private key",
		},
	];

	/** Bearer API key and TLS agent options on every request (the credential Test's too). A bad TLS field: one line naming it. */
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> {
		const bad = addressProblem(credentials.address);
		if (bad) throw new Error(bad);
		const { options, problem } = temporalTlsOptions(credentials);
		if (problem) throw new Error(problem);
		const apiKey = typeof credentials.apiKey === 'string' ? credentials.apiKey : '';
		return {
			...requestOptions,
			headers: { ...requestOptions.headers, ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) },
			...(options ? { agentOptions: { ...requestOptions.agentOptions, ...options } } : {}),
		};
	}

	// No declarative `test`: the nodes' `temporalApiTest` (nodes/temporalCredentialTest.ts) names the
	// problem in words (the gRPC port, a missing scheme, a TLS field) where n8n would show the raw parser code.
}
