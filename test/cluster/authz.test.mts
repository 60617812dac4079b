/**
 * Temporal's own JWT authorization on the production-shaped cluster (issue 41, docs/worker/authorization.md): every
 * caller below holds the cluster CA's client certificate; what it may do is its bearer token's `permissions` claim.
 * No token: refused. A reader: describes, but cannot signal, update, terminate or reset. A worker's token: refused on
 * another namespace. A token with the same claims from another provider: refused (the JWKS is the cluster's).
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { startLocalProvider, type LocalProvider } from '../../worker/src/identity/localProvider.mts';
import { fetchBearer } from '../../worker/src/process/temporalToken.mts';
import { connectionOptions, loadTemporalConfig } from '../../worker/src/process/config.mts';
import { clusterClient, ensureCluster, tokenOf, type ClusterEnv } from './helpers.mts';

let env: ClusterEnv;
let writer: Awaited<ReturnType<typeof clusterClient>>;
const OTHER_NS = 'secsvc-authz-other';
const DENIED = /PERMISSION_DENIED: Request unauthorized|Request unauthorized/;
/** A refusal by Temporal's authorizer (the client wraps the gRPC status in its own error). */
const denied = (e: unknown) => {
	assert.match(`${(e as Error).message} ${(e as { cause?: Error }).cause?.message ?? ''}`, DENIED);
	return true;
};

before(async () => {
	env = await ensureCluster();
	writer = await clusterClient(env, { as: 'temporal-cli' });
	const admin = await clusterClient(env, { as: 'temporal-admin' });
	try {
		await admin.workflowService
			.registerNamespace({ namespace: OTHER_NS, workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86400) } })
			.catch((e: Error) => assert.match(e.message, /already exists|AlreadyExists/i));
	} finally {
		await admin.close();
	}
});
after(async () => {
	await writer?.close();
});

/** A workflow nobody runs (no worker polls its queue): the target of the refused writes. */
async function target(): Promise<string> {
	const id = `authz-target-${process.pid}-${Date.now()}`;
	await writer.workflow.start('attackResponse', {
		taskQueue: `authz-nobody-${process.pid}`,
		workflowId: id,
		args: [{}],
	});
	return id;
}

test('a CA-signed client certificate without a token is refused, gRPC and HTTP API', async () => {
	const bare = await clusterClient(env, { as: null });
	try {
		await assert.rejects(bare.workflow.list()[Symbol.asyncIterator]().next(), denied, 'list');
		await assert.rejects(
			bare.workflow.start('attackResponse', {
				taskQueue: 'authz-nobody',
				workflowId: `authz-bare-${Date.now()}`,
				args: [{}],
			}),
			denied,
			'start',
		);
	} finally {
		await bare.close();
	}
	const id = await target();
	const post = (token?: string) =>
		new Promise<number>((resolve, reject) => {
			const req = request(
				`${env.SECSVC_TEMPORAL_HTTP_URL}/api/v1/namespaces/${env.TEMPORAL_NAMESPACE}/workflows/${id}/terminate`,
				{
					method: 'POST',
					ca: readFileSync(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH),
					cert: readFileSync(env.TEMPORAL_TLS_CLIENT_CERT_PATH),
					key: readFileSync(env.TEMPORAL_TLS_CLIENT_KEY_PATH),
					headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
				},
				(res) => (res.resume(), resolve(res.statusCode ?? 0)),
			);
			req.on('error', reject);
			req.end(JSON.stringify({ reason: 'authz test' }));
		});
	assert.equal(await post(), 403, 'HTTP API terminate without a token');
	assert.equal(await post(await tokenOf(env, 'temporal-reader')), 403, "HTTP API terminate with a reader's token");
	const d = await writer.workflow.getHandle(id).describe();
	assert.equal(d.status.name, 'RUNNING', 'nothing was terminated');
	await writer.workflow.getHandle(id).terminate('authz test done');
});

test('a reader describes and lists, but cannot signal, update, terminate or reset', async () => {
	const id = await target();
	const reader = await clusterClient(env, { as: 'temporal-reader' });
	try {
		const h = reader.workflow.getHandle(id);
		assert.equal((await h.describe()).status.name, 'RUNNING', 'read: describe');
		await assert.rejects(h.signal('abort', { reason: 'reader' }), denied, 'signal');
		await assert.rejects(h.executeUpdate('decide', { args: [{ approved: true, by: 'reader' }] }), denied, 'update');
		await assert.rejects(h.terminate('reader'), denied, 'terminate');
		const first = (await writer.workflow.getHandle(id).fetchHistory()).events?.find(
			(e) => e.workflowTaskCompletedEventAttributes,
		);
		await assert.rejects(
			reader.workflowService.resetWorkflowExecution({
				namespace: env.TEMPORAL_NAMESPACE,
				workflowExecution: { workflowId: id },
				reason: 'reader',
				workflowTaskFinishEventId: first?.eventId ?? Long.fromNumber(3),
				requestId: `reset-${Date.now()}`,
			}),
			denied,
			'reset',
		);
		await assert.rejects(
			reader.workflow.start('attackResponse', { taskQueue: 'x', workflowId: `${id}-2`, args: [{}] }),
			denied,
			'start',
		);
	} finally {
		await reader.close();
	}
	const d = await writer.workflow.getHandle(id).describe();
	assert.equal(d.status.name, 'RUNNING', 'still running, untouched');
	const hist = JSON.stringify(await writer.workflow.getHandle(id).fetchHistory());
	assert.doesNotMatch(hist, /SIGNALED|workflowExecutionSignaledEventAttributes/, 'no signal recorded');
	await writer.workflow.getHandle(id).terminate('authz test done');
});

test("a worker's token cannot act on another namespace; a token from another provider is refused", async () => {
	const elsewhere = await clusterClient(env, { namespace: OTHER_NS }); // the env's temporal-worker token
	try {
		await assert.rejects(elsewhere.workflow.list()[Symbol.asyncIterator]().next(), denied, 'list on another namespace');
		await assert.rejects(
			elsewhere.workflow.start('attackResponse', {
				taskQueue: 'x',
				workflowId: `authz-other-${Date.now()}`,
				args: [{}],
			}),
			denied,
			'start on another namespace',
		);
	} finally {
		await elsewhere.close();
	}
	// the same client id, secret and permissions at another provider: its key is not in the cluster's JWKS
	let forger: LocalProvider | undefined;
	const t = loadTemporalConfig(env, undefined);
	try {
		forger = await startLocalProvider({
			people: {},
			services: [{ id: 'forged', secret: 'forged-secret-0123456789', permissions: ['temporal-system:admin'] }],
			serviceAudience: env.SECSVC_TEMPORAL_TOKEN_AUDIENCE,
		});
		const forged = await fetchBearer({
			issuer: forger.issuer,
			clientId: 'forged',
			clientSecret: 'forged-secret-0123456789',
			audience: env.SECSVC_TEMPORAL_TOKEN_AUDIENCE,
		});
		// refused at the first call (the SDK's connect asks the server's capabilities): the token does not verify
		await assert.rejects(Connection.connect({ ...connectionOptions(t), apiKey: forged.token }), denied);
	} finally {
		await forger?.close();
	}
});
