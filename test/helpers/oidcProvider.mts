/**
 * A real OpenID Connect provider on loopback for the approval tests: the certified `oidc-provider` package, on
 * 127.0.0.1 port 0, issuing real signed ID tokens through the authorization code flow. The person's login is done
 * programmatically through the provider's interactions API (interactionDetails / interactionFinished with a grant):
 * the test says who logs in with `login_hint`. Nothing here is a stand-in for the verification under test.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
// oidc-provider ships no types of its own (@types/oidc-provider would pull koa's and express's): the few calls used here.
import ProviderModule from 'oidc-provider';

interface Interaction {
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
const Provider = ProviderModule as unknown as new (issuer: string, config: unknown) => ProviderLike;

export const REDIRECT_URI = 'http://127.0.0.1/callback';
export interface Person {
	email: string;
	groups: string[];
}

export interface TestProvider {
	issuer: string;
	/** ID token lifetime in seconds for the next logins (expiry tests). */
	ttl: { idToken: number };
	/** A real login of `accountId` with `nonce`, for `clientId`: the ID token the provider issues. */
	login(accountId: string, opts: { nonce?: string; clientId?: string }): Promise<string>;
	/** The person's side of a device-code login (RFC 8628): opens the verification address, confirms, logs in as `accountId`. */
	confirmDevice(verificationUriComplete: string, accountId: string): Promise<void>;
	/** The person's browser for a login address: logs in as `accountId` and follows the redirects, the last one to the CLI's loopback listener. */
	browse(loginUrl: string, accountId: string): Promise<void>;
	close(): Promise<void>;
}

