import { DURATION_RULE, parseDuration } from '../../../../api/duration';
import { NodeOperationError } from 'n8n-workflow';
import { BlockInputError } from '../../../../api/blockRules';
import { RUNBOOK } from '../../../../api/catalog/labels';
import { idProblem } from '../../../../api/limits';
import type { Env } from '../common/types';

/**
 * Input of the expiring-block operations (the `blocks-<site>-<dp>` workflow's Updates addBlock / extendBlock /
 * removeBlock, its `blocks` query, and the visibility list for a whole site), checked with the same rules as the
 * workflows' validators (api/blockRules.ts) before anything is sent.
 */

const F = RUNBOOK.fields;

export function siteAndDp(env: Env, dpRequired: boolean): { site: string; dp: string } {
	const { ctx, i } = env;
	const site = String(ctx.getNodeParameter('siteId', i, '') ?? '').trim();
	if (!site) env.fail(F.site, 'is required');
	const sp = idProblem(site);
	if (sp) env.fail(F.site, sp);
	const dp = String(ctx.getNodeParameter('domainPortId', i, '') ?? '').trim();
	if (dpRequired && !dp) env.fail(F.domainPort, 'is required');
	const dpp = dp ? idProblem(dp) : undefined;
	if (dpp) env.fail(F.domainPort, dpp);
	return { site, dp };
}

export function checked<T>(env: Env, check: () => T): T {
	try {
		return check();
	} catch (e) {
		if (e instanceof BlockInputError) env.fail(RUNBOOK.refusalFields[e.field] ?? e.field, e.rule);
		throw new NodeOperationError(env.ctx.getNode(), e as Error, { itemIndex: env.i });
	}
}

/** The block's duration: seconds, or a number with a unit (30m, 2h, 1d); anything else is refused naming the field. */
export function seconds(env: Env): number {
	const v = env.ctx.getNodeParameter('durationSeconds', env.i, 0) as unknown;
	const s = parseDuration(v);
	if (s === undefined) env.fail(RUNBOOK.fields.seconds, DURATION_RULE);
	return s;
}
