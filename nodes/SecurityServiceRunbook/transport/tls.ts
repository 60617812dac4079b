import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import { temporalAddressText as addressText } from '../../../api/catalog/labels';

/**
 * The Temporal API credential's TLS fields (PEM text pasted into n8n): checked before anything is sent, and turned
 * into the HTTPS agent options n8n's request helper takes (`agentOptions`: ca, cert, key). A problem is one line
 * naming the credential field; the PEM text itself never appears in it.
 */

export const TLS_FIELDS = {
	ca: 'Server CA Certificate',
	cert: 'Client Certificate',
	key: 'Client Private Key',
	address: 'HTTP API Address',
} as const;

export interface TlsAgentOptions {
	ca?: string;
	cert?: string;
	key?: string;
}

const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');

function certificate(pem: string): X509Certificate | undefined {
	try {
		return new X509Certificate(pem);
	} catch {
		return undefined;
	}
}

/** Agent options from the credential, or the problem with it (field: rule). No TLS fields: no options. */
/** The address itself: a full http:// or https:// URL (what n8n's request helper needs), else one line saying so. */
export function addressProblem(address: unknown): string | undefined {
	const a = text(address);
	if (!/^https?:\/\/[^\s/]+/i.test(a)) return addressText.invalidUrl;
	return undefined;
}

export function temporalTlsOptions(c: ICredentialDataDecryptedObject): { options?: TlsAgentOptions; problem?: string } {
	const ca = text(c.caCertificate);
	const cert = text(c.clientCertificate);
	const key = text(c.clientPrivateKey);
	const address = text(c.address);
	if (!ca && !cert && !key) return {};
	if (!/^https:\/\//i.test(address))
		return { problem: `${TLS_FIELDS.address}: must start with https:// when TLS certificates are set` };
	if (ca && !certificate(ca))
		return { problem: `${TLS_FIELDS.ca}: must be a PEM certificate (-----BEGIN CERTIFICATE-----)` };
	if (cert && !key) return { problem: `${TLS_FIELDS.key}: is required with the ${TLS_FIELDS.cert}` };
	if (key && !cert) return { problem: `${TLS_FIELDS.cert}: is required with the ${TLS_FIELDS.key}` };
	if (cert && key) {
		const x = certificate(cert);
		if (!x) return { problem: `${TLS_FIELDS.cert}: must be a PEM certificate (-----BEGIN CERTIFICATE-----)` };
		let k;
		try {
			k = createPrivateKey(key);
		} catch {
			return { problem: `${TLS_FIELDS.key}: must be an unencrypted PEM private key` };
		}
		if (!x.checkPrivateKey(k)) return { problem: `${TLS_FIELDS.key}: is not the key of the ${TLS_FIELDS.cert}` };
	}
	return { options: { ...(ca ? { ca } : {}), ...(cert ? { cert, key } : {}) } };
}

/**
 * A failed request's TLS cause as `field: rule`, or undefined when it was not about TLS. `error` is what n8n's
 * request helper threw; `body` a response body (a TLS port answers plain HTTP with a fixed 400 text).
 */
export function tlsProblem(error: unknown, body?: unknown, address = ''): string | undefined {
	if (typeof body === 'string' && /client sent an http request to an https server/i.test(body))
		return `${TLS_FIELDS.address}: the server speaks TLS: use https://`;
	const parts: string[] = [];
	for (
		let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, i = 0;
		e && i < 4;
		e = e.cause as typeof e, i++
	)
		parts.push(String(e.code ?? ''), String(e.message ?? ''));
	const all = parts.join(' ');
	// Raw Node codes a user meets with a wrong address: one line naming the field and what to enter.
	if (/ERR_INVALID_URL|Invalid URL/i.test(all)) return addressText.invalidUrl;
	if (/HPE_INVALID_CONSTANT|HPE_INVALID|Parse Error|Expected HTTP/i.test(all)) return addressText.notHttp;
	if (/client sent an http request to an https server/i.test(all))
		return `${TLS_FIELDS.address}: the server speaks TLS: use https://`;
	if (/ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/i.test(all))
		return `${TLS_FIELDS.address}: the server's certificate is not for this host`;
	if (
		/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT/i.test(
			all,
		)
	)
		return `${TLS_FIELDS.ca}: the server's certificate is not signed by this CA (or no CA is set)`;
	if (/certificate required/i.test(all))
		return `${TLS_FIELDS.cert}: the server requires a client certificate (mutual TLS)`;
	if (/alert unknown ca|alert bad certificate|certificate unknown/i.test(all))
		return `${TLS_FIELDS.cert}: the server refused the client certificate`;
	if (/wrong version number|packet length too long/i.test(all))
		return `${TLS_FIELDS.address}: the server does not speak TLS: use http://`;
	// A TLS port closes a plain-HTTP request with a body before reading it: no 400 text arrives, only the reset.
	if (/^http:\/\//i.test(address) && /ECONNRESET|socket hang up/i.test(all))
		return `${TLS_FIELDS.address}: the server closed the connection — a TLS port? then use https://`;
	return undefined;
}
