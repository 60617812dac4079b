import { proxyActivities } from '@temporalio/workflow';
import { COORDINATION, type ClaimRequest, type ClaimResult, type HandoverResult, type Hold } from './coordination.mts';

/**
 * Workflow side of "one owner per setting": claim, release and look up the holds of a site through the
 * `coordination.*` activities (worker/src/temporal/coordination.mts). The calling workflow is the owner.
 * A claim may wait (a hold waits for another owner's lease to end), so it is a regular activity with a long
 * start-to-close timeout; transient failures (Temporal unavailable) are retried without limit.
 */
const coord = proxyActivities<Record<string, (input: Record<string, unknown>) => Promise<any>>>({ // eslint-disable-line @typescript-eslint/no-explicit-any
	startToCloseTimeout: '10m',
	// The activities heartbeat while they wait (worker/src/temporal/coordination.mts): a worker that dies during a claim costs
	// seconds, not the 10 minutes of the start-to-close timeout.
	heartbeatTimeout: '10s',
	retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: ['ValidationError'] },
});

export const claim = (site_id: string, req: Omit<ClaimRequest, 'owner'>): Promise<ClaimResult> => coord[COORDINATION.claim]({ site_id, ...req });
export const release = (site_id: string, keys?: string[], queuedOnly?: boolean): Promise<{ released: number; dequeued?: number }> =>
	coord[COORDINATION.release]({ site_id, ...(keys ? { keys } : {}), ...(queuedOnly ? { queuedOnly: true } : {}) });
/** Passes the caller's keys that have a successor to it (expiring blocks); returns them: leave those settings alone. */
export const handover = (site_id: string, keys: string[]): Promise<HandoverResult> => coord[COORDINATION.handover]({ site_id, keys });
export const holdsOf = (site_id: string): Promise<Hold[]> => coord[COORDINATION.holds]({ site_id });
