import { createDecipheriv, randomUUID } from 'node:crypto';
import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import { SecurityServiceError } from '../../../api/errors';
import { pathSegment } from '../../../api/limits';
import {
	NO_SHORTHAND,
	outcomeOf,
	parseJsonObject,
	TEMPORAL_BOUNDS,
	updateRequest,
} from '../../SecurityServiceRunbook/transport/http';
import { temporalTlsOptions, tlsProblem } from '../../SecurityServiceRunbook/transport/tls';
import { boundedExchange } from './bounded';
import type { SecurityServiceContext } from './index';

/**
 * Token Source "From the cluster's token owner (Temporal)" (docs/worker/tenants.md "Tenants in n8n").
 *
 * The customer's token belongs to its tenant workflow `tenant-<customer_id>`; the node asks it with the Update `token`
 * over Temporal's HTTP API and the node's Temporal API credential (as the Runbook node talks to Temporal), and never
 * renews anything itself: the workflow renews once per expiry for the whole cluster, workers and n8n alike.
 *
 * The Update's result is sealed by the workers' payload codec with this customer's TOKEN KEY (AES-256-GCM; the key is
 * HKDF(payload key, customer id), AAD "<key id>/<customer id>"). The credential holds only that key (`secsvc tenants
 * token-key`): it opens this customer's access tokens and nothing else — not the refresh token, not another
 * customer's payloads. The token lives in this execution's memory only, never in its data or in the credential.
 */

export const TEMPORAL_CREDENTIAL = 'temporalApi';
const ENCRYPTED = 'binary/encrypted';
/** A token due within this margin is asked for again (the workflow renews when it is due: renewAt). */
const ASKS_WHEN_NO_OUTCOME = 3;

export interface ClusterGrant {
	accessToken: string;
	expiresAt: number;
	renewAt: number;
	generation: number;
	/** The customer's own networks the operator declared at tenant install (`secsvc tenants add … --protected`). */
	protectedRanges: string[];
}

/** No token from the cluster: reported as is by the client (a SecurityServiceError is never retried). */
export class ClusterTokenError extends SecurityServiceError {
	constructor(message: string) {
		super('credential', message);
	}
}

const fromB64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : '', 'base64');

/** The credential's Token Key `id:BASE64` (32 bytes), or the problem naming the field. */
export function parseTokenKey(text: unknown): { id: string; key: Buffer } {
	const s = typeof text === 'string' ? text.trim() : '';
	const at = s.indexOf(':');
	const id = at > 0 ? s.slice(0, at) : '';
	const key = Buffer.from(s.slice(at + 1), 'base64');
	if (!/^[A-Za-z0-9._-]{1,64}$/.test(id) || !/^[A-Za-z0-9+/]+={0,2}$/.test(s.slice(at + 1)) || key.length !== 32)
		throw new ClusterTokenError(
			'Token Key: must be what `secsvc tenants token-key <customer_id>` prints (id:BASE64 of 32 bytes)',
		);
	return { id, key };
}

/** Opens a sealed grant (a payload of the HTTP API in full form) with the customer's token key. */
export function openGrant(payload: unknown, customerId: string, tokenKey: { id: string; key: Buffer }): ClusterGrant {
	const p = (payload ?? {}) as { metadata?: Record<string, unknown>; data?: unknown };
	const meta = p.metadata ?? {};
	const encoding = fromB64(meta.encoding).toString('utf8');
	if (encoding !== ENCRYPTED)
		throw new ClusterTokenError(
			'the tenant workflow answered a token that is not sealed: its workers run without the payload codec',
		);
	const keyId = fromB64(meta['encryption-key-id']).toString('utf8');
	const tenant = fromB64(meta['encryption-tenant']).toString('utf8');
	if (tenant !== customerId)
		throw new ClusterTokenError(
			`Customer ID: the token answered is sealed for another customer ('${tenant.slice(0, 128)}')`,
		);
	if (keyId !== tokenKey.id)
		throw new ClusterTokenError(
			`Token Key: made from payload key '${tokenKey.id}', the cluster now seals with '${keyId.slice(0, 64)}': run secsvc tenants token-key ${customerId} again`,
		);
	const d = fromB64(p.data);
	let plain: Buffer | undefined;
	try {
		const dc = createDecipheriv('aes-256-gcm', tokenKey.key, d.subarray(0, 12));
		dc.setAAD(Buffer.from(`${keyId}/${customerId}`));
		dc.setAuthTag(d.subarray(d.length - 16));
		plain = Buffer.concat([dc.update(d.subarray(12, d.length - 16)), dc.final()]);
	} catch {
		plain = undefined;
	}
	if (!plain)
		throw new ClusterTokenError(
			`Token Key: does not open customer ${customerId}'s token (a key for another customer, or not from this cluster)`,
		);
	const inner = JSON.parse(plain.toString('utf8')) as { d?: string };
	const g = JSON.parse(fromB64(inner.d).toString('utf8')) as Partial<ClusterGrant>;
	if (
		typeof g.accessToken !== 'string' ||
		!g.accessToken ||
		typeof g.generation !== 'number' ||
		typeof g.renewAt !== 'number'
	)
		throw new ClusterTokenError('the tenant workflow answered a token grant of an unknown shape');
	return {
		accessToken: g.accessToken,
		expiresAt: Number(g.expiresAt ?? 0),
		renewAt: g.renewAt,
		generation: g.generation,
		protectedRanges: Array.isArray(g.protectedRanges)
			? g.protectedRanges.filter((r): r is string => typeof r === 'string')
			: [],
	};
}

