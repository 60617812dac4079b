/**
 * A local OpenID Connect provider for the demo, the sandbox and the tests: the certified `oidc-provider` package on
 * loopback, issuing real signed ID tokens (authorization code, device code) for people and, for services, JWT access
 * tokens (client credentials) whose `permissions` claim (`namespace:role`) Temporal's default claim mapper reads.
 * Its keys can live in a file so tokens stay valid across restarts (the cluster's frontend caches the JWKS).
 *
 * A person logs in on a page listing the provider's people (no passwords: it is a loopback provider for demo people),
 * or at once when the login names a known person (`login_hint`; `nextLogin` for device and browser logins in tests).
 * Introspection (RFC 7662) and revocation (RFC 7009) are on.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Interaction {
	uid: string;
	params: Record<string, string>;
}
interface GrantLike {
	addOIDCScope(scope: string): void;
	save(): Promise<string>;
}
interface ProviderLike {
	callback(): (req: IncomingMessage, res: ServerResponse) => void;
	interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
	interactionFinished(req: IncomingMessage, res: ServerResponse, result: unknown, opts?: unknown): Promise<void>;
	Grant: new (o: { accountId: string; clientId: string }) => GrantLike;
}
type ProviderClass = new (issuer: string, config: unknown) => ProviderLike;
// oidc-provider ships no types of its own: the few calls used here (oidc-provider.d.mts). Loaded when a provider
// starts, so the `secsvc` command (whose compiled cli.mjs holds this module) does not load it for every command.
const loadProvider = async () => (await import('oidc-provider')).default as unknown as ProviderClass;

/** The loopback redirect of every login client (RFC 8252: any port). */
export const REDIRECT_URI = 'http://127.0.0.1/callback';

export interface Person {
	email: string;
	groups: string[];
}
/** A service that gets access tokens with the client credentials grant (a worker, the CLI, n8n, an operator). */
export interface ServiceClient {
	id: string;
	secret: string;
	/** Temporal permissions (`namespace:role`, `temporal-system:admin`), in the token's `permissions` claim. */
	permissions: string[];
}

export interface LocalProviderOptions {
	people: Record<string, Person>;
	/** Confidential login clients (authorization code): their ids are the ID tokens' audiences. */
	clients?: string[];
	services?: ServiceClient[];
	/** Default 0 (any free port) on 127.0.0.1. */
	port?: number;
	/** Where the signing key is kept (created when missing); without it a fresh key per start. */
	keyFile?: string;
	/** The `aud` of service access tokens (the resource they are for); default `https://temporal.secsvc.internal`. */
	serviceAudience?: string;
	/** Lifetime of service access tokens, seconds (default 600). */
	serviceTokenSeconds?: number;
}

export interface LocalProvider {
	issuer: string;
	jwksUri: string;
	serviceAudience: string;
	/** ID token lifetime in seconds for the next logins (expiry tests). */
	ttl: { idToken: number };
	/** Who logs in next when a login names nobody (device and browser logins driven by tests). */
	nextLogin?: string;
	clientSecret(clientId: string): string;
	close(): Promise<void>;
}

/** The secret of a confidential login client (loopback provider: derived from the id, never a real secret). */
export const clientSecretOf = (id: string) => `${id}-secret-for-tests-only-0123456789`;

