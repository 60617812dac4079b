// A worker's view of one tenant's token (docs/worker/tenants.md): the access token handed out by the tenant's
// entity workflow (tenant-<customer_id>), held here and renewed AHEAD of need, so that a call never waits for a
// renewal while the held token is still good to use. The renewal itself happens in the workflow (one at a time, once
// per expiry, cluster-wide); this class only decides when this worker asks for the next token.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { MemoryTokenStore, TokenManager } from '../../../api/tokens.ts';
import type { TokenGrant, TokenRequest } from '../../../workflows/tenant/shared.mts';

export const TOKEN_WAIT_METRIC = 'secsvc_tenant_token_wait';

/**
 * Why a call asked for its tenant's token past the cache (`reason` label of `secsvc_tenant_token_wait`):
 * first = none held yet, due = the held one was too close to expiry and the call waited for the next one,
 * rejected = the service refused it, ahead = the held one was due but served at once (0 ms) while the next one is
 * asked for: "due" and "ahead" together are the calls made after an expiry.
 */
export type TokenWaitReason = 'first' | 'due' | 'rejected' | 'ahead';

/** Records how long a call waited for its token (ms), in the calling activity's meter. */
function recordTokenWait(ms: number, reason: TokenWaitReason) {
	try {
		Context.current()
			.metricMeter.createHistogram(TOKEN_WAIT_METRIC, 'int', 'ms', "time a call waited for its tenant's token (ms)")
			.record(Math.max(0, Math.round(ms)), { reason });
	} catch {
		/* outside an activity: nothing to record into */
	}
}

/** Failures of an ask that asking again cannot fix (the tenant is lost or gone): no background retry. */
const FINAL = new Set(['NeedsReinstall', 'TenantUnknown']);
/** First and largest pause between background asks that failed or came back with the same token. */
const RETRY_MS = 1000;
const MAX_RETRY_MS = 8000;

export interface ClusterTokenTiming {
	clock?: () => number;
	/** In [0, 1): where in its window this worker starts a renewal (spreads the cluster's renewals in time). */
	random?: () => number;
	/** Runs `fn` after `ms`; returns a function that cancels it. Default: an unref'd timer. */
	schedule?: (fn: () => void, ms: number) => () => void;
}

const timer = (fn: () => void, ms: number) => {
	const t = setTimeout(fn, Math.max(0, ms));
	t.unref();
	return () => clearTimeout(t);
};

/**
 * When a held grant is used and renewed. With margin = expiresAt − renewAt (the workflow's renewal margin):
 *  - before renewAt: the held token, nothing asked;
 *  - from `askAt` = renewAt + random · (margin − guard) / 2 (per worker and expiry, so the renewals of many tenants
 *    and workers do not all start at once, and at least half the window is left for the Update): the next token is
 *    asked for in the background — by a timer when a call used the held grant (an idle tenant is not renewed by
 *    this worker: its next call does it), else by the first call after askAt;
 *  - until expiresAt − guard (guard = margin / 4, room for the call to reach the service before the token expires):
 *    calls get the held token at once, whatever the Update does;
 *  - after that, with no token held, or after the service refused it: the call waits for the Update.
 */
export class ClusterTokens extends TokenManager {
	private grant?: TokenGrant;
	private askAt = 0;
	private used = false;
	private pending?: Promise<TokenGrant>;
	private cancel?: () => void;
	private retryMs = RETRY_MS;
	/** Set when an ask failed in a way asking again cannot fix: no more background asks until a call succeeds. */
	private stopped = false;
	private readonly clock: () => number;
	private readonly random: () => number;
	private readonly schedule: (fn: () => void, ms: number) => () => void;
	/** Updates sent (tests count them). */
	asks = 0;
	constructor(
		private readonly ask: (req: TokenRequest) => Promise<TokenGrant>,
		timing: ClusterTokenTiming = {},
	) {
		const clock = timing.clock ?? Date.now;
		super({
			credentials: { appId: '', secret: '', tokenKind: 'user' },
			store: new MemoryTokenStore(),
			storeKey: '',
			skewSeconds: 0,
			now: clock,
			fetchToken: () => Promise.reject(new Error('cluster tokens are renewed by their tenant workflow')),
		});
		this.clock = clock;
		this.random = timing.random ?? Math.random;
		this.schedule = timing.schedule ?? timer;
	}

