import {
	ActivityCancellationType,
	proxyActivities,
	proxyLocalActivities,
	type ActivityOptions,
} from '@temporalio/workflow';
import { COORDINATION, type ClaimRequest, type ClaimResult, type HandoverResult, type Hold } from './coordination.mts';
import type { createCoordinationActivities } from './activities.mts';

/**
 * Workflow side of "one owner per setting": claim, release and look up the holds of a site through the
 * `coordination.*` activities (workflows/coordinator/client.mts). The calling workflow is the owner.
 * A claim may wait (a hold waits for another owner's lease to end), so it is a regular activity with a long
 * start-to-close timeout; transient failures (Temporal unavailable) are retried without limit.
 */
const options: ActivityOptions = {
	startToCloseTimeout: '10m',
	// The activities heartbeat while they wait (workflows/coordinator/client.mts): a worker that dies during a claim costs
	// seconds, not the 10 minutes of the start-to-close timeout.
	heartbeatTimeout: '10s',
	retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: ['ValidationError'] },
};
const coord = proxyActivities<ReturnType<typeof createCoordinationActivities>>(options);
/**
 * For a caller that releases or reverts when it is cancelled (the attack response, since attackResponse/ownership.mts
 * IN_FLIGHT_ENDS_FIRST_PATCH): a cancel waits for the activity's end and its answer, so a claim's grant still waiting
 * at the coordinator (the activity hears the cancel by its heartbeat and asks no more) or a write still in flight
 * comes before the release and the revert.
 */
export const endsFirstOption = (endsFirst: boolean): ActivityOptions =>
	endsFirst ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {};
const coordEndsFirst = proxyActivities<ReturnType<typeof createCoordinationActivities>>({
	...options,
	...endsFirstOption(true),
});

export const claim = (site_id: string, req: Omit<ClaimRequest, 'owner'>, endsFirst = false): Promise<ClaimResult> =>
	(endsFirst ? coordEndsFirst : coord)[COORDINATION.claim]({ site_id, ...req });
/**
 * The same claim as a local activity: it starts at once, beside the local-activity reads of the same workflow task (a
 * regular activity is only scheduled when the task completes, after them). A retry after a lost worker re-asks it:
 * claims are idempotent per owner.
 */
const coordLocal = proxyLocalActivities<ReturnType<typeof createCoordinationActivities>>({
	startToCloseTimeout: '10m',
	retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: ['ValidationError'] },
});
export const claimBeside = (site_id: string, req: Omit<ClaimRequest, 'owner'>): Promise<ClaimResult> =>
	coordLocal[COORDINATION.claim]({ site_id, ...req });
export const release = (
	site_id: string,
	keys?: string[],
	queuedOnly?: boolean,
): Promise<{ released: number; dequeued?: number }> =>
	coord[COORDINATION.release]({ site_id, ...(keys ? { keys } : {}), ...(queuedOnly ? { queuedOnly: true } : {}) });
/** Passes the caller's keys that have a successor to it (expiring blocks); returns them: leave those settings alone. */
export const handover = (site_id: string, keys: string[]): Promise<HandoverResult> =>
	coord[COORDINATION.handover]({ site_id, keys });
/** The site's holds (only those of `keys` when given). */
export const holdsOf = (site_id: string, keys?: string[]): Promise<Hold[]> =>
	coord[COORDINATION.holds]({ site_id, ...(keys ? { keys } : {}) });
