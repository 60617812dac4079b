import { holds as heldAt, release } from './client.mts';
import { printable } from '../../worker/src/temporal/printable.mts';
import { runbookArg, siteArg, UsageError, type Command } from '../../worker/src/commands/args.mts';

/** `secsvc holds SITE` (what the site's coordinator holds) and `secsvc holds release SITE --owner ID`. */
export const holds: Command = async ({ pos, o, conn, out }) => {
	if (pos[0] === 'release') {
		if (typeof o.owner !== 'string')
			throw new UsageError('--owner: is required (the workflow id whose holds are let go)');
		const [site, owner] = [siteArg(pos[1], 'SITE'), runbookArg(o.owner, '--owner')];
		out(await release(await conn(), site, owner));
		return 0;
	}
	// SITE names the coordinator `site-<SITE>`: the ids' rule, or a clear error (never "nothing held" for `..`).
	const site = siteArg(pos[0], 'SITE');
	const held = await heldAt(await conn(), site);
	out(
		o.json
			? held
			: held.length
				? held
						.map((h) => printable(`${h.key}  ${h.mode} by ${h.owner} since ${h.since} until ${h.until} — ${h.reason}`))
						.join('\n')
				: 'nothing held',
	);
	return 0;
};