export async function startProvider(
	people: Record<string, Person>,
	clients: string[] = ['secsvc', 'other-app'],
): Promise<TestProvider> {
	let deviceAccount = '';
	const server = createServer();
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	const ttl = { idToken: 600 };
	const provider = new Provider(issuer, {
		clients: [
			...clients.map((id) => ({
				client_id: id,
				client_secret: `${id}-secret-for-tests-only-0123456789`,
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
				redirect_uris: ['http://127.0.0.1/callback'],
			},
		],
		claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'], profile: ['name'] },
		scopes: ['openid', 'email', 'groups', 'profile'],
		conformIdTokenClaims: false, // the scopes' claims in the ID token itself (the worker reads only the ID token)
		findAccount: (_ctx: unknown, id: string) =>
			people[id]
				? {
						accountId: id,
						claims: () => ({ sub: id, email: people[id].email, email_verified: true, groups: people[id].groups }),
					}
				: undefined,
		features: {
			devInteractions: { enabled: false },
			// the device flow's pages reduced to their forms (the test's "browser" submits them)
			deviceFlow: {
				enabled: true,
				userCodeConfirmSource: async (ctx: { body: string }, form: string) => void (ctx.body = form),
				successSource: async (ctx: { body: string }) => void (ctx.body = 'device login done'),
			},
		},
		pkce: { required: () => false },
		ttl: {
			IdToken: () => ttl.idToken,
			AccessToken: 600,
			AuthorizationCode: 60,
			Interaction: 600,
			Session: 600,
			Grant: 600,
		},
		interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
		cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
	});
	const handle = provider.callback();
	server.on('request', (req: IncomingMessage, res: ServerResponse) => {
		if (!req.url?.startsWith('/interaction/')) return handle(req, res);
		// The person "logs in and consents": the interaction ends with their account and a grant for the asked scopes.
		void (async () => {
			try {
				const d = await provider.interactionDetails(req, res);
				const accountId = d.params.login_hint ?? deviceAccount;
				const grant = new provider.Grant({ accountId, clientId: d.params.client_id });
				grant.addOIDCScope(d.params.scope);
				const grantId = await grant.save();
				await provider.interactionFinished(
					req,
					res,
					{ login: { accountId }, consent: { grantId } },
					{ mergeWithLastSubmission: false },
				);
			} catch (e) {
				res.statusCode = 500;
				res.end(String(e));
			}
		})();
	});

	async function login(accountId: string, opts: { nonce?: string; clientId?: string }): Promise<string> {
		const clientId = opts.clientId ?? 'secsvc';
		const jar = new Map<string, string>();
		const get = async (url: string) => {
			const res = await fetch(url, {
				redirect: 'manual',
				headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
			});
			for (const c of res.headers.getSetCookie()) {
				const [kv] = c.split(';');
				const at = kv.indexOf('=');
				jar.set(kv.slice(0, at), kv.slice(at + 1));
			}
			await res.arrayBuffer();
			return res;
		};
		const q = new URLSearchParams({
			client_id: clientId,
			response_type: 'code',
			scope: 'openid email groups',
			redirect_uri: REDIRECT_URI,
			state: 'st',
			login_hint: accountId,
			...(opts.nonce ? { nonce: opts.nonce } : {}),
		});
		let url = `${issuer}/auth?${q}`;
		let code: string | null = null;
		for (let hop = 0; hop < 8 && !code; hop++) {
			const res = await get(url);
			const loc = res.headers.get('location');
			if (!loc) throw new Error(`oidc test login: HTTP ${res.status} at ${url} without a redirect`);
			url = new URL(loc, issuer).toString();
			if (url.startsWith(REDIRECT_URI)) code = new URL(url).searchParams.get('code');
		}
		if (!code) throw new Error(`oidc test login: no code (${url})`);
		const res = await fetch(`${issuer}/token`, {
			method: 'POST',
			body: new URLSearchParams({
				grant_type: 'authorization_code',
				code,
				redirect_uri: REDIRECT_URI,
				client_id: clientId,
				client_secret: `${clientId}-secret-for-tests-only-0123456789`,
			}),
		});
		const t = (await res.json()) as { id_token?: string; error?: string; error_description?: string };
		if (!t.id_token) throw new Error(`oidc test login: token endpoint said ${t.error}: ${t.error_description}`);
		return t.id_token;
	}

	async function confirmDevice(uri: string, accountId: string): Promise<void> {
		deviceAccount = accountId;
		const jar = new Map<string, string>();
		const go = async (url: string, body?: URLSearchParams) => {
			const res = await fetch(url, {
				method: body ? 'POST' : 'GET',
				body,
				redirect: 'manual',
				headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
			});
			for (const c of res.headers.getSetCookie()) {
				const [kv] = c.split(';');
				const at = kv.indexOf('=');
				jar.set(kv.slice(0, at), kv.slice(at + 1));
			}
			return { res, text: await res.text() };
		};
		const page = await go(uri);
		const fields = new URLSearchParams(
			[...page.text.matchAll(/<input type="hidden" name="([\w]+)" value="([^"]*)"/g)].map(
				(m) => [m[1], m[2]] as [string, string],
			),
		);
		const action = /<form[^>]*action="([^"]+)"/.exec(page.text)?.[1] ?? '/device';
		if (!fields.has('xsrf'))
			throw new Error(`oidc test device login: no confirmation form at ${uri}: ${page.text.slice(0, 300)}`);
		if (!fields.has('confirm')) fields.set('confirm', 'yes');
		let step = await go(new URL(action, issuer).toString(), fields);
		for (let hop = 0; hop < 8 && step.res.headers.get('location'); hop++)
			step = await go(new URL(step.res.headers.get('location')!, issuer).toString());
		if (!/device login done/.test(step.text))
			throw new Error(`oidc test device login: not confirmed (HTTP ${step.res.status}: ${step.text.slice(0, 300)})`);
	}

	async function browse(loginUrl: string, accountId: string): Promise<void> {
		deviceAccount = accountId;
		const jar = new Map<string, string>();
		let url = loginUrl;
		for (let hop = 0; hop < 10; hop++) {
			const res = await fetch(url, {
				redirect: 'manual',
				headers: url.startsWith(issuer) ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
			});
			for (const c of res.headers.getSetCookie()) {
				const [kv] = c.split(';');
				const at = kv.indexOf('=');
				jar.set(kv.slice(0, at), kv.slice(at + 1));
			}
			const text = await res.text();
			const loc = res.headers.get('location');
			if (!loc) {
				if (!res.ok) throw new Error(`oidc test browser: HTTP ${res.status} at ${url}: ${text.slice(0, 300)}`);
				return; // the CLI's listener answered
			}
			url = new URL(loc, issuer).toString();
		}
		throw new Error('oidc test browser: too many redirects');
	}

	return {
		issuer,
		ttl,
		login,
		confirmDevice,
		browse,
		close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
	};
}