/**
 * Asks the tenant workflow for a valid token, every ask ending by `deadline` (ms since epoch: the asking call's).
 * `rejectedGeneration`: the service refused this generation's token, so the workflow renews unless it already holds a
 * newer one.
 */
export async function askClusterToken(
	ctx: SecurityServiceContext,
	cred: ICredentialDataDecryptedObject,
	deadline: number,
	rejectedGeneration?: number,
): Promise<ClusterGrant> {
	const customerId = String(cred.customerId ?? '').trim();
	if (!/^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/.test(customerId))
		throw new ClusterTokenError(
			'Customer ID: must be the customer_id of an installed customer (1-128 characters A-Z a-z 0-9 . _ ~ -)',
		);
	const tokenKey = parseTokenKey(cred.tokenKey);
	const temporal = await ctx.getCredentials(TEMPORAL_CREDENTIAL).catch(() => undefined);
	if (!temporal)
		throw new ClusterTokenError(
			'Token Source: the credential takes its token from the cluster: set the node\'s Token Source to "From the Cluster\'s Token Owner (Temporal)" and pick its Temporal Credential',
		);
	const tls = temporalTlsOptions(temporal);
	if (tls.problem) throw new ClusterTokenError(`Temporal API credential › ${tls.problem}`);
	const base = String(temporal.address ?? '').replace(/\/+$/, '');
	const ns = String(temporal.namespace ?? 'default');
	const workflowId = `tenant-${customerId}`;
	const url = `${base}/api/v1/namespaces/${pathSegment(ns)}/workflows/${pathSegment(workflowId)}/update/token`;
	const arg = rejectedGeneration === undefined ? {} : { rejectedGeneration };
	const again = (ask: number) => ask < ASKS_WHEN_NO_OUTCOME && Date.now() < deadline;
	for (let ask = 1; ; ask++) {
		let failure: unknown;
		const r = await boundedExchange(
			(o) => ctx.helpers.httpRequestWithAuthentication.call(ctx, TEMPORAL_CREDENTIAL, o),
			{
				method: 'POST',
				url,
				headers: { 'content-type': 'application/json', ...NO_SHORTHAND },
				body: JSON.stringify(updateRequest(workflowId, 'token', arg, randomUUID())),
				ignoreHttpStatusErrors: true,
			},
			{ ...TEMPORAL_BOUNDS, timeoutMs: Math.max(1, Math.min(TEMPORAL_BOUNDS.timeoutMs, deadline - Date.now())) },
		).catch((error: unknown) => void (failure = error ?? new Error('request failed')));
		if (!r) {
			const tlsText = tlsProblem(failure, undefined, base);
			throw new ClusterTokenError(
				`no token from the cluster: ${tlsText ? `Temporal API credential › ${tlsText}` : String((failure as Error)?.message ?? failure)}`,
			);
		}
		const body = parseJsonObject(r.body);
		// A run that just continued as new (a tenant does so every few hundred events): the next ask reaches the new run.
		if (r.statusCode === 404 && /already completed/i.test(String(body.message ?? '')) && again(ask)) continue;
		if (r.statusCode === 404)
			throw new ClusterTokenError(
				`Customer ID: customer ${customerId} is not installed in the cluster (no tenant workflow ${workflowId}: secsvc tenants list)`,
			);
		if (r.statusCode >= 400)
			throw new ClusterTokenError(
				`no token from the cluster: Temporal answered HTTP ${r.statusCode}: ${String(body.message ?? '').slice(0, 300)}`,
			);
		const outcome = outcomeOf(body);
		if (!outcome) {
			// The server's long-poll ended before the Update completed (a renewal under way): ask again.
			if (again(ask)) continue;
			throw new ClusterTokenError(
				`no token from the cluster: the tenant workflow ${workflowId} did not answer (are tenant workers running?)`,
			);
		}
		if (!outcome.ok) throw new ClusterTokenError(`no token from the cluster: ${outcome.message.slice(0, 300)}`);
		return openGrant(firstPayload(body), customerId, tokenKey);
	}
}

/** The raw first payload of the Update's success (outcomeOf decodes plain payloads only). */
function firstPayload(resp: Record<string, unknown>): unknown {
	const success = (resp.outcome as { success?: { payloads?: unknown[] } } | undefined)?.success;
	return success?.payloads?.[0];
}
