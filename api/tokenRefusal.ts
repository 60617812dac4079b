import type { Safety } from './catalog/types';

/**
 * Whether an answer says "your access token was refused", so that ONE fresh token and ONE retry may help. One
 * reading for every host: the client (worker, CLI) and the n8n node's transport call it.
 *
 * The spec lists no error codes (§7), so besides the configured auth-failure codes an answer counts when:
 * - HTTP 401, or the envelope's code is one of `authFailureCodes` → `refused_code`;
 * - the code is not known to mean anything else (not a rate-limit code) and its `msg` speaks of the token
 *   (TOKEN_MESSAGE_RE: access token, token, expired, invalid credential, unauthorized, …) → `refused_message`;
 * - any other non-zero code on the first answer to a token reused from a store (issued elsewhere or earlier, never
 *   accepted by the service in this process) → `refused_unverified`, for reads and idempotent writes only.
 *
 * Repeating the request is safe because of what the answer proves: HTTP 401, or an HTTP 2xx envelope whose code ≠ 0
 * is an auth-failure code or whose message names the token, is a refusal at authentication, which comes before the
 * request is carried out. Any other code ≠ 0 proves nothing about a write (a service may fail after a partial
 * effect), so `refused_unverified` is only for operations that may be repeated anyway. HTTP 5xx, answers that are
 * not the envelope, timeouts and network failures never renew a token.
 */
export type TokenRefusal = 'refused_code' | 'refused_message' | 'refused_unverified';

/** Words of a token refusal in a service's message (case-insensitive). */
export const TOKEN_MESSAGE_RE =
	/access[\s_-]?token|\btoken\b|expired|invalid[\s_-]?credential|unauthori[sz]ed|unauthenticated|not[\s_-]authenticated|authentication failed/i;

export interface RefusalInput {
	status: number;
	/** The envelope's code when the body is one. */
	code?: number;
	msg?: string;
	authFailureCodes: ReadonlySet<number>;
	/** Codes known to mean something else (rate limiting). */
	otherCodes: ReadonlySet<number>;
	safety: Safety;
	/** The token was reused from a store and the service has not accepted it yet in this process. */
	unverified: boolean;
}

export function tokenRefusal(i: RefusalInput): TokenRefusal | undefined {
	if (i.status === 401) return 'refused_code';
	if (i.status < 200 || i.status >= 300 || i.code === undefined || i.code === 0) return undefined;
	if (i.authFailureCodes.has(i.code)) return 'refused_code';
	if (i.otherCodes.has(i.code)) return undefined;
	if (TOKEN_MESSAGE_RE.test(i.msg ?? '')) return 'refused_message';
	if (i.unverified && (i.safety === 'read' || i.safety === 'idempotent')) return 'refused_unverified';
	return undefined;
}

/** Why a token was renewed: the metrics' `reason` label (worker/src/metrics.mts) and the client's `token` event. */
export type RenewalReason = 'missing' | 'expired' | TokenRefusal;
