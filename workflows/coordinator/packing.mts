import type { Hold } from './coordination.mts';

/**
 * Holds carried across continue-as-new, packed (since `coordinator-packed-holds`): the holds of one owner that share
 * mode, reason, since and until (an expiring-blocks add batch: thousands of keys) as ONE group naming their keys, so a
 * hold weighs its key's text (~45 bytes) instead of a ~250-byte object (api/blockCapacity.ts MAX_SITE_BLOCKS). Pure.
 */
export interface PackedHolds {
	owner: string;
	mode: Hold['mode'];
	reason: string;
	since: string;
	until: string;
	keys: string[];
}

export function packHolds(holds: Iterable<Hold>): PackedHolds[] {
	const groups = new Map<string, PackedHolds>();
	for (const h of holds) {
		const id = JSON.stringify([h.owner, h.mode, h.reason, h.since, h.until]);
		const g = groups.get(id);
		if (g) g.keys.push(h.key);
		else
			groups.set(id, { owner: h.owner, mode: h.mode, reason: h.reason, since: h.since, until: h.until, keys: [h.key] });
	}
	return [...groups.values()];
}

export function unpackHolds(groups: readonly PackedHolds[]): Hold[] {
	return groups.flatMap((g) =>
		g.keys.map((key) => ({ key, owner: g.owner, mode: g.mode, since: g.since, until: g.until, reason: g.reason })),
	);
}
