import type { IDataObject } from 'n8n-workflow';
import { redactDeep } from '../../../../api/redact';
import { tokenText } from '../../../../api/catalog/labels';
import { CREDENTIAL_TYPE } from '../../transport';
import type { OperationContext } from '../common/types';

/**
 * Authorization operations (§4.1). app_id and secret come from the credential. Tokens and codes are secrets:
 * they never go into n8n execution data, so outputs are redacted (the credential manages tokens itself).
 */
export async function execute(ctx: OperationContext): Promise<IDataObject[]> {
	const { client, op, exec } = ctx;
	const cred = await exec.getCredentials(CREDENTIAL_TYPE, ctx.itemIndex);
	const params: Record<string, unknown> = { ...ctx.params };
	for (const f of op.fields) {
		if (f.name === 'app_id') params.app_id = cred.appId;
		if (f.name === 'secret') params.secret = cred.secret;
	}
	client.validate(op.id, params);
	const result = op.encoding === 'redirect' ? await client.connect(params) : await client.call(op.id, params);
	return [tokenSummary(op.id, result)];
}

const TOKEN_KEYS = new Set(['access_token', 'refresh_token', 'code']);

/**
 * What a token call did, never the token: which kind, until when it is valid, whether a refresh token came with it
 * (the service replaces it), and the other fields of the answer (scope, expires_in), secrets masked.
 */
export function tokenSummary(opId: string, result: unknown, now = Date.now()): IDataObject {
	if (result === null || typeof result !== 'object')
		return { ...redactDeep({ value: result } as IDataObject), redacted: true };
	const r = result as Record<string, unknown>;
	const out: IDataObject = {};
	for (const [k, v] of Object.entries(redactDeep(r as IDataObject))) if (!TOKEN_KEYS.has(k)) out[k] = v;
	if (typeof r.access_token === 'string') {
		out.token_kind =
			opId === 'authorization.appToken'
				? 'app token (acts for the app itself)'
				: 'user token (acts for one installed customer)';
		out.access_token_received = true;
		if (typeof r.expires_in === 'number') out.valid_until = new Date(now + r.expires_in * 1000).toISOString();
	}
	if ('refresh_token' in r) out.refresh_token_received = typeof r.refresh_token === 'string' && r.refresh_token !== '';
	if ('code' in r) out.code_received = true;
	out.note = tokenText.note;
	out.redacted = true;
	return out;
}
