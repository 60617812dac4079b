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

const form = (o: Record<string, string | undefined>) => new URLSearchParams(Object.entries(o).filter((e): e is [string, string] => e[1] !== undefined));

export async function deviceLogin(o: LoginOptions): Promise<string> {
	const d = (await discover(o.issuer)) as Awaited<ReturnType<typeof discover>>;
	if (!d.device_authorization_endpoint || !d.token_endpoint) throw new LoginError(`the provider ${o.issuer} offers no device-code login (set SECSVC_ID_TOKEN instead)`);
	const start = await fetch(d.device_authorization_endpoint, {
		method: 'POST',
		body: form({ client_id: o.clientId, scope: o.scope ?? 'openid email profile groups', nonce: o.nonce }),
		signal: AbortSignal.timeout(10_000),
	});
	const a = (await start.json().catch(() => ({}))) as { device_code?: string; user_code?: string; verification_uri?: string; verification_uri_complete?: string; interval?: number; expires_in?: number; error?: string; error_description?: string };
	if (!start.ok || !a.device_code) throw new LoginError(`the provider refused the device login (${a.error ?? start.status}${a.error_description ? `: ${a.error_description}` : ''})`);
	o.tell(`Open ${a.verification_uri_complete ?? a.verification_uri} and confirm the code ${a.user_code}`);
	let interval = Math.max(1, a.interval ?? 5);
	const deadline = Date.now() + 1000 * Math.min(o.maxSeconds ?? a.expires_in ?? 600, 600);
	while (Date.now() < deadline) {
		await new Promise((r) => setTimeout(r, interval * 1000));
		const res = await fetch(d.token_endpoint, {
			method: 'POST',
			body: form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: a.device_code, client_id: o.clientId }),
			signal: AbortSignal.timeout(10_000),
		});
		const t = (await res.json().catch(() => ({}))) as { id_token?: string; error?: string; error_description?: string };
		if (t.id_token) return t.id_token;
		if (t.error === 'authorization_pending') continue;
		if (t.error === 'slow_down') {
			interval += 5;
			continue;
		}
		throw new LoginError(`${t.error ?? `HTTP ${res.status}`}${t.error_description ? `: ${t.error_description}` : ''}`);
	}
	throw new LoginError('the code expired before the login was confirmed');
}
