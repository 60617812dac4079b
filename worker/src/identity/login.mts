import { decodeJwt } from 'jose';
import { discover } from './verify.mts';

/**
 * `secsvc approve` / `start` proof: an ID token from the environment (`SECSVC_ID_TOKEN`, obtained by the SOC's own
 * tooling with the gate's nonce) or a device-code login against the provider (RFC 8628): the CLI prints the
 * verification address and code, the person logs in in a browser, the CLI polls the token endpoint for the ID token.
 * The `nonce` binds the token to one runbook's gate (the gate's nonce, from the runbook's state).
 */
export interface LoginOptions {
	issuer: string;
	clientId: string;
	scope?: string;
	nonce?: string;
	/** Where the verification address and code are shown (stderr). */
	tell(line: string): void;
	/** Gives up after this many seconds (default: the code's own lifetime, at most 10 min). */
	maxSeconds?: number;
}

export class LoginError extends Error {
	constructor(rule: string) {
		super(`login: ${rule}`);
		this.name = 'ValidationError';
	}
}

const form = (o: Record<string, string | undefined>) =>
	new URLSearchParams(Object.entries(o).filter((e): e is [string, string] => e[1] !== undefined));

/** The `nonce` claim of a JWT, unverified (the worker verifies the token; this only tells the person early). */
function nonceOf(jwt: string): unknown {
	try {
		return decodeJwt(jwt).nonce;
	} catch {
		return undefined;
	}
}

export async function deviceLogin(o: LoginOptions): Promise<string> {
	const d = (await discover(o.issuer)) as Awaited<ReturnType<typeof discover>>;
	if (!d.device_authorization_endpoint || !d.token_endpoint)
		throw new LoginError(`the provider ${o.issuer} offers no device-code login (set SECSVC_ID_TOKEN instead)`);
	const start = await fetch(d.device_authorization_endpoint, {
		method: 'POST',
		body: form({ client_id: o.clientId, scope: o.scope ?? 'openid email profile groups', nonce: o.nonce }),
		signal: AbortSignal.timeout(10_000),
	});
	const a = (await start.json().catch(() => ({}))) as {
		device_code?: string;
		user_code?: string;
		verification_uri?: string;
		verification_uri_complete?: string;
		interval?: number;
		expires_in?: number;
		error?: string;
		error_description?: string;
	};
	if (!start.ok || !a.device_code)
		throw new LoginError(
			`the provider refused the device login (${a.error ?? start.status}${a.error_description ? `: ${a.error_description}` : ''})`,
		);
	o.tell(`Open ${a.verification_uri_complete ?? a.verification_uri} and confirm the code ${a.user_code}`);
	let interval = Math.max(1, a.interval ?? 5);
	const deadline = Date.now() + 1000 * Math.min(o.maxSeconds ?? a.expires_in ?? 600, 600);
	while (Date.now() < deadline) {
		await new Promise((r) => setTimeout(r, interval * 1000));
		const res = await fetch(d.token_endpoint, {
			method: 'POST',
			body: form({
				grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
				device_code: a.device_code,
				client_id: o.clientId,
			}),
			signal: AbortSignal.timeout(10_000),
		});
		const t = (await res.json().catch(() => ({}))) as { id_token?: string; error?: string; error_description?: string };
		if (t.id_token) {
			// Many providers leave the nonce out of a device-code login's ID token; the runbook would refuse it as bound
			// to another gate, and logging in again the same way could never help.
			if (o.nonce !== undefined && nonceOf(t.id_token) !== o.nonce)
				throw new LoginError(
					`the provider left the gate's nonce out of the device-code login's ID token, so the runbook would refuse it: log in with --login browser (the default)`,
				);
			return t.id_token;
		}
		if (t.error === 'authorization_pending') continue;
		if (t.error === 'slow_down') {
			interval += 5;
			continue;
		}
		throw new LoginError(`${t.error ?? `HTTP ${res.status}`}${t.error_description ? `: ${t.error_description}` : ''}`);
	}
	throw new LoginError('the code expired before the login was confirmed');
}

/**
 * Browser login (OpenID Connect authorization code flow with PKCE and a loopback redirect, RFC 8252): the CLI
 * listens on 127.0.0.1 (port 0), prints the provider's login address (with `nonce` = the gate's), the person logs in
 * in a browser on this machine, the provider redirects to the CLI with a code, the CLI exchanges it for the ID token.
 * Every OpenID Connect provider carries the nonce of this flow into the ID token (device-code logins may not).
 */
export async function browserLogin(o: LoginOptions): Promise<string> {
	const d = (await discover(o.issuer)) as Awaited<ReturnType<typeof discover>> & { authorization_endpoint?: string };
	if (!d.authorization_endpoint || !d.token_endpoint)
		throw new LoginError(`the provider ${o.issuer} has no authorization or token endpoint`);
	const { createServer } = await import('node:http');
	const { createHash, randomBytes } = await import('node:crypto');
	const verifier = randomBytes(32).toString('base64url');
	const state = randomBytes(16).toString('base64url');
	const server = createServer();
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const redirectUri = `http://127.0.0.1:${(server.address() as { port: number }).port}/callback`;
	try {
		const code = new Promise<string>((resolve, reject) => {
			server.on('request', (req, res) => {
				const u = new URL(req.url ?? '/', redirectUri);
				if (u.pathname !== '/callback') return void res.writeHead(404).end();
				const err = u.searchParams.get('error');
				const c = u.searchParams.get('code');
				const ok = !err && c && u.searchParams.get('state') === state;
				res
					.writeHead(ok ? 200 : 400, { 'content-type': 'text/plain' })
					.end(ok ? 'secsvc: logged in; you can close this page.' : 'secsvc: login failed.');
				if (ok) resolve(c);
				else
					reject(
						new LoginError(
							err
								? `${err}${u.searchParams.get('error_description') ? `: ${u.searchParams.get('error_description')}` : ''}`
								: 'the provider answered without a code (or with another state)',
						),
					);
			});
		});
		const q = new URLSearchParams({
			client_id: o.clientId,
			response_type: 'code',
			scope: o.scope ?? 'openid email profile groups',
			redirect_uri: redirectUri,
			state,
			code_challenge: createHash('sha256').update(verifier).digest('base64url'),
			code_challenge_method: 'S256',
			...(o.nonce ? { nonce: o.nonce } : {}),
		});
		o.tell(`Open ${d.authorization_endpoint}?${q} to log in`);
		const timeout = new Promise<never>((_, rej) =>
			setTimeout(
				() => rej(new LoginError('no login within the time allowed')),
				1000 * Math.min(o.maxSeconds ?? 300, 600),
			).unref(),
		);
		const c = await Promise.race([code, timeout]);
		const res = await fetch(d.token_endpoint, {
			method: 'POST',
			body: form({
				grant_type: 'authorization_code',
				code: c,
				redirect_uri: redirectUri,
				client_id: o.clientId,
				code_verifier: verifier,
			}),
			signal: AbortSignal.timeout(10_000),
		});
		const t = (await res.json().catch(() => ({}))) as { id_token?: string; error?: string; error_description?: string };
		if (!t.id_token)
			throw new LoginError(
				`${t.error ?? `HTTP ${res.status}`}${t.error_description ? `: ${t.error_description}` : ''}`,
			);
		return t.id_token;
	} finally {
		server.closeAllConnections();
		server.close();
	}
}
