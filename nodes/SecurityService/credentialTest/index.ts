import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';
import type { HttpRequest, HttpResponse } from '../../../api/transport/types';
import { fromN8nResponse, toN8nRequest } from '../transport/request';
import { checkCredential } from './check';

/** Name under which the nodes declare the test (`testedBy`). */
export const CREDENTIAL_TEST = 'securityServiceApiTest';

type LegacyRequest = (options: object) => Promise<unknown>;

/**
 * The api/ Transport over the only HTTP helper n8n gives a credential test (ICredentialTestFunctions offers
 * `request`, not `httpRequest`): request options in its form, full response, no redirects, no status errors.
 */
function legacyTransport(send: LegacyRequest) {
	return async (req: HttpRequest): Promise<HttpResponse> => {
		const o = toN8nRequest(req);
		const raw = (await send({
			method: o.method,
			uri: o.url,
			headers: o.headers,
			body: o.body,
			timeout: o.timeout,
			json: false,
			resolveWithFullResponse: true,
			simple: false,
			followRedirect: false,
			followAllRedirects: false,
		})) as { body?: unknown; headers?: Record<string, unknown>; statusCode?: number; status?: number };
		return fromN8nResponse({
			body: raw?.body,
			headers: raw?.headers ?? {},
			statusCode: raw?.statusCode ?? raw?.status ?? 0,
		});
	};
}

export async function securityServiceApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted<ICredentialDataDecryptedObject>,
): Promise<INodeCredentialTestResult> {
	const helpers = this.helpers;
	return await checkCredential(
		credential.data ?? {},
		legacyTransport((options) => helpers.request(options)),
	);
}
