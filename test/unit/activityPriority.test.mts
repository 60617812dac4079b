/**
 * The worker's `priorityOf` (worker/src/service/priority.mts `activityPriority`): inside an activity, the class its
 * call site says (playbook, activity, token requests 'mitigate'); outside one (CLI, start-up), undefined — found
 * without an Error: `Context.current()` threw one, with its stack, for every budgeted call made there.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { getOperation } from '../../api/catalog/index.ts';
import { activityPriority } from '../../worker/src/service/priority.mts';

const read = getOperation('dashboard.isUnderAttack');
const token = getOperation('authorization.appToken');

/** How many Errors `fn` constructs (any `new Error(…)` that resolves the global `Error`), and its result. */
function errorsMadeBy<T>(fn: () => T): { made: number; result: T } {
	const real = globalThis.Error;
	let made = 0;
	globalThis.Error = new Proxy(real, {
		construct(target, args, newTarget) {
			made++;
			return Reflect.construct(target, args, newTarget === globalThis.Error ? target : newTarget);
		},
	});
	try {
		const result = fn();
		return { made, result };
	} finally {
		globalThis.Error = real;
	}
}

test('outside an activity: undefined, and no Error made', () => {
	const r = errorsMadeBy(() => [activityPriority(read), activityPriority(token)]);
	assert.deepEqual(r.result, [undefined, undefined]);
	assert.equal(r.made, 0);
	// the counter counts: an Error made inside it is seen
	assert.equal(errorsMadeBy(() => new Error('x')).made, 1);
});

test("inside an activity: its call site's class", async () => {
	const at = (workflowType: string, activityType: string) =>
		new MockActivityEnvironment({ workflowType, activityType }).run(async () => [
			activityPriority(read),
			activityPriority(token),
		]);
	assert.deepEqual(await at('attackReport', 'snapshot'), ['report', 'mitigate']);
	assert.deepEqual(await at('blocks', 'blocks.add'), ['mitigate', 'mitigate']);
	assert.deepEqual(await at('blocks', 'blocks.remove'), ['revert', 'mitigate']);
	assert.deepEqual(await at('attackResponse', 'fleet.checkSites'), ['watch', 'mitigate']);
	assert.deepEqual(await at('noSuchWorkflow', 'x'), [undefined, 'mitigate']);
});
