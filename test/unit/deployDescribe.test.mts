/**
 * describeDeployment / versionTaskQueues against a scripted workflow service: Temporal Server 1.29 answers NotFound
 * for an existing deployment while its entity workflow continues as new (deploy.mts, unlessEntityOpen). Such a
 * NotFound is looked at (is the entity workflow open?) and the describe goes again; a deployment or version whose
 * entity is absent or closed is absent; NotFound with the entity open every time is an error, never "absent".
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
	DeployError,
	describeDeployment,
	ENTITY_DESCRIBES,
	versionTaskQueues,
	type Svc,
} from '../../worker/src/process/deploy.mts';

const notFound = (what: string) => Object.assign(new Error(`5 NOT_FOUND: ${what}`), { code: 5 });
const RUNNING = 1;
const CONTINUED_AS_NEW = 6;
const COMPLETED = 2;

/** A service whose describes answer NotFound `misses` times, then `answer`; the entity workflow has `status`. */
function scripted(misses: number, status: number | 'absent') {
	const calls: string[] = [];
	let left = misses;
	const describe = (kind: string, answer: object) => async () => {
		calls.push(kind);
		if (left-- > 0) throw notFound('Worker Deployment not found');
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
	} as unknown as Svc;
	return { svc, calls };
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
