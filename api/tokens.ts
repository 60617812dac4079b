import { registerSecret } from './redact';
import type { RenewalReason, TokenRefusal } from './tokenRefusal';

/** Tokens (§5): app tokens (client credential) and user tokens (authorization code → access + refresh). */

export interface StoredToken {
	accessToken: string;
	/** Epoch milliseconds at which the service stops accepting the access token. */
	expiresAt: number;
	/** User tokens only: the newest refresh token (each refresh replaces it). */
	refreshToken?: string;
}

/** Where tokens live between calls and processes. A rotated refresh token is saved before it is used. */
export interface TokenStore {
	get(key: string): Promise<StoredToken | undefined>;
	set(key: string, token: StoredToken): Promise<void>;
	delete?(key: string): Promise<void>;
}

export class MemoryTokenStore implements TokenStore {
	private readonly map = new Map<string, StoredToken>();
	async get(key: string) {
		return this.map.get(key);
	}
	async set(key: string, token: StoredToken) {
		this.map.set(key, { ...token });
	}
	async delete(key: string) {
		this.map.delete(key);
	}
}

export interface Credentials {
	appId: string;
	secret: string;
	tokenKind: 'app' | 'user';
	/** User tokens: the refresh token obtained from the authorization-code exchange (used when the store has none). */
	refreshToken?: string;
}

export interface TokenResult {
	access_token: string;
	expires_in: number;
	refresh_token?: string;
}

export interface TokenManagerOptions {
	credentials: Credentials;
	store: TokenStore;
	storeKey: string;
	/**
	 * Fetch a token: app → authorization.appToken, user → authorization.refreshToken; within `deadline` (ms since
	 * epoch) when given: the deadline of the call that needed it.
	 */
	fetchToken: (kind: 'app' | 'user', refreshToken?: string, deadline?: number) => Promise<TokenResult>;
	/** Renew this many seconds before expiry. */
	skewSeconds: number;
	now: () => number;
	/** Called once per token request actually made (single flight), with why (metrics, events). */
	onRenew?: (reason: RenewalReason) => void;
}

/**
 * Caches the access token until shortly before expiry; single-flight: concurrent callers with no valid token
 * share one token request.
 */
export class TokenManager {
	private inflight?: Promise<StoredToken>;
	private cached?: StoredToken;
	/** The cached token came from the store and the service has not answered code 0 to it yet. */
	private unverified = false;
	/** Number of token requests made (for tests and benchmarks). */
	requests = 0;

	constructor(private readonly o: TokenManagerOptions) {
		registerSecret(o.credentials.secret);
		registerSecret(o.credentials.refreshToken);
	}

	/**
	 * A valid access token. `force` (after the service refused `rejected` for `reason`) discards that token — only
	 * that one: a caller whose token was already replaced by a concurrent renewal gets the new one, so however many
	 * calls fail at once, one token is requested per refused token. `deadline`: the asking call's (a request made for it
	 * ends by then; a call that joins a request already under way waits for that one).
	 */
	async getToken(
		opts: { force?: boolean; rejected?: string; reason?: TokenRefusal; deadline?: number } = {},
	): Promise<string> {
		let reason: RenewalReason = 'missing';
		if (opts.force) {
			if (!opts.rejected || this.cached?.accessToken === opts.rejected) {
				this.cached = undefined;
				reason = opts.reason ?? 'refused_code';
			}
		}
		if (!this.cached) {
			const stored = await this.o.store.get(this.o.storeKey);
			if (stored && !(opts.force && stored.accessToken === opts.rejected)) {
				this.cached = stored;
				this.unverified = true;
			}
		}
		if (this.cached && this.cached.expiresAt - this.o.skewSeconds * 1000 > this.o.now()) return this.cached.accessToken;
		if (this.cached) reason = 'expired';
		if (!this.inflight) {
			this.o.onRenew?.(reason);
			this.inflight = this.renew(opts.deadline).finally(() => {
				this.inflight = undefined;
			});
		}
		return (await this.inflight).accessToken;
	}

	/** The cached token while it is valid, without I/O or a promise (the common case of getToken); else undefined. */
	peek(): string | undefined {
		const c = this.cached;
		return c && c.expiresAt - this.o.skewSeconds * 1000 > this.o.now() ? c.accessToken : undefined;
	}

	/** True while `token` is a stored one the service has not accepted yet (api/tokenRefusal.ts `unverified`). */
	isUnverified(token: string): boolean {
		return this.unverified && this.cached?.accessToken === token;
	}

	/** The service answered code 0 to a call made with `token`. */
	accepted(token: string): void {
		if (this.cached?.accessToken === token) this.unverified = false;
	}

	private async renew(deadline?: number): Promise<StoredToken> {
		const { credentials, store, storeKey } = this.o;
		let refresh: string | undefined;
		if (credentials.tokenKind === 'user') {
			refresh = (await store.get(storeKey))?.refreshToken ?? credentials.refreshToken;
			if (!refresh)
				throw new Error('No refresh token: complete the authorization-code flow first (authorization.accessToken)');
		}
		this.requests++;
		const r = await this.o.fetchToken(credentials.tokenKind, refresh, deadline);
		registerSecret(r.access_token);
		registerSecret(r.refresh_token);
		const token: StoredToken = {
			accessToken: r.access_token,
			expiresAt: this.o.now() + r.expires_in * 1000,
			refreshToken: r.refresh_token ?? refresh,
		};
		// Save before use: the old refresh token stops working once the service rotated it.
		await store.set(storeKey, token);
		this.cached = token;
		this.unverified = false;
		return token;
	}
}

/** Random `state` for /oauth/connect (CSRF protection), 128 bits, URL-safe. */
export function randomState(): string {
	const bytes = new Uint8Array(16);
	crypto.getRandomValues(bytes);
	return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Reads code and state from the redirect and checks the state; throws when it does not match. */
export function parseConnectRedirect(location: string, expectedState: string): { code: string; state: string } {
	const u = new URL(location, 'http://redirect.invalid');
	const code = u.searchParams.get('code');
	const state = u.searchParams.get('state');
	if (!state || state !== expectedState)
		throw new Error('OAuth state mismatch: the redirect did not carry the state we sent (possible CSRF)');
	if (!code) throw new Error('OAuth redirect carries no code');
	registerSecret(code);
	return { code, state };
}
