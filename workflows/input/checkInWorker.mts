import { ActivityFailure, ApplicationFailure, patched, proxyLocalActivities } from '@temporalio/workflow';

import { CHECK_INPUT_ACTIVITY, type CheckedKind } from '../pure/activityNames.mts';

const checker = proxyLocalActivities<Record<string, (kind: CheckedKind, input: unknown) => Promise<void>>>({
	startToCloseTimeout: '10s',
	retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['ValidationError'] },
});

/**
 * Checks an input with the very rules the CLI applies before sending it (zod schemas, the catalog: they stay out of
 * the workflow bundle) in a local activity, like the plan's parse (parsePlan.mts): a bad input fails the run with a
 * non-retryable ValidationError naming the field. Runs started before `input-checked` replay without it.
 */
export async function checkInWorker(kind: CheckedKind, input: unknown): Promise<void> {
	if (!patched('input-checked')) return;
	try {
		await checker[CHECK_INPUT_ACTIVITY](kind, input);
	} catch (e) {
		const cause = e instanceof ActivityFailure ? e.cause : undefined;
		if (cause instanceof ApplicationFailure && cause.type === 'ValidationError')
			throw ApplicationFailure.nonRetryable(cause.message, 'ValidationError');
		throw e;
	}
}
