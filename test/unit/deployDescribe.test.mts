/**
 * describeDeployment / versionTaskQueues against a scripted connection (deploy.mts, describeEntity). Temporal Server
 * 1.29 answers NotFound for an existing deployment while its entity workflow continues as new: such a NotFound is
 * looked at (is the entity workflow open?) and the describe goes again; a deployment or version whose entity is absent
 * or closed is absent; NotFound with the entity open every time is an error, never "absent". The server can hold a
 * describe until its own 30 s timeout (its internal worker did not answer the query): every describe carries its own
 * deadline, a held one goes again, and one held DESCRIBES_HELD times is an error saying the server did not answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
	DeployError,
	DESCRIBE_DEADLINE_MS,
	describeDeployment,
	DESCRIBES_HELD,
	ENTITY_DESCRIBES,
	versionTaskQueues,
	type Conn,
} from '../../worker/src/process/deploy.mts';

const notFound = (what: string) => Object.assign(new Error(`5 NOT_FOUND: ${what}`), { code: 5 });
const held = () => Object.assign(new Error('4 DEADLINE_EXCEEDED: context deadline exceeded'), { code: 4 });
const RUNNING = 1;
const CONTINUED_AS_NEW = 6;
const COMPLETED = 2;

/**
 * A connection whose describes answer NotFound `misses` times (DEADLINE_EXCEEDED instead when `fail` is 'held'), then
 * `answer`; the entity workflow has `status`. `deadlines`: the deadline each describe ran under, relative to its start.
 */
function scripted(misses: number, status: number | 'absent', fail: 'notFound' | 'held' = 'notFound') {
	const calls: string[] = [];
	const deadlines: number[] = [];
	let left = misses;
	let deadline: number | undefined;
	const describe = (kind: string, answer: object) => async () => {
		calls.push(kind);
		deadlines.push((deadline ?? Infinity) - Date.now());
		if (left-- > 0) throw fail === 'held' ? held() : notFound('Worker Deployment not found');
		return answer;
	};
	const svc = {
		describeWorkerDeployment: describe('deployment', {
			workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: { buildId: 'b1' } }, versionSummaries: [] },
		}),
		describeWorkerDeploymentVersion: describe('version', { versionTaskQueues: [{ name: 'q', type: 1 }] }),
		describeWorkflowExecution: async (req: { execution: { workflowId: string } }) => {
			calls.push(`entity ${req.execution.workflowId}`);
			if (status === 'absent') throw notFound(`workflow not found for ID: ${req.execution.workflowId}`);
			return { workflowExecutionInfo: { status } };
		},
	};
	const c = {
		workflowService: svc,
		async withDeadline<R>(d: number | Date, fn: () => Promise<R>) {
			deadline = Number(d);
			try {
				return await fn();
			} finally {
				deadline = undefined;
			}
		},
	} as unknown as Conn;
	return { svc: c, calls, deadlines };
}

test('a NotFound while the entity workflow continues as new: the describe goes again and reads the deployment', async () => {
	for (const status of [RUNNING, CONTINUED_AS_NEW]) {
		const { svc, calls } = scripted(1, status);
		const d = await describeDeployment(svc, 'default', 'secsvc');
		assert.equal(d?.current, 'b1');
		assert.deepEqual(calls, ['deployment', 'entity temporal-sys-worker-deployment:secsvc', 'deployment']);
	}
	const { svc, calls } = scripted(2, RUNNING);
	assert.deepEqual(await versionTaskQueues(svc, 'default', 'secsvc', 'b1'), ['q']);
	assert.deepEqual(calls, [
		'version',
		'entity temporal-sys-worker-deployment-version:secsvc:b1',
		'version',
		'entity temporal-sys-worker-deployment-version:secsvc:b1',
		'version',
	]);
});

test('a deployment or version whose entity workflow is absent or closed is absent: one describe, one look', async () => {
	for (const status of ['absent', COMPLETED] as const) {
		const a = scripted(Infinity, status);
		assert.equal(await describeDeployment(a.svc, 'default', 'secsvc'), undefined);
		assert.equal(a.calls.length, 2);
		const b = scripted(Infinity, status);
		assert.deepEqual(await versionTaskQueues(b.svc, 'default', 'secsvc', 'b1'), []);
		assert.equal(b.calls.length, 2);
	}
});

test('NotFound every time with the entity workflow open: an error naming it, never "absent"', async () => {
	const { svc, calls } = scripted(Infinity, RUNNING);
	await assert.rejects(describeDeployment(svc, 'default', 'secsvc'), (e: unknown) => {
		assert.ok(e instanceof DeployError);
		assert.match(e.message, /NotFound 5 times for temporal-sys-worker-deployment:secsvc, whose workflow is open/);
		return true;
	});
	assert.equal(calls.filter((c) => c === 'deployment').length, ENTITY_DESCRIBES);
});

test('a describe the server held past its deadline goes again; its own deadline is on every describe', async () => {
	const { svc, calls, deadlines } = scripted(DESCRIBES_HELD - 1, RUNNING, 'held');
	assert.equal((await describeDeployment(svc, 'default', 'secsvc'))?.current, 'b1');
	assert.deepEqual(calls, Array(DESCRIBES_HELD).fill('deployment'), 'no entity look-up for a held describe');
	for (const d of deadlines)
		assert.ok(d > DESCRIBE_DEADLINE_MS - 1000 && d <= DESCRIBE_DEADLINE_MS, `deadline ${d} ms`);
});

test('a describe held DESCRIBES_HELD times in a row: an error saying the server did not answer, not "absent"', async () => {
	const { svc, calls } = scripted(Infinity, RUNNING, 'held');
	await assert.rejects(versionTaskQueues(svc, 'default', 'secsvc', 'b1'), (e: unknown) => {
		assert.ok(!(e instanceof DeployError), 'not a refusal: the CLI exits 1, not 2');
		assert.match(
			(e as Error).message,
			new RegExp(
				`did not answer the describe of temporal-sys-worker-deployment-version:secsvc:b1 within ${DESCRIBE_DEADLINE_MS / 1000} s, ${DESCRIBES_HELD} times`,
			),
		);
		assert.equal(((e as Error).cause as { code?: number }).code, 4);
		return true;
	});
	assert.equal(calls.length, DESCRIBES_HELD);
});
