import type { Safety } from '../catalog/types';

/** A transport-neutral HTTP exchange. The client builds `HttpRequest`s; a transport sends them. */

export type HttpBody =
	| { kind: 'multipart'; parts: Array<[string, string]> }
	| { kind: 'form'; parts: Array<[string, string]> }
	| { kind: 'json'; value: unknown };

export interface HttpRequest {
	method: 'GET' | 'POST' | 'PUT' | 'DELETE';
	/** Absolute URL, query string included (access_token among it for API calls). */
	url: string;
	headers: Record<string, string>;
	body?: HttpBody;
	/** TOTAL time for the exchange (connect, headers and the whole body), not an idle timeout. */
	timeoutMs: number;
	/** Largest body the transport reads (default MAX_RESPONSE_BYTES of api/limits.ts); past it: `tooLarge`. */
	maxResponseBytes?: number;
	/** What repeating the request risks (the operation's safety): a transport that renews tokens asks api/tokenRefusal.ts. */
	safety?: Safety;
	/** Redirects are never followed: /oauth/connect's answer is the redirect itself. */
}

export interface HttpResponse {
	status: number;
	headers: Record<string, string>;
	body: string;
}

/** Throws on network failure or timeout (the client maps that to TransportError); resolves for any HTTP status. */
export type Transport = (req: HttpRequest) => Promise<HttpResponse>;

/** Marker a transport sets on its thrown errors so the client can tell timeouts and whether bytes were sent. */
export interface TransportThrown {
	timeout?: boolean;
	/** false when the connection failed before the request could reach the service. */
	sent?: boolean;
	/** The answer was larger than `maxResponseBytes`: the transport stopped reading it. */
	tooLarge?: boolean;
}
