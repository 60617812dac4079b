import type {
	IAuthenticateGeneric,
	ICredentialDataDecryptedObject,
	ICredentialType,
	IDataObject,
	IHttpRequestHelper,
	INodeProperties,
	Icon,
} from 'n8n-workflow';
import { createClient, DEFAULT_AUTH_FAILURE_CODES } from '../api/client';
import type { TokenResult } from '../api/tokens';
import type { HttpRequest } from '../api/transport/types';
import { CALL_DEADLINE, preAuthLimits, sendBounded } from '../nodes/SecurityService/transport/request';

/**
 * Security Service API credential.
 *
 * App token: app_id + secret → POST /oauth/credit/token. User token: app_id + refresh token →
 * POST /oauth/refresh_token; the service rotates the refresh token on every renewal and the new one is returned
 * from preAuthentication, which n8n persists into this credential together with the access token.
 * Token Source "From the cluster's token owner": the token is the tenant workflow's (docs/worker/tenants.md "Tenants in
 * n8n"), asked through the node's Temporal API credential and opened with the Token Key; nothing is stored here.
 */
export class SecurityServiceApi implements ICredentialType {
	name = 'securityServiceApi';

	displayName = 'Security Service API';

	icon: Icon = {
		light: 'file:../nodes/SecurityService/securityService.svg',
		dark: 'file:../nodes/SecurityService/securityService.dark.svg',
	};

	documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-security-service#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'https://api.example.com',
			description: 'HTTPS address of the service, without /api or /oauth',
		},
		{
			displayName: 'Token Source',
			name: 'source',
			type: 'options',
			options: [
				{
					name: 'This Credential',
					value: 'own',
					description: 'n8n obtains and renews the token itself with the fields below',
				},
				{
					name: "From the Cluster's Token Owner (Temporal)",
					value: 'cluster',
					description:
						"The token of the customer's tenant workflow, asked through the node's Temporal API credential; never renewed here, so n8n and the workers never lock each other out",
				},
			],
			default: 'own',
		},
		{
			displayName: 'Customer ID',
			name: 'customerId',
			type: 'string',
			default: '',
			required: true,
			displayOptions: { show: { source: ['cluster'] } },
			description: 'The customer_id of the installed customer (its tenant workflow is tenant-<customer_id>)',
		},
		{
			displayName: 'Token Key',
			name: 'tokenKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			displayOptions: { show: { source: ['cluster'] } },
			placeholder: 'k1:BASE64',
			description:
				"What `secsvc tenants token-key <customer_id>` prints: opens this customer's access tokens, nothing else",
		},
		{
			displayName: 'App ID',
			name: 'appId',
			type: 'string',
			default: '',
			required: true,
			displayOptions: { show: { source: ['own'] } },
			description: 'The app_id shown on the developer platform',
		},
		{
			displayName: 'Secret',
			name: 'secret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			displayOptions: { show: { source: ['own'] } },
			description: 'The app secret shown on the developer platform',
		},
		{
			displayName: 'Token Kind',
			name: 'grantType',
			type: 'options',
			options: [
				{
					name: 'App Token (Client Credential)',
					value: 'app',
					description: 'Acts for the app itself (SPE portal operations)',
				},
				{ name: 'User Token (Refresh Token)', value: 'user', description: 'Acts for an installed customer' },
			],
			default: 'app',
			displayOptions: { show: { source: ['own'] } },
		},
		{
			displayName: 'Refresh Token',
			name: 'refreshToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			displayOptions: { show: { grantType: ['user'], source: ['own'] } },
			description:
				'Refresh token from the authorization-code exchange. The service replaces it on every renewal; n8n stores the new one here automatically.',
		},
		{
			displayName: 'Auth Failure Codes',
			name: 'authFailureCodes',
			type: 'string',
			default: DEFAULT_AUTH_FAILURE_CODES.join(','),
			description:
				'Envelope codes meaning "access token expired or rejected" (comma-separated). The spec lists no codes; on these codes the node gets a fresh token and retries once.',
		},
		{
			displayName: 'Protected Ranges',
			name: 'protectedRanges',
			type: 'string',
			default: '',
			placeholder: '198.51.100.0/24, 192.0.2.10',
			description:
				"Addresses, start-end ranges or CIDRs (comma-separated) that no block made with this credential may ever cover: the customer's own networks and hosts (the service does not list them), offices, partners, monitoring. Checked before anything is sent, together with the special ranges and the site's own addresses the service shows.",
		},
		{
			displayName: 'Access Token',
			name: 'accessToken',
			type: 'hidden',
			typeOptions: { expirable: true, password: true },
			default: '',
		},
		{
			displayName: 'Token Expires At',
			name: 'expiresAt',
			type: 'hidden',
			default: 0,
		},
	];

	async preAuthentication(this: IHttpRequestHelper, credentials: ICredentialDataDecryptedObject): Promise<IDataObject> {
		// A credential whose token comes from the cluster never asks the service for one: the node's transport takes it
		// from the tenant workflow (nodes/SecurityService/transport/clusterToken.ts) and never runs this step.
		if (credentials.source === 'cluster')
			throw new Error(
				"Token Source: the token comes from the cluster's token owner (Temporal); this credential never requests one",
			);
		const helpers = this.helpers;
		const client = createClient({
			baseUrl: String(credentials.baseUrl ?? ''),
			transport: async (req: HttpRequest) => await sendBounded((o) => helpers.httpRequest(o), req),
			retries: 1,
			// Within the node call's bound when the node's transport asks (its deadline), else 2 × 15 s.
			...preAuthLimits(credentials[CALL_DEADLINE]),
		});
		const appId = String(credentials.appId ?? '');
		let token: TokenResult;
		if (credentials.grantType === 'user') {
			token = await client.call<TokenResult>('authorization.refreshToken', {
				app_id: appId,
				refresh_token: String(credentials.refreshToken ?? ''),
			});
		} else {
			token = await client.call<TokenResult>('authorization.appToken', {
				app_id: appId,
				secret: String(credentials.secret ?? ''),
			});
		}
		const out: IDataObject = {
			accessToken: token.access_token,
			expiresAt: Date.now() + token.expires_in * 1000,
		};
		// A rotated refresh token is returned so n8n saves it with the access token; the old one stops working.
		if (credentials.grantType === 'user' && token.refresh_token) out.refreshToken = token.refresh_token;
		return out;
	}

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			qs: {
				access_token: '={{$credentials.accessToken}}',
			},
		},
	};

	// The Test button runs the nodes' credential test (testedBy: securityServiceApiTest in
	// nodes/SecurityService/credentialTest/): for app tokens a NEW token from the entered App ID and Secret, never the
	// stored one; for user tokens never a renewal (it would replace the refresh token).
}
