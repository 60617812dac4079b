import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { applyFleet, fleetStatus, formatApply, formatStatus } from './client.mts';
import { FleetConfigError, parseFleet } from './clientConfig.mts';
import { fleetWatchPlaybook } from './playbook.mts';

/** `secsvc fleet apply FILE [--dry-run] [--json]` and `secsvc fleet status [--fleet NAME] [--json]` (./playbook.mts). */
const FLEET_USAGE = fleetWatchPlaybook.commands.fleet.usage + '\n';

export class FleetUsageError extends Error {}

export async function runFleet(
	pos: string[],
	o: Record<string, string | boolean>,
	conn: () => Promise<Client>,
	taskQueue: string,
	out: (v: unknown) => void,
): Promise<number> {
	const sub = pos[0];
	if (sub === 'apply') {
		const file = pos[1] ?? (typeof o.file === 'string' ? o.file : undefined);
		if (!file) throw new FleetUsageError('fleet apply FILE: FILE is required (a fleet JSON file)');
		let raw: unknown;
		try {
			raw = JSON.parse(readFileSync(file, 'utf8'));
		} catch (e) {
			throw new FleetUsageError(`fleet apply ${file}: must be a readable JSON file (${(e as Error).message})`);
		}
		const f = parseFleet(raw); // every error named by site and field; nothing is sent
		const r = await applyFleet(await conn(), taskQueue, f, { dryRun: o['dry-run'] === true });
		out(o.json ? r : formatApply(r));
		return 0;
	}
	if (sub === 'status') {
		const fleet = typeof o.fleet === 'string' ? o.fleet : 'default';
		const s = await fleetStatus(await conn(), fleet);
		out(o.json ? s : formatStatus(s));
		return 0;
	}
	throw new FleetUsageError(`fleet ${sub ?? ''}: must be apply or status\n${FLEET_USAGE}`);
}

export const isFleetUserError = (e: unknown) => e instanceof FleetUsageError || e instanceof FleetConfigError;
