/**
 * A real OpenID Connect provider on loopback for the approval tests: worker/src/identity/localProvider.mts (the
 * certified `oidc-provider` package, also what the demo starts), issuing real signed ID tokens through the
 * authorization code flow. The person's login is done programmatically: the test says who logs in with `login_hint`
 * (or `nextLogin` for device and browser logins). Nothing here is a stand-in for the verification under test.
 */
import {
	REDIRECT_URI,
	startLocalProvider,
	type LocalProvider,
	type Person,
	type ServiceClient,
} from '../../worker/src/identity/localProvider.mts';

export { REDIRECT_URI, type Person };

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
	services: ServiceClient[] = [],
): Promise<TestProvider> {
	const p = await startLocalProvider({ people, clients, services });
	return { issuer: p.issuer, ttl: p.ttl, ...personAt(p), close: () => p.close() };
}

/** A person's side of a login at a running local provider (the demo's too): login, device confirmation, browser. */
export function personAt(p: LocalProvider): Pick<TestProvider, 'login' | 'confirmDevice' | 'browse'> {
	const issuer = p.issuer;

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
				client_secret: p.clientSecret(clientId),
			}),
		});
		const t = (await res.json()) as { id_token?: string; error?: string; error_description?: string };
		if (!t.id_token) throw new Error(`oidc test login: token endpoint said ${t.error}: ${t.error_description}`);
		return t.id_token;
	}

	async function confirmDevice(uri: string, accountId: string): Promise<void> {
		p.nextLogin = accountId;
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
		p.nextLogin = accountId;
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

	return { login, confirmDevice, browse };
}
