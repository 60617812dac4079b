import { ActivityFailure, ApplicationFailure, proxyLocalActivities } from '@temporalio/workflow';
import type { Plan } from '../../api/runbook/plan.ts';
import { PARSE_PLAN_ACTIVITY } from '../pure/activityNames.mts';

const parser = proxyLocalActivities<Record<string, (plan: unknown) => Promise<Plan>>>({
	startToCloseTimeout: '10s',
	retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['ValidationError'] },
});

/**
 * Parses (and fills the defaults of) a plan in the worker, outside the workflow sandbox: zod stays out of the
 * workflow bundle. The parsed plan is recorded in history, so replays see the same plan. A bad plan fails the
 * workflow with a non-retryable ValidationError naming each field and rule.
 */
export async function parsePlanInWorker(plan: unknown): Promise<Plan> {
	try {
		return await parser[PARSE_PLAN_ACTIVITY](plan);
	} catch (e) {
		const cause = e instanceof ActivityFailure ? e.cause : undefined;
		if (cause instanceof ApplicationFailure && cause.type === 'ValidationError')
			throw ApplicationFailure.nonRetryable(cause.message, 'ValidationError', ...(cause.details ?? []));
		throw e;
	}
}
