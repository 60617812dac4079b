import { allowRequestProblems } from '../../../api/runbook/allowRules.ts';
import { loadGuardConfig } from '../process/config.mts';
import { allowListWins, formatAllow } from '../../../workflows/blocks/clientAllow.mts';
import { siteArg, UsageError, type Command } from './args.mts';

/**
 * `secsvc allow SITE [RANGE…] --reason TEXT [--dp DP] [--from-config] [--json]`: the allow-list always wins (issue 39
 * item 4). Ends at once the live expiring blocks and the running runbook's entries that overlap the ranges (or the
 * worker configuration's protected ranges: --from-config), each reported with the reason. For ranges allowed outside
 * our tools: a protected range added to the credential or the configuration, a tenant's declaration.
 * `secsvc call applicationProtection.ipWhitelist.add` does the same for the entry it adds (call.mts).
 */
export const allow: Command = async ({ pos, o, conn, out }) => {
	const site = siteArg(pos[0], 'SITE');
	const ranges = pos.slice(1);
	if (o['from-config']) ranges.push(...loadGuardConfig().protectedRanges.map((p) => p.range));
	if (!ranges.length) throw new UsageError('RANGE: is required (or --from-config)');
	if (typeof o.reason !== 'string') throw new UsageError('--reason: is required (why these ranges are allowed)');
	const dp = o.dp === undefined ? undefined : siteArg(o.dp, 'DP');
	const p = allowRequestProblems({ ranges, reason: o.reason });
	if (p.length) throw new UsageError(p.join('; '));
	const r = await allowListWins(await conn(), site, ranges, o.reason, dp);
	out(o.json ? r : formatAllow(r));
	return r.notEnded.length ? 1 : 0;
};
