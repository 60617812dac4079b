import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';
import { pathSegment } from '../api/limits';
import { addressProblem, temporalTlsOptions, tlsProblem } from './SecurityServiceRunbook/transport/tls';

/** Name under which the nodes that use the Temporal API credential declare its test (`testedBy`). */
export const TEMPORAL_CREDENTIAL_TEST = 'temporalApiTest';

type LegacyRequest = (options: object) => Promise<unknown>;

/**
 * The Temporal API credential's Test: reads the namespace over the HTTP API with the credential's API key and TLS
 * material, as a node run does, and says what is wrong in the words a node run uses (the gRPC port, a missing
 * scheme, a TLS field) instead of the raw HTTP parser code. Pure over its request function (tested without n8n).
 */
export async function checkTemporalCredential(
	c: ICredentialDataDecryptedObject,
	send: LegacyRequest,
): Promise<INodeCredentialTestResult> {
	const error = (message: string): INodeCredentialTestResult => ({ status: 'Error', message });
	const bad = addressProblem(c.address);
	if (bad) return error(bad);
	const tls = temporalTlsOptions(c);
	if (tls.problem) return error(tls.problem);
	const address = String(c.address).trim().replace(/\/+$/, '');
	const namespace = String(c.namespace ?? '').trim() || 'default';
	const apiKey = typeof c.apiKey === 'string' ? c.apiKey : '';
	let raw: { body?: unknown; statusCode?: number; status?: number };
	try {
		raw = (await send({
			method: 'GET',
			uri: `${address}/api/v1/namespaces/${pathSegment(namespace)}`,
			headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
			...(tls.options ? { agentOptions: tls.options } : {}),
			timeout: 10_000,
			json: false,
			resolveWithFullResponse: true,
			simple: false,
		})) as typeof raw;
	} catch (e) {
		const named = tlsProblem(e, undefined, address);
		if (named) return error(named);
		const m = e as { code?: unknown; message?: unknown };
		return error(`HTTP API Address: ${address} cannot be reached (${String(m.code ?? m.message ?? e)})`);
	}
	const status = raw?.statusCode ?? raw?.status ?? 0;
	const body = typeof raw?.body === 'string' ? raw.body : JSON.stringify(raw?.body ?? '');
	const named = tlsProblem(undefined, body, address);
	if (named) return error(named);
	if (status === 404) return error(`Namespace: '${namespace}' does not exist on this server`);
	if (status === 401 || status === 403)
		return error(`API Key: the server refused it (HTTP ${status}): ${body.slice(0, 200)}`);
	if (status < 200 || status >= 300)
		return error(`HTTP API Address: the server answered HTTP ${status}: ${body.slice(0, 200)}`);
	return { status: 'OK', message: `Connected: namespace '${namespace}' on ${address}` };
}

export async function temporalApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted<ICredentialDataDecryptedObject>,
): Promise<INodeCredentialTestResult> {
	const helpers = this.helpers;
	return await checkTemporalCredential(credential.data ?? {}, (options) => helpers.request(options));
}
