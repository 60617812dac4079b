/**
 * Against the production-shaped cluster (scripts/temporal-cluster.sh: PostgreSQL, four services, mutual TLS,
 * namespace `secsvc`): the worker process configured only through Temporal's env (TEMPORAL_TLS_*) runs a runbook
 * end to end; `secsvc list` finds it by search attributes (SQL visibility); clients without a certificate, with a
 * wrong server name or plain text are refused with one line naming the setting; the HTTP API wants a certificate.
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import {
	ATTACK_SOURCES,
	killChild,
	liveSettings,
	operatorClient,
	plan,
	startSim,
	uniqueQueue,
	waitFor,
} from '../temporal/helpers.mts';
import {
	clusterClient,
	clusterWorker,
	ensureCluster,
	freeSites,
	secsvc,
	tokenOf,
	type ClusterEnv,
} from './helpers.mts';

let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
});
after(async () => {
	await client?.close();
});

test('a runbook end to end on the TLS cluster; secsvc list finds it by search attributes', async () => {
	const s = await startSim(31);
	const ids = s.sim.firstIds();
	await freeSites(client, [ids]);
	const op = operatorClient(s.url);
	const queue = uniqueQueue('cluster-e2e');
	const worker = clusterWorker(env, s.url, queue);
	try {
		const snapshot = await liveSettings(op, ids);
		await waitFor(
			'worker ready',
			async () => /polling|is now the current version/.test(worker.log()) || worker.exitCode !== null,
			120_000,
			250,
		);
		assert.equal(worker.exitCode, null, worker.log());
		const attack = s.sim.startAttack({ site_id: ids.site_id, duration: 0, sources: ATTACK_SOURCES });
		const h = await startAttackResponse(client, queue, plan(ids));
		await waitFor('runbook waiting', async () => (await h.query(stateQuery)).phase === 'waiting', 120_000, 500);
		// While it waits: visible by its search attributes through the CLI (SQL visibility on PostgreSQL).
		const waiting = await waitFor(
			'secsvc list --phase mitigation',
			async () => {
				const r = await secsvc(env, ['list', '--site', ids.site_id, '--phase', 'mitigation']);
				return r.stdout.includes(h.workflowId) && r;
			},
			60_000,
			1000,
		);
		assert.match(waiting.stdout, new RegExp(`${h.workflowId}\\s+RUNNING\\s+${ids.site_id}\\s+waiting`));
		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		assert.deepEqual(await liveSettings(op, ids), snapshot, 'every touched setting equals the snapshot');
		const done = await waitFor(
			'secsvc list --phase done',
			async () => {
				const l = await secsvc(env, ['list', '--site', ids.site_id, '--phase', 'done']);
				return l.stdout.includes(h.workflowId) && l;
			},
			60_000,
			1000,
		);
		assert.match(done.stdout, new RegExp(`${h.workflowId}\\s+COMPLETED\\s+${ids.site_id}\\s+done\\s+reverted`));
	} finally {
		await killChild(worker, 'SIGTERM');
		await op.close();
		await s.close();
	}
});

test('refused: no client certificate, another server name, plain text; each named in one line', async () => {
	const noCert = await secsvc({ ...env, TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' }, [
		'list',
	]);
	assert.notEqual(noCert.code, 0);
	assert.match(
		noCert.stderr,
		/^secsvc: TEMPORAL_TLS_CLIENT_CERT_PATH: the server requires a client certificate \(mutual TLS\) and none is set$/m,
	);
	const otherName = await secsvc({ ...env, TEMPORAL_TLS_SERVER_NAME: 'temporal.example.net' }, ['list']);
	assert.match(
		otherName.stderr,
		/^secsvc: TEMPORAL_TLS_SERVER_NAME: the server's certificate is for DNS:frontend\.secsvc\.internal, .*not this name$/m,
	);
	const plain = await secsvc({ ...env, TEMPORAL_TLS: 'false' }, ['list']);
	assert.match(plain.stderr, /^secsvc: TEMPORAL_TLS: TLS is off but 127\.0\.0\.1:\d+ speaks TLS/m);
	const wrongKey = await secsvc(
		{ ...env, TEMPORAL_TLS_CLIENT_KEY_PATH: `${env.SECSVC_CLUSTER_DIR}/certs/system-worker.key` },
		['list'],
	);
	assert.equal(wrongKey.code, 2);
	assert.match(
		wrongKey.stderr,
		/TEMPORAL_TLS_CLIENT_KEY_PATH: is not the key of the client certificate \(TEMPORAL_TLS_CLIENT_CERT_PATH\)/,
	);
	// The worker process: exit 1, one line naming the setting.
	const s = await startSim(32);
	try {
		const w = clusterWorker(env, s.url, uniqueQueue('cluster-nocert'), {
			TEMPORAL_TLS_CLIENT_CERT_PATH: '',
			TEMPORAL_TLS_CLIENT_KEY_PATH: '',
		});
		const code = await new Promise<number | null>((r) => w.once('exit', (c) => r(c)));
		assert.equal(code, 1, w.log());
		assert.match(w.log(), /TEMPORAL_TLS_CLIENT_CERT_PATH: the server requires a client certificate/);
	} finally {
		await s.close();
	}
	// The HTTP API: with the client certificate and a token it answers; a certificate without a token is refused
	// (Temporal's JWT authorization); without a certificate the handshake is refused.
	const reader = await tokenOf(env, 'temporal-reader');
	const get = (withCert: boolean, token = reader) =>
		new Promise<number>((resolve, reject) => {
			const req = request(
				`${env.SECSVC_TEMPORAL_HTTP_URL}/api/v1/namespaces/${env.TEMPORAL_NAMESPACE}`,
				{
					ca: readFileSync(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH),
					...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
					...(withCert
						? {
								cert: readFileSync(env.TEMPORAL_TLS_CLIENT_CERT_PATH),
								key: readFileSync(env.TEMPORAL_TLS_CLIENT_KEY_PATH),
							}
						: {}),
				},
				(res) => (res.resume(), resolve(res.statusCode ?? 0)),
			);
			req.on('error', reject);
			req.end();
		});
	assert.equal(await get(true), 200);
	assert.equal(await get(true, ''), 403, 'a CA-signed client certificate without a token');
	await assert.rejects(get(false), /certificate required|socket hang up|ECONNRESET/i);
});
