import {
	NodeApiError,
	NodeOperationError,
	type ICredentialDataDecryptedObject,
	type IDataObject,
	type IExecuteFunctions,
	type IHttpRequestOptions,
	type IPollFunctions,
	type JsonObject,
} from 'n8n-workflow';
import { pathSegment } from '../../../api/limits';
import { boundedExchange, type BoundedResponse } from '../../SecurityService/transport/bounded';
import type { Http } from '../actions/common/types';
import { NO_SHORTHAND, parseJsonObject, TEMPORAL_BOUNDS } from './http';
import { temporalTlsOptions, tlsProblem } from './tls';

/**
 * The node's one way to Temporal: the credential's address and namespace, n8n's request helper with the credential,
 * every exchange bounded in size and total time (TEMPORAL_BOUNDS, bounded.ts), JSON in full payload form
 * (NO_SHORTHAND), and a TLS failure named by its credential field.
 */
export function temporalTransport(ctx: IExecuteFunctions | IPollFunctions, cred: ICredentialDataDecryptedObject) {
	// TLS fields checked before anything is sent; a TLS failure later is named by its credential field too.
	const tls = temporalTlsOptions(cred);
	const tlsFailure = (i: number, error: unknown, body?: unknown) => {
		const p = tlsProblem(error, body, String(cred.address ?? ''));
		if (p) throw new NodeOperationError(ctx.getNode(), `Temporal API credential › ${p}`, { itemIndex: i });
	};
	const base = String(cred.address ?? '').replace(/\/+$/, '');
	const ns = String(cred.namespace ?? 'default');
	const workflowsUrl = `${base}/api/v1/namespaces/${pathSegment(ns)}/workflows`;
	const wfUrl = (id: string) => `${base}/api/v1/namespaces/${pathSegment(ns)}/workflows/${pathSegment(id)}`;

	/** One bounded exchange; a failure to exchange at all is a node error (named by its TLS field when it is one). */
	const exchange = async (
		i: number,
		method: 'GET' | 'POST',
		url: string,
		body?: IDataObject,
		qs?: IDataObject,
	): Promise<BoundedResponse> => {
		const opts: IHttpRequestOptions = {
			method,
			url,
			headers: { 'content-type': 'application/json', ...NO_SHORTHAND },
			ignoreHttpStatusErrors: true,
		};
		if (body !== undefined) opts.body = JSON.stringify(body);
		if (qs !== undefined) opts.qs = qs;
		try {
			return await boundedExchange(
				(o) => ctx.helpers.httpRequestWithAuthentication.call(ctx, 'temporalApi', o),
				opts,
				TEMPORAL_BOUNDS,
			);
		} catch (error) {
			tlsFailure(i, error, (error as { response?: { data?: unknown } }).response?.data);
			throw new NodeApiError(ctx.getNode(), error as JsonObject, { itemIndex: i });
		}
	};

	/** The answer whatever its status (a TLS port's answer to plain HTTP is named as such). */
	const call = async (
		i: number,
		method: 'GET' | 'POST',
		url: string,
		body?: IDataObject,
		qs?: IDataObject,
	): Promise<Http> => {
		const r = await exchange(i, method, url, body, qs);
		tlsFailure(i, undefined, r.body);
		return { status: r.statusCode, body: parseJsonObject(r.body) as IDataObject };
	};

	/** The answer of an exchange that must succeed: a status of 400 or more is a node error with Temporal's answer. */
	const send = async (i: number, method: 'GET' | 'POST', url: string, body?: IDataObject): Promise<IDataObject> => {
		const r = await exchange(i, method, url, body);
		const parsed = parseJsonObject(r.body) as IDataObject;
		if (r.statusCode >= 400)
			throw new NodeApiError(ctx.getNode(), { ...parsed, httpCode: String(r.statusCode) } as JsonObject, {
				itemIndex: i,
				httpCode: String(r.statusCode),
			});
		return parsed;
	};

	return { tlsProblem: tls.problem, ns, workflowsUrl, wfUrl, call, send };
}
