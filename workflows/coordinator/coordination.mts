import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Hold } from '../../api/runbook/contract.ts';

/**
 * One owner per setting (workflows/README.md "One owner per setting"). Every playbook of ours that writes a site asks
 * the site's coordinator (`siteCoordinator`, workflow id `site-<site>`) first. Shared by the coordinator, the
 * playbooks (through the `coordination.*` activities), the worker and the CLI.
 *
 * Keys name one setting of the site (see settingKey): a runbook HOLDS the keys of everything it may change for the
 * whole attack; other playbooks (drift enforce, expiring blocks, HTTP-filter writes) take short LEASES and skip
 * what someone else holds.
 */

export const coordinatorIdFor = (site: string) => `site-${site}`;

export const settingKey = {
	detectionMode: () => 'detection.mode',
	detectionItem: (item: string) => `detection.${item}`,
	ipAuth: (dp: string) => `${dp}/ipAuth`,
	switch: (dp: string, name: string) => `${dp}/switch/${name}`,
	/** One IP-list entry, as a start-end range ("1.2.3.0-1.2.3.255"). */
	blacklistEntry: (dp: string, range: string) => `${dp}/blacklist/${range}`,
	whitelistEntry: (dp: string, range: string) => `${dp}/whitelist/${range}`,
	xForwardedFor: (dp: string) => `${dp}/xForwardedFor`,
	/** HTTP-filter create/edit of a domain-port (§4.3.1/§7: never concurrent). */
	httpFilterWrite: (dp: string) => `${dp}/httpFilter.write`,
};

export type { Hold };

/** A write lock (HTTP-filter create/edit), not a setting anyone snapshots: its lease ends need no linger. */
export const isWriteLock = (key: string) => key.endsWith('/httpFilter.write');

export interface ClaimRequest {
	owner: string;
	keys: string[];
	/**
	 * hold: the runbook's (long; waits while a lease of another owner covers one of its keys, so no two writers
	 * ever write one setting). lease: short; keys held or leased by another owner are refused unless `wait`.
	 */
	mode: 'hold' | 'lease';
	reason: string;
	/** Seconds after which the coordinator lets the claim go by itself (default: hold 25 h, lease 300 s). */
	ttlSeconds?: number;
	/** lease only: wait until every key is free, then take them all (used to serialize HTTP-filter writes). */
	wait?: boolean;
	/**
	 * hold only (expiring blocks): a key another HOLD has is not refused but queued — this owner becomes its
	 * successor (one per key). The key passes to the successor when its holder hands it over (`handover`), releases
	 * it or dies (its `until`); the successor is then told by the signal `handedOver` (keys; `released`: those not
	 * handed over).
	 */
	queue?: boolean;
	/**
	 * A waiting claim (hold, or lease with `wait`) waits at most this long (1–60 s); not granted by then, it takes
	 * nothing and answers `waiting`, and its caller asks again while it is alive (client.mts `claim`). So no claim
	 * outlives its caller — a claim activity whose attempt was lost (a killed worker, a lost lease) — by more than
	 * this; before, such a claim stayed in flight until granted, and ten of them made the coordinator refuse every
	 * Update (the server's limit of in-flight Updates per workflow: interleave seed 36). Without it: until granted.
	 * 0: asked once, not waited for (the attack response's hold beside its reads, which then waits as an activity).
	 */
	waitSeconds?: number;
	/**
	 * A hold taken beside reads of its settings (the attack response's snapshot, issue 42): when the reads went out
	 * (ISO). The answer says in `changedSince` whether another owner's grant of one of its keys ended at or after
	 * that time (its write may have landed after the reads), or the coordinator cannot tell (a run that started too
	 * late to know): the caller then reads again.
	 */
	since?: string;
}

export interface ClaimResult {
	granted: string[];
	/** Keys another owner holds (or leases): not granted, to be left alone and reported. */
	held: Hold[];
	/** queue: keys this owner now waits for as successor (their holder is in `held`). */
	queued?: string[];
	/** Not granted within `waitSeconds`: nothing taken; ask again. */
	waiting?: true;
	/** Only with `since`: false when no other owner's grant of the keys ended since then (the reads stand). */
	changedSince?: boolean;
}

export interface ReleaseRequest {
	owner: string;
	/** Keys to release; all of the owner's when absent. */
	keys?: string[];
	/** Only withdraw this owner's successor places (queue), keep what it holds. */
	queuedOnly?: boolean;
}

/** A successor waiting for a key another hold has (claim `queue: true`). */
export interface Successor {
	key: string;
	owner: string;
	ttlSeconds: number;
	reason: string;
	since: string;
}

export interface HandoverRequest {
	owner: string;
	/** The holder's keys it is about to let go (e.g. the blacklist entries its revert would remove). */
	keys: string[];
}

/** Keys passed to their successor (the holder must not undo them: the successor owns them now). */
export interface HandoverResult {
	handedOver: { key: string; to: string }[];
}

export const claimUpdate = defineUpdate<ClaimResult, [ClaimRequest]>('claim');
export const releaseUpdate = defineUpdate<{ released: number; dequeued?: number }, [ReleaseRequest]>('release');
/**
 * The same release as a signal, for a caller that needs no answer (expiring blocks' releases after their removals):
 * it holds no activity slot while the coordinator gets to it, and the coordinator takes many in one workflow task. A
 * malformed one is ignored (a signal cannot be refused); to a coordinator that is not running there is nothing held.
 */
export const releaseSignal = defineSignal<[ReleaseRequest]>('releaseKeys');
export const handoverUpdate = defineUpdate<HandoverResult, [HandoverRequest]>('handover');
/**
 * Sent by the coordinator to a successor when keys pass to it. `released`: those of `keys` whose holder let them go
 * without handing them over (a release, or its death): it never said it wrote the setting, so the successor does not
 * own it by that (an expiring block checks the entry as a fresh add does). Absent: all were handed over.
 */
export const handedOverSignal = defineSignal<[HandedOver]>('handedOver');
export interface HandedOver {
	site_id: string;
	keys: string[];
	released?: string[];
}
export const holdsQuery = defineQuery<Hold[]>('holds');
/**
 * The holds a page at a time (`secsvc holds` on a site with thousands of expiring blocks: the whole list in one answer
 * would pass Temporal's 2 MB limit): holds `offset` … `offset + limit` (at most HOLDS_PAGE) of `total`.
 */
export const holdsPageQuery = defineQuery<{ total: number; holds: Hold[] }, [{ offset?: number; limit?: number }]>(
	'holdsPage',
);
export const HOLDS_PAGE = 2000;

/** Activity names (registered by workflows/coordinator/client.mts). */
export const COORDINATION = {
	claim: 'coordination.claim',
	release: 'coordination.release',
	handover: 'coordination.handover',
	holds: 'coordination.holds',
} as const;

export const MAX_KEYS = 2000;