	override async getToken(o: { force?: boolean; rejected?: string } = {}): Promise<string> {
		let rejectedGeneration: number | undefined;
		if (o.force && this.grant && (!o.rejected || o.rejected === this.grant.accessToken)) {
			rejectedGeneration = this.grant.generation;
			this.drop();
		}
		const held = this.grant;
		const now = this.clock();
		if (held && now < held.renewAt) {
			this.used = true;
			return held.accessToken;
		}
		if (held && now < held.expiresAt - guardOf(held)) {
			this.used = true;
			if (now >= this.askAt && !this.pending && !this.cancel) this.askAhead();
			recordTokenWait(0, 'ahead');
			return held.accessToken;
		}
		const reason = rejectedGeneration !== undefined ? 'rejected' : held ? 'due' : 'first';
		const token = (await this.askOnce(rejectedGeneration === undefined ? {} : { rejectedGeneration })).accessToken;
		this.used = true;
		recordTokenWait(this.clock() - now, reason);
		return token;
	}

	/** Stops the background timer (the worker is closing or the tenant was removed). */
	close(): void {
		this.cancel?.();
		this.cancel = undefined;
	}

	private drop() {
		this.grant = undefined;
		this.close();
	}

	/** One Update at a time per tenant and worker: concurrent callers share it. */
	private askOnce(req: TokenRequest): Promise<TokenGrant> {
		this.pending ??= (async () => {
			this.asks++;
			const before = this.grant?.generation;
			const g = await this.ask(req);
			this.stopped = false;
			this.take(g, before);
			return g;
		})().finally(() => {
			this.pending = undefined;
		});
		return this.pending;
	}

	/** A new grant: schedule its renewal. The same generation again (the workflow did not see it due yet): ask later. */
	private take(g: TokenGrant, before: number | undefined) {
		this.close();
		const fresh = before === undefined || g.generation > before;
		this.grant = g;
		if (fresh) {
			this.used = false;
			this.retryMs = RETRY_MS;
			this.askAt = g.renewAt + Math.floor((this.random() * (g.expiresAt - guardOf(g) - g.renewAt)) / 2);
			this.arm(this.askAt - this.clock(), true);
		} else this.retryLater();
	}

	/** The background ask at `ms` from now; `onlyIfUsed`: skipped when no call took the held grant (an idle tenant). */
	private arm(ms: number, onlyIfUsed: boolean) {
		this.cancel = this.schedule(() => {
			this.cancel = undefined;
			if (!onlyIfUsed || this.used) this.askAhead();
		}, ms);
	}

	private retryLater() {
		const g = this.grant;
		if (!g || this.stopped) return;
		const ms = this.retryMs;
		this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
		// past the point where calls wait anyway, the next call asks (and reports the failure)
		if (this.clock() + ms < g.expiresAt - guardOf(g)) this.arm(ms, false);
	}

	private askAhead() {
		if (this.pending || this.stopped) return;
		this.askOnce({}).catch((e: unknown) => {
			const type = e instanceof ApplicationFailure ? e.type : undefined;
			if (type && FINAL.has(type)) this.stopped = true;
			else this.retryLater();
		});
	}
}

/** How long before expiry a call stops taking the held token: a quarter of the renewal margin. */
export const guardOf = (g: Pick<TokenGrant, 'expiresAt' | 'renewAt'>) =>
	Math.max(0, Math.floor((g.expiresAt - g.renewAt) / 4));
