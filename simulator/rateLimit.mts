/**
 * The simulator's request rate limit (our reading of a service that says "slow down"; the spec shows no limits, §8).
 * Off unless configured. A token bucket per app and, optionally, per tenant (a user token's customer), on the real
 * clock (clients send in real time whatever the simulated clock does). A request over the limit is answered with
 * `status` (default 429) and the envelope `code` (default 42901), with `Retry-After: <retryAfterSeconds>` when set,
 * and is not processed. Only authenticated calls (/api/ with a known token) count; token requests do not.
 */
export interface RateLimitSpec {
	/** Requests per second per app (> 0). */
	rps: number;
	/** Requests at once after a quiet spell (≥ 1; default 1). */
	burst?: number;
	/** Per tenant (user tokens, by customer), within the app's. */
	tenant?: { rps: number; burst?: number };
	/** HTTP status of a refusal (default 429; 200 = only the envelope code says it). */
	status?: number;
	/** Envelope code of a refusal (default 42901). */
	code?: number;
	/** `Retry-After` header of a refusal, seconds (none when unset). */
	retryAfterSeconds?: number;
}

/** Problems of a spec, `field: rule` (the control API answers 400 with them). */
export function rateLimitProblems(s: unknown): string[] {
	if (!s || typeof s !== 'object' || Array.isArray(s))
		return ['rateLimit: must be an object {rps, burst?, tenant?, status?, code?, retryAfterSeconds?}'];
	const o = s as Record<string, unknown>;
	const out: string[] = [];
	const pos = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
	if (!pos(o.rps)) out.push('rps: must be a number greater than 0');
	if (o.burst !== undefined && !(pos(o.burst) && (o.burst as number) >= 1))
		out.push('burst: must be a number, at least 1');
	if (o.tenant !== undefined) {
		const t = o.tenant as Record<string, unknown>;
		if (!t || typeof t !== 'object' || !pos(t.rps)) out.push('tenant.rps: must be a number greater than 0');
		else if (t.burst !== undefined && !(pos(t.burst) && (t.burst as number) >= 1))
			out.push('tenant.burst: must be a number, at least 1');
	}
	if (
		o.status !== undefined &&
		!(Number.isInteger(o.status) && (o.status as number) >= 200 && (o.status as number) <= 599)
	)
		out.push('status: must be an HTTP status 200–599');
	if (o.code !== undefined && !Number.isInteger(o.code)) out.push('code: must be an integer');
	if (
		o.retryAfterSeconds !== undefined &&
		!(typeof o.retryAfterSeconds === 'number' && o.retryAfterSeconds >= 0 && o.retryAfterSeconds <= 3600)
	)
		out.push('retryAfterSeconds: must be 0–3600');
	return out;
}

class Bucket {
	tokens: number;
	private at: number;
	constructor(
		private rps: number,
		private burst: number,
		now: number,
	) {
		this.tokens = burst;
		this.at = now;
	}
	/** Refills up to `now` (a request that arrived earlier than the last one seen refills nothing). */
	refill(now: number): number {
		if (now > this.at) {
			this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rps);
			this.at = now;
		}
		return this.tokens;
	}
}

/** Event-loop stalls of the simulator's own process (over STALL_MS): its limiter counts requests when it reads them. */
const STALL_MS = 40;
const TICK_MS = 20;

export class RateLimiter {
	private app: Bucket;
	private tenants = new Map<string, Bucket>();
	/** Refusals so far, per budget ('app' or 'tenant:<customer>'). */
	readonly refused: Record<string, number> = {};
	/** The simulator's own event-loop stalls while the limit is on: when (real clock, ms) and how long (ms). */
	readonly stalls: { at: number; ms: number }[] = [];
	private timer: NodeJS.Timeout;
	constructor(readonly spec: RateLimitSpec) {
		const now = Date.now();
		this.app = new Bucket(spec.rps, spec.burst ?? 1, now);
		let last = now;
		this.timer = setInterval(() => {
			const t = Date.now();
			if (t - last - TICK_MS > STALL_MS && this.stalls.length < 10_000)
				this.stalls.push({ at: last, ms: t - last - TICK_MS });
			last = t;
		}, TICK_MS).unref();
	}
	/** Stops the stall monitor (the limit is replaced or removed). */
	close(): void {
		clearInterval(this.timer);
	}
	/**
	 * Undefined when the request may go, else the budget that refused it. `at` (real clock, ms): when the request
	 * reached the simulator. A request is charged to a bucket only when every bucket it spends lets it through (a
	 * request the app's budget refuses does not spend its tenant's, and the reverse).
	 */
	check(customer: string | undefined, at = Date.now()): string | undefined {
		let t: Bucket | undefined;
		if (customer !== undefined && this.spec.tenant) {
			t = this.tenants.get(customer);
			if (!t) this.tenants.set(customer, (t = new Bucket(this.spec.tenant.rps, this.spec.tenant.burst ?? 1, at)));
			if (t.refill(at) < 1) return this.count(`tenant:${customer}`);
		}
		if (this.app.refill(at) < 1) return this.count('app');
		this.app.tokens -= 1;
		if (t) t.tokens -= 1;
		return undefined;
	}
	/** Tokens left in the app's bucket (after the last check). */
	get appTokens(): number {
		return this.app.tokens;
	}
	private count(k: string) {
		this.refused[k] = (this.refused[k] ?? 0) + 1;
		return k;
	}
	answer(): { status: number; body: { code: number; msg: string }; headers?: Record<string, string> } {
		const s = this.spec;
		return {
			status: s.status ?? 429,
			body: { code: s.code ?? 42901, msg: 'rate limited: too many requests' },
			...(s.retryAfterSeconds !== undefined ? { headers: { 'retry-after': String(s.retryAfterSeconds) } } : {}),
		};
	}
}
