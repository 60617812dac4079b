import { readFileSync } from 'node:fs';

/**
 * The bearer token a worker, the CLI or a test sends to a Temporal cluster whose frontend checks JWTs (Temporal's
 * default claim mapper and authorizer: docs/worker/authorization.md). The token is an access token of the identity
 * provider, obtained with the OAuth client credentials grant and renewed before it expires; its `permissions`
 * claim (`namespace:role`) is what the cluster allows. A static TEMPORAL_API_KEY still works and wins.
 *
 *   SECSVC_TEMPORAL_TOKEN_ISSUER          the provider's issuer URL (its discovery document names the token endpoint)
 *   SECSVC_TEMPORAL_TOKEN_CLIENT_ID       this process's client at the provider
 *   SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET   its secret (or SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET_FILE)
 *   SECSVC_TEMPORAL_TOKEN_AUDIENCE        the resource the token is for (the cluster's `authorization.audience`)
 */
export interface TokenSource {
	issuer: string;
	clientId: string;
	clientSecret: string;
	audience?: string;
}

export interface BearerToken {
	token: string;
	/** Epoch ms. */
	expiresAt: number;
}

export class TokenSettingError extends Error {
	constructor(
		readonly field: string,
		readonly rule: string,
	) {
		super(`${field}: ${rule}`);
	}
}

/** The token source from the environment, or undefined when SECSVC_TEMPORAL_TOKEN_ISSUER is unset. */
export function tokenSourceFrom(env: NodeJS.ProcessEnv): TokenSource | undefined {
	const issuer = env.SECSVC_TEMPORAL_TOKEN_ISSUER?.replace(/\/+$/, '');
	if (!issuer) return undefined;
	if (!/^https?:\/\//.test(issuer))
		throw new TokenSettingError('SECSVC_TEMPORAL_TOKEN_ISSUER', 'must be an http(s) URL');
	const clientId = env.SECSVC_TEMPORAL_TOKEN_CLIENT_ID ?? '';
	if (!clientId) throw new TokenSettingError('SECSVC_TEMPORAL_TOKEN_CLIENT_ID', 'is required with an issuer');
	let clientSecret = env.SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET ?? '';
	const file = env.SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET_FILE;
	if (!clientSecret && file) {
		try {
			clientSecret = readFileSync(file, 'utf8').trim();
		} catch (e) {
			throw new TokenSettingError(
				'SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET_FILE',
				`cannot be read (${(e as Error).message})`,
			);
		}
	}
	if (!clientSecret)
		throw new TokenSettingError('SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET', 'is required with an issuer (or _FILE)');
	const audience = env.SECSVC_TEMPORAL_TOKEN_AUDIENCE || undefined;
	return { issuer, clientId, clientSecret, ...(audience ? { audience } : {}) };
}

/** One access token from the provider's token endpoint (client credentials). Errors name the provider's answer. */
export async function fetchBearer(src: TokenSource): Promise<BearerToken> {
	try {
		// Once more on a network failure: a pooled keep-alive connection the provider closed while this process was
		// busy (seen after a long synchronous step) fails at once with "other side closed"; a fresh one answers.
		return await askProvider(src).catch((e: Error) =>
			e.message.startsWith('Temporal token:') ? Promise.reject(e) : askProvider(src),
		);
	} catch (e) {
		const m = (e as Error).message;
		if (m.startsWith('Temporal token:')) throw e;
		throw new Error(
			`Temporal token: SECSVC_TEMPORAL_TOKEN_ISSUER ${src.issuer} did not answer (${m}${(e as { cause?: Error }).cause ? `: ${(e as { cause: Error }).cause.message}` : ''})`,
		);
	}
}

async function askProvider(src: TokenSource): Promise<BearerToken> {
	const disc = (await (await fetch(`${src.issuer}/.well-known/openid-configuration`)).json()) as {
		token_endpoint?: string;
	};
	if (!disc.token_endpoint) throw new Error(`Temporal token: ${src.issuer} publishes no token_endpoint`);
	const res = await fetch(disc.token_endpoint, {
		method: 'POST',
		body: new URLSearchParams({
			grant_type: 'client_credentials',
			client_id: src.clientId,
			client_secret: src.clientSecret,
			...(src.audience ? { resource: src.audience } : {}),
		}),
	});
	const t = (await res.json()) as {
		access_token?: string;
		expires_in?: number;
		error?: string;
		error_description?: string;
	};
	if (!t.access_token)
		throw new Error(
			`Temporal token: the provider refused client ${src.clientId} (${t.error ?? res.status}: ${t.error_description ?? ''})`,
		);
	return { token: t.access_token, expiresAt: Date.now() + (t.expires_in ?? 300) * 1000 };
}

/**
 * Keeps a connection's bearer token fresh: asks for the next one at 70% of the current one's life, retries every
 * 10 s on failure until it expires. The timer never holds the process open. Returns a stop function.
 */
export function keepRenewed(
	src: TokenSource,
	first: BearerToken,
	setApiKey: (token: string) => void | Promise<void>,
	log: (line: string) => void = (l) => console.error(l),
): () => void {
	let timer: NodeJS.Timeout | undefined;
	let stopped = false;
	const schedule = (at: number) => {
		if (stopped) return;
		timer = setTimeout(renew, Math.max(1000, at - Date.now()));
		timer.unref();
	};
	let current = first;
	const renew = async () => {
		try {
			current = await fetchBearer(src);
		} catch (e) {
			log(`Temporal token: renewal failed (${(e as Error).message}); retrying in 10 s`);
			return schedule(Math.min(Date.now() + 10_000, current.expiresAt));
		}
		try {
			await setApiKey(current.token);
		} catch {
			return void (stopped = true); // a closed connection: nothing left to renew
		}
		schedule(Date.now() + (current.expiresAt - Date.now()) * 0.7);
	};
	schedule(Date.now() + (first.expiresAt - Date.now()) * 0.7);
	return () => {
		stopped = true;
		if (timer) clearTimeout(timer);
	};
}

/**
 * Connects with a bearer token from `src` (when given and no static API key is set) and keeps it renewed.
 * `connect` is Connection.connect or NativeConnection.connect.
 */
export async function connectWithBearer<
	O extends { apiKey?: string },
	C extends { setApiKey(k: string): void | Promise<void> },
>(connect: (o: O) => Promise<C>, opts: O, src: TokenSource | undefined): Promise<C> {
	if (!src || opts.apiKey) return connect(opts);
	const first = await fetchBearer(src);
	const connection = await connect({ ...opts, apiKey: first.token });
	keepRenewed(src, first, (k) => connection.setApiKey(k));
	return connection;
}
