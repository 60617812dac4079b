import { ApplicationFailure } from '@temporalio/common';
import { getOperation, hasOperation } from '../../../api/catalog/index.ts';
import type { Client } from '../../../api/client.ts';
import { redactText } from '../../../api/redact.ts';
import { checkDesiredState, DesiredStateError } from '../../../api/runbook/desired.ts';

/** The local activity `input.check` (operations.mts): the inputs of workflows started directly, by the CLI's rules. */

/** The CLI's checks of a workflow input: a refusal is a non-retryable ValidationError naming the field. */
export function checkInput(client: Client, kind: unknown, input: unknown): void {
	const fail = (message: string) => {
		throw ApplicationFailure.nonRetryable(message, 'ValidationError');
	};
	if (kind === 'desired') {
		try {
			checkDesiredState(input);
		} catch (e) {
			if (e instanceof DesiredStateError) fail(e.message);
			throw e;
		}
		return;
	}
	if (kind === 'durableCall') {
		const { op, params } = (input ?? {}) as { op?: unknown; params?: Record<string, unknown> };
		if (typeof op !== 'string' || !hasOperation(op))
			return fail('invalid durable call — op: not an operation id (npm run -s catalog lists them)');
		if (getOperation(op).resource === 'authorization') return; // its secrets come from the worker's configuration
		try {
			client.validate(op, params ?? {}); // the client's own rules: the activity would refuse the same
		} catch (e) {
			if ((e as Error)?.name === 'ValidationError') fail(`invalid durable call — ${redactText((e as Error).message)}`);
			throw e;
		}
		return;
	}
	fail('kind: must be desired or durableCall');
}
