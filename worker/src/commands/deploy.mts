import { UsageError, type Command } from './args.mts';

/** `secsvc deploy status | set-current BUILD_ID | retire-check [BUILD_ID]` (Worker Deployment Versioning). */
export const deploy: Command = async ({ pos, o, conn, t, out, need }) => {
	const { deploymentStatus, formatStatus, setCurrent } = await import('../process/deployStatus.mts');
	const sub = need(0, 'status|set-current|retire-check');
	const c = (await conn()).connection;
	if (sub === 'set-current') {
		const r = await setCurrent(c, t, need(1, 'BUILD_ID'));
		out(
			r.changed
				? `current build: ${r.current} (was ${r.previous ?? 'none'}); pinned runbooks stay on their build`
				: `build ${r.current} is already current; nothing changed`,
		);
		return 0;
	}
	if (sub !== 'status' && sub !== 'retire-check')
		throw new UsageError(`deploy ${sub}: must be status, set-current or retire-check`);
	const s = await deploymentStatus(c, t);
	if (sub === 'status') {
		out(o.json ? s : formatStatus(s));
		return 0;
	}
	const build = pos[1];
	const v = build ? s.versions.find((x) => x.buildId === build) : undefined;
	if (build && !v)
		throw new UsageError(
			`build id ${build}: unknown in worker deployment '${s.deployment}' (known builds: ${s.versions.map((x) => x.buildId).join(', ')})`,
		);
	const rows = v ? [v] : s.versions;
	out(
		o.json
			? rows.map(({ buildId, status, pinnedRunning, retirable, reason }) => ({
					buildId,
					status,
					pinnedRunning,
					retirable,
					reason,
				}))
			: formatStatus({ ...s, versions: rows }, 'retire'),
	);
	return v && !v.retirable ? 1 : 0;
};
