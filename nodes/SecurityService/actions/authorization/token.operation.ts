import type { IDataObject } from 'n8n-workflow';
import { redactDeep } from '../../../../api/redact';
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
	const out = redactDeep(result as IDataObject);
	return [{ ...out, redacted: true }];
}
