import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import type { VerifiedIdentity } from '../../../api/decideRules.ts';
import type { IdentityConfig } from './config.mts';

/**
 * Verifies an OpenID Connect ID token (jose): signature against the provider's published keys (its JWKS, found
 * through the discovery document and cached `jwksCacheSeconds`), issuer, audience, expiry (with `clockSkewSeconds`),
 * the nonce that binds it to one runbook's gate, and the claim that names the person. A refusal is a ProofRefused
 * `proof: <rule>`; a provider that cannot be reached is a plain Error (retried, then refused by the runbook).
 */
export class ProofRefused extends Error {
	constructor(rule: string) {
		super(`proof: ${rule}`);
		this.name = 'ValidationError';
	}
}

const FETCH_TIMEOUT_MS = 5000;
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 16);

export async function discover(
	issuer: string,
): Promise<{ issuer: string; jwks_uri: string; device_authorization_endpoint?: string; token_endpoint?: string }> {
	const res = await fetch(`${issuer}/.well-known/openid-configuration`, {
		signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
	});
	if (!res.ok) throw new Error(`identity provider ${issuer}: discovery answered HTTP ${res.status}`);
	const doc = (await res.json()) as { issuer?: string; jwks_uri?: string };
	if (doc.issuer !== issuer)
		throw new Error(`identity provider ${issuer}: its discovery document names issuer ${doc.issuer}`);
	if (typeof doc.jwks_uri !== 'string')
		throw new Error(`identity provider ${issuer}: no jwks_uri in its discovery document`);
	return doc as Awaited<ReturnType<typeof discover>>;
}

export type Verify = (token: string, nonce?: string) => Promise<VerifiedIdentity>;

export function createVerifier(cfg: IdentityConfig): Verify {
	let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
	const jwks = () =>
		(keys ??= discover(cfg.issuer).then((d) =>
			createRemoteJWKSet(new URL(d.jwks_uri), {
				cacheMaxAge: cfg.jwksCacheSeconds * 1000,
				cooldownDuration: 30_000,
				timeoutDuration: FETCH_TIMEOUT_MS,
			}),
		)).catch((e) => {
			keys = undefined; // asked again next time
			throw e;
		});
	return async (token, nonce) => {
		let payload: JWTPayload;
		// Another provider's token is named as such (its keys are not this provider's either; the signature is checked next).
		let claimed: JWTPayload | undefined;
		try {
			claimed = decodeJwt(token);
		} catch {
			throw new ProofRefused('not a valid ID token (not a JWT)');
		}
		if (claimed.iss !== cfg.issuer)
			throw new ProofRefused(`issuer ${String(claimed.iss)} is not the configured identity provider ${cfg.issuer}`);
		try {
			({ payload } = await jwtVerify(token, await jwks(), {
				issuer: cfg.issuer,
				audience: cfg.audience,
				clockTolerance: cfg.clockSkewSeconds,
				algorithms: ALGORITHMS,
				requiredClaims: ['iss', 'aud', 'exp', 'iat', 'sub'],
			}));
		} catch (e) {
			throw refusal(e, cfg, token);
		}
		if (nonce !== undefined && payload.nonce !== nonce)
			throw new ProofRefused(
				`the ID token is bound to another runbook or gate (its nonce is not this gate's); log in again for this gate (replay refused)`,
			);
		const name = payload[cfg.identityClaim];
		if (typeof name !== 'string' || !name.trim())
			throw new ProofRefused(
				`the ID token has no ${cfg.identityClaim} claim (the claim that names the person: SECSVC_OIDC_IDENTITY_CLAIM)`,
			);
		const g = payload[cfg.groupsClaim];
		const groups = Array.isArray(g)
			? g.filter((x): x is string => typeof x === 'string').slice(0, 200)
			: typeof g === 'string'
				? [g]
				: [];
		return {
			verified: 'oidc',
			name: name.trim().slice(0, 200),
			claim: cfg.identityClaim,
			subject: String(payload.sub).slice(0, 255),
			issuer: cfg.issuer,
			groups,
			tokenHash: tokenHash(token),
			issuedAt: new Date((payload.iat ?? 0) * 1000).toISOString(),
			expiresAt: new Date((payload.exp ?? 0) * 1000).toISOString(),
		};
	};
}

function refusal(e: unknown, cfg: IdentityConfig, token: string): Error {
	if (e instanceof errors.JWTExpired)
		return new ProofRefused(
			`the ID token expired (exp ${iso(e.payload.exp)}, clock skew allowed ${cfg.clockSkewSeconds}s)`,
		);
	if (e instanceof errors.JWTClaimValidationFailed) {
		if (e.claim === 'iss')
			return new ProofRefused(`issuer ${String(e.payload.iss)} is not the configured identity provider ${cfg.issuer}`);
		if (e.claim === 'aud')
			return new ProofRefused(
				`audience ${JSON.stringify(e.payload.aud)} is not this worker's (${cfg.audience.join(', ')})`,
			);
		if (e.claim === 'nbf' || e.claim === 'iat') return new ProofRefused(`the ID token is not valid yet (${e.claim})`);
		return new ProofRefused(`claim ${e.claim}: ${e.reason}`);
	}
	if (e instanceof errors.JWSSignatureVerificationFailed)
		return new ProofRefused(`the signature does not verify against the provider's published keys`);
	if (e instanceof errors.JWKSNoMatchingKey) return new ProofRefused(`signed with a key the provider does not publish`);
	if (e instanceof errors.JOSEAlgNotAllowed)
		return new ProofRefused(`signed with an algorithm that is not allowed (asymmetric signatures only)`);
	if (e instanceof errors.JWSInvalid || e instanceof errors.JWTInvalid || e instanceof errors.JOSENotSupported)
		return new ProofRefused(`not a valid ID token (${(e as Error).message})`);
	void token;
	return e instanceof Error ? e : new Error(String(e)); // the provider could not be reached: retried
}

const iso = (s: unknown) => (typeof s === 'number' ? new Date(s * 1000).toISOString() : '?');
