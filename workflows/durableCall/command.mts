import { getOperation, hasOperation } from '../../api/catalog/index.ts';
import { validateParams } from '../../api/client.ts';
import { loadGuardConfig } from '../../worker/src/process/config.mts';
import { UsageError, type Command } from '../../worker/src/commands/args.mts';
import { startDurableCall } from './client.mts';
import { afterWhitelistAdd } from '../blocks/clientAllow.mts';

/** `secsvc call OPERATION --params JSON [--wait]`: one API operation as a durable step (the durableCall playbook). */
export const call: Command = async ({ o, conn, t, out, need }) => {
	const op = need(0, 'OPERATION');
	let params: Record<string, unknown>;
	try {
		params = JSON.parse(typeof o.params === 'string' ? o.params : '{}') as Record<string, unknown>;
	} catch (e) {
		throw new UsageError(`--params: must be a JSON object (${(e as Error).message})`);
	}
	// Unknown operation or bad input: named, nothing started.
	if (!hasOperation(op)) throw new UsageError(`call ${op}: not an operation id (npm run -s catalog lists them)`);
	if (!params || typeof params !== 'object' || Array.isArray(params))
		throw new UsageError('--params: must be a JSON object');
	if (o['allow-wide-block'] !== undefined) {
		if (typeof o['allow-wide-block'] !== 'string')
			throw new UsageError('--allow-wide-block: needs a reason (recorded with the call)');
		params = {
			...params,
			allowWideBlock: { reason: o['allow-wide-block'], ...(typeof o.by === 'string' ? { by: o.by } : {}) },
		};
	}
	// The blast-radius guard with this host's configuration (the worker checks again, with the site's own addresses).
	const g = loadGuardConfig();
	validateParams(getOperation(op), params, { widestPrefix: g.widestPrefix, protectedRanges: g.protectedRanges });
	const h = await startDurableCall(await conn(), t.taskQueue, { op, params });
	const result = o.wait ? await h.result() : { workflowId: h.workflowId };
	// The allow-list always wins: the blocks that overlap a whitelist entry end now (allow.mts).
	if (op !== 'applicationProtection.ipWhitelist.add') return (out(result), 0);
	const by = typeof o.by === 'string' ? o.by : 'secsvc call';
	const allowed = await afterWhitelistAdd(await conn(), params, by);
	out({ ...(result as object), allowList: allowed });
	return allowed?.notEnded.length ? 1 : 0;
};