function signingKey(file?: string): Record<string, unknown> {
	if (file && existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
	const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
	const key = { ...jwk, kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
	if (file) writeFileSync(file, JSON.stringify(key), { mode: 0o600 });
	return key;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startLocalProvider(o: LocalProviderOptions): Promise<LocalProvider> {
	const { people } = o;
	const Provider = await loadProvider();
	const services = new Map((o.services ?? []).map((s) => [s.id, s]));
	const serviceAudience = o.serviceAudience ?? 'https://temporal.secsvc.internal';
	const server = createServer();
	await new Promise<void>((r, j) => server.once('error', j).listen(o.port ?? 0, '127.0.0.1', r));
	const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	const ttl = { idToken: 600 };
	const provider = new Provider(issuer, {
		jwks: { keys: [signingKey(o.keyFile)] },
		clients: providerClients(o, services),
		claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'], profile: ['name'] },
		scopes: ['openid', 'email', 'groups', 'profile', 'offline_access'],
		conformIdTokenClaims: false, // the scopes' claims in the ID token itself (the worker reads only the ID token)
		findAccount: (_ctx: unknown, id: string) =>
			people[id]
				? {
						accountId: id,
						claims: () => ({ sub: id, email: people[id].email, email_verified: true, groups: people[id].groups }),
					}
				: undefined,
		// a service's Temporal permissions in its access token
		extraTokenClaims: (_ctx: unknown, token: { kind: string; clientId: string }) =>
			token.kind === 'ClientCredentials' && services.has(token.clientId)
				? { permissions: services.get(token.clientId)!.permissions }
				: undefined,
		features: providerFeatures(o, serviceAudience),
		pkce: { required: () => false },
		ttl: {
			IdToken: () => ttl.idToken,
			AccessToken: 600,
			ClientCredentials: o.serviceTokenSeconds ?? 600,
			AuthorizationCode: 60,
			Interaction: 600,
			Session: 600,
			Grant: 600,
		},
		interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
		cookies: { keys: [randomBytes(16).toString('hex')] },
	});
	const handle = provider.callback();
	const self: LocalProvider = {
		issuer,
		jwksUri: `${issuer}/jwks`,
		serviceAudience,
		ttl,
		clientSecret: (id) => services.get(id)?.secret ?? clientSecretOf(id),
		close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
	};
	server.on('request', (req: IncomingMessage, res: ServerResponse) => {
		if (!req.url?.startsWith('/interaction/')) return handle(req, res);
		void interaction(provider, people, self, req, res).catch((e) => {
			res.statusCode = 500;
			res.end(String(e));
		});
	});

	return self;
}

/** The provider's clients: the approvers' apps, the CLI's public native client and the services' (client credentials). */
function providerClients(o: LocalProviderOptions, services: Map<string, ServiceClient>) {
	return [
		...(o.clients ?? ['secsvc']).map((id) => ({
			client_id: id,
			client_secret: clientSecretOf(id),
			redirect_uris: [REDIRECT_URI],
			grant_types: ['authorization_code'],
			response_types: ['code'],
			token_endpoint_auth_method: 'client_secret_post',
		})),
		// the CLI's public native client: browser logins with a loopback redirect (any port) and device-code logins
		{
			client_id: 'secsvc-cli',
			application_type: 'native',
			token_endpoint_auth_method: 'none',
			grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
			response_types: ['code'],
			redirect_uris: [REDIRECT_URI],
		},
		...[...services.values()].map((s) => ({
			client_id: s.id,
			client_secret: s.secret,
			grant_types: ['client_credentials'],
			response_types: [],
			redirect_uris: [],
			token_endpoint_auth_method: 'client_secret_post',
		})),
	];
}

/** The provider's features: device logins, client credentials with JWT access tokens for the services' audience. */
function providerFeatures(o: LocalProviderOptions, serviceAudience: string) {
	return {
		devInteractions: { enabled: false },
		clientCredentials: { enabled: true },
		introspection: { enabled: true },
		revocation: { enabled: true },
		resourceIndicators: {
			enabled: true,
			defaultResource: () => serviceAudience,
			useGrantedResource: () => true,
			getResourceServerInfo: () => ({
				scope: 'temporal',
				audience: serviceAudience,
				accessTokenTTL: o.serviceTokenSeconds ?? 600,
				accessTokenFormat: 'jwt',
				jwt: { sign: { alg: 'RS256' } },
			}),
		},
		// the device flow's pages reduced to their forms
		deviceFlow: {
			enabled: true,
			userCodeConfirmSource: async (ctx: { body: string }, form: string) => void (ctx.body = form),
			successSource: async (ctx: { body: string }) => void (ctx.body = 'device login done'),
		},
	};
}

/** The person logs in and consents: at once when the login names them, else on a page listing the people. */
async function interaction(
	provider: ProviderLike,
	people: LocalProviderOptions['people'],
	self: LocalProvider,
	req: IncomingMessage,
	res: ServerResponse,
): Promise<void> {
	const d = await provider.interactionDetails(req, res);
	let accountId = people[d.params.login_hint] ? d.params.login_hint : self.nextLogin;
	if (req.method === 'POST') {
		let body = '';
		for await (const c of req) body += c;
		accountId = new URLSearchParams(body).get('account') ?? undefined;
	}
	if (!accountId || !people[accountId]) {
		res.setHeader('content-type', 'text/html; charset=utf-8');
		res.end(
			`<!doctype html><title>secsvc local login</title><h1>Log in (local demo provider)</h1>` +
				`<form method="post" action="/interaction/${esc(d.uid)}">` +
				Object.entries(people)
					.map(
						([id, p]) =>
							`<button name="account" value="${esc(id)}">${esc(p.email)} (${esc(p.groups.join(', '))})</button><br>`,
					)
					.join('') +
				`</form>`,
		);
		return;
	}
	const grant = new provider.Grant({ accountId, clientId: d.params.client_id });
	grant.addOIDCScope(d.params.scope);
	const grantId = await grant.save();
	await provider.interactionFinished(
		req,
		res,
		{ login: { accountId }, consent: { grantId } },
		{ mergeWithLastSubmission: false },
	);
}
