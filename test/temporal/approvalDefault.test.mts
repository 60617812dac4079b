/**
 * Proven approvals by default (issue 41 item 2): a worker with no identity provider and no opt-in refuses at start a
 * runbook that requires approval (a typed name decides nothing) and says so at start-up; the opt-in
 * (SECSVC_UNVERIFIED_APPROVALS=1) prints a loud warning and records typed decisions `unverified`. The demo's local
 * identity provider (worker/src/identity/demoIdentity.mts) makes the default path the proven one: bob's decision
 * through `secsvc approve` (a browser login at the provider) is accepted as verified. A starter's ID token
 * without the payload key is refused before the start: no workflow exists afterwards.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { decide, startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { startWorker } from '../../worker/src/process/worker.mts';
import { loadConfig } from '../../worker/src/process/config.mts';
import { approvalsNotice } from '../../worker/src/identity/config.mts';
import { N8N_CLIENT, startDemoIdentity } from '../../worker/src/identity/demoIdentity.mts';
import { dataConverterFor, parseKeys } from '../../worker/src/temporal/codec.mts';
import { run } from '../../worker/src/commands/cli.mts';
import { APP_ID, env, plan, SECRET, startSim, uniqueQueue, useDevServer, waitFor, workerConfig } from './helpers.mts';
import { personAt } from '../helpers/oidcProvider.mts';

useDevServer();

const gated = (ids: Parameters<typeof plan>[0]) =>
	plan(ids, {
		cooldownSeconds: 1,
		ipAuth: undefined,
		switches: [],
		blacklist: { enabled: false },
		detection: { rapidMode: true, thresholds: [] },
		approval: { required: true, timeoutSeconds: 120, onTimeout: 'reject' },
	});

test('no identity provider and no opt-in: a runbook that requires approval is refused at start, naming the setting', async () => {
	const s = await startSim(41);
	const queue = uniqueQueue('approval-default');
	const cfg = { ...workerConfig(env, s.url, queue), unverifiedApprovals: false };
	const w = await startWorker(cfg, { connection: env.nativeConnection });
	try {
		const ids = s.sim.firstIds();
		const h = await startAttackResponse(env.client, queue, gated(ids), { workflowId: `default-${process.pid}-1` });
		await assert.rejects(h.result(), (e: Error) => {
			assert.match(
				String((e as { cause?: Error }).cause?.message ?? e.message),
				/^approval: this worker cannot prove who approves: it has no identity provider \(SECSVC_OIDC_ISSUER\) and unverified approvals are off \(SECSVC_UNVERIFIED_APPROVALS=1/,
			);
			return true;
		});
		assert.equal(s.sim.requests().filter((r) => r.method !== 'GET' && !r.opId?.startsWith('authorization.')).length, 0);
	} finally {
		await w.shutdown();
		await s.close();
	}
	assert.match(approvalsNotice(undefined, false), /runbooks that require approval are refused at start/);
	assert.match(
		approvalsNotice(undefined, true),
		/^WARNING: UNVERIFIED APPROVALS ARE ON \(SECSVC_UNVERIFIED_APPROVALS\)/,
	);
	const base = { SECSVC_BASE_URL: 'http://127.0.0.1:1', SECSVC_APP_ID: 'a', SECSVC_SECRET: 's' };
	assert.equal(loadConfig(base, undefined).unverifiedApprovals, undefined, 'off by default');
	assert.equal(loadConfig({ ...base, SECSVC_UNVERIFIED_APPROVALS: '1' }, undefined).unverifiedApprovals, true);
	assert.throws(
		() => loadConfig({ ...base, SECSVC_UNVERIFIED_APPROVALS: 'yes' }, undefined),
		/SECSVC_UNVERIFIED_APPROVALS: must be 1 or 0/,
	);
});

test("the demo's identity provider: bob approves through `secsvc approve` (browser login), verified; an unsealed starter token is refused before the start", async () => {
	const s = await startSim(42);
	const id = await startDemoIdentity();
	const person = personAt(id.provider);
	const queue = uniqueQueue('approval-demo');
	const cfg = loadConfig(
		{
			...id.workerEnv,
			TEMPORAL_ADDRESS: env.address,
			TEMPORAL_TASK_QUEUE: queue,
			SECSVC_BASE_URL: s.url,
			SECSVC_APP_ID: APP_ID,
			SECSVC_SECRET: SECRET,
			SECSVC_TOKEN_KIND: 'app',
		},
		undefined,
	);
	const saved = { ...process.env };
	process.env.SECSVC_PAYLOAD_KEYS = id.workerEnv.SECSVC_PAYLOAD_KEYS; // the worker's codec reads its keys here
	const w = await startWorker(cfg, { connection: env.nativeConnection });
	try {
		const ids = s.sim.firstIds();
		const workflowId = `attack-response-${ids.site_id}-demo-${process.pid}`;
		const aliceStart = await person.login('oncall-alice', { clientId: N8N_CLIENT });
		// the starter's token from a client without the payload key: refused before anything is sent
		await assert.rejects(
			startAttackResponse(env.client, queue, gated(ids), { workflowId, idToken: aliceStart }),
			/^Error: SECSVC_PAYLOAD_KEYS: is required to send the starter's ID token .*; nothing was started$|^SECSVC_PAYLOAD_KEYS/,
		);
		await assert.rejects(env.client.workflow.getHandle(workflowId).describe(), WorkflowNotFoundError);
		// with the key (the demo's client env): alice starts it, a typed name is refused, bob approves with a login
		const sealedClient = new Client({
			connection: env.client.connection,
			dataConverter: dataConverterFor(parseKeys(id.clientEnv.SECSVC_PAYLOAD_KEYS)),
		});
		const h = await startAttackResponse(sealedClient, queue, gated(ids), { workflowId, idToken: aliceStart });
		await waitFor('gate', async () => ((await h.query(stateQuery)).phase === 'awaiting-approval' ? true : undefined));
		await assert.rejects(
			decide(sealedClient, workflowId, { approved: true, by: 'oncall-alice', via: 'api' }),
			/proof: an ID token from the identity provider is required/,
		);
		Object.assign(process.env, id.clientEnv, { TEMPORAL_ADDRESS: env.address, TEMPORAL_TASK_QUEUE: queue });
		const out: string[] = [];
		let browsing: Promise<void> | undefined;
		const code = await run(['approve', workflowId, '--reason', 'seen on the graphs'], {
			out: (x) => void out.push(x),
			err: (x) => {
				const url = /^Open (\S+) to log in/.exec(x)?.[1];
				if (url) browsing = person.browse(url, 'bob');
				else out.push(x);
			},
		});
		await browsing;
		assert.equal(code, 0, out.join(''));
		const st = await h.query(stateQuery);
		assert.deepEqual([st.approval?.identity?.verified, st.approval?.identity?.name], ['oidc', 'bob@example.com']);
		await h.signal('abort', { reason: 'test done' }).catch(() => {});
		await h.result().catch(() => ({}) as AttackResponseResult);
	} finally {
		for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
		Object.assign(process.env, saved);
		await w.shutdown();
		await id.stop();
		await s.close();
	}
});
