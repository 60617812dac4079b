import { holds as heldAt, release } from '../temporal/coordination.mts';
import { UsageError, type Command } from './args.mts';

/** `secsvc holds SITE` (what the site's coordinator holds) and `secsvc holds release SITE --owner ID`. */
export const holds: Command = async ({ pos, o, conn, out, need }) => {
	if (pos[0] === 'release') {
		if (typeof o.owner !== 'string') throw new UsageError('--owner: is required (the workflow id whose holds are let go)');
		out(await release(await conn(), need(1, 'SITE'), o.owner));
		return 0;
	}
	const held = await heldAt(await conn(), need(0, 'SITE'));
	out(o.json ? held : held.length ? held.map((h) => `${h.key}  ${h.mode} by ${h.owner} since ${h.since} until ${h.until} — ${h.reason}`).join('\n') : 'nothing held');
	return 0;
};
