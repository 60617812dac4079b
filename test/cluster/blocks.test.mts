/**
 * Expiring blocks on the production-shaped cluster: two blocks added through the blocks workflow's Update-with-start
 * (mutual TLS client), the history service SIGKILLed and restarted while they are active, and both removed at their
 * expiry by the worker process — one POST per entry, each entry named in exactly one DELETE, none left behind.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { addBlock, listBlocks } from '../../workflows/blocks/client.mts';
import { killChild, operatorClient, startSim, uniqueQueue, waitFor, type Ids } from '../temporal/helpers.mts';
import {
	BASE_PORT,
	SCRIPT,
	clusterClient,
	clusterWorker,
	ensureCluster,
	freeSites,
	type ClusterEnv,
} from './helpers.mts';

let env: ClusterEnv;
let client: Awaited<ReturnType<typeof clusterClient>>;
before(async () => {
	env = await ensureCluster();
	client = await clusterClient(env);
});
after(async () => {
	await ensureCluster().catch(() => {});
	await client?.close();
});

test('blocks are removed after their expiry across a history-service crash; each entry added and removed once', async () => {
	const s = await startSim(71);
	const ids: Ids = s.sim.firstIds();
	await freeSites(client, [ids]);
	const op = operatorClient(s.url);
	const queue = uniqueQueue('cluster-blocks');
	const worker = clusterWorker(env, s.url, queue);
	const listed = async () => {
		const r = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: ids.domain_port_id,
		})) as { p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string }[] } } };
		return r.p_info.ipv4.black_soc.map((e) => String(e.ip ?? e.start_ip));
	};
	const writes = (method: 'POST' | 'DELETE') =>
		s.sim
			.requests({
				op: method === 'POST' ? 'applicationProtection.ipBlacklist.add' : 'applicationProtection.ipBlacklist.remove',
			})
			.filter((r) => r.method === method);
	try {
		await waitFor(
			'worker ready',
			async () => worker.log().includes('secsvc worker: task queue') || worker.exitCode !== null,
			120_000,
			250,
		);
		assert.equal(worker.exitCode, null, worker.log());
		const entries = ['203.0.113.21', '203.0.113.22'];
		await Promise.all(
			entries.map((entry) =>
				addBlock(client, queue, ids.site_id, ids.domain_port_id, {
					entry,
					seconds: 20,
					by: 'alice@soc',
					reason: 'cluster test',
					via: 'cli',
				}),
			),
		);
		assert.deepEqual((await listed()).sort(), entries);
		assert.deepEqual((await listBlocks(client, ids.site_id, ids.domain_port_id)).map((b) => b.entry).sort(), entries);

		execFileSync('bash', [SCRIPT, 'kill', 'history', '--base-port', BASE_PORT], {
			stdio: ['ignore', 'ignore', 'inherit'],
		});
		await new Promise((r) => setTimeout(r, 3000));
		await ensureCluster();

		await waitFor('both removed at expiry', async () => (await listed()).length === 0, 120_000, 500);
		assert.equal(writes('POST').length, 2, 'one POST per entry');
		const named = writes('DELETE')
			.filter((r) => r.status === 200)
			.flatMap((r) =>
				String(r.query.ip_black_list ?? '')
					.split(',')
					.filter(Boolean),
			);
		assert.deepEqual(named.map((n) => n.split('-')[0]).sort(), entries, 'each entry removed once');
		const id = `blocks-${ids.site_id}-${ids.domain_port_id}`;
		await waitFor(
			`${id} completed`,
			async () => (await client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			60_000,
			500,
		);
	} finally {
		await killChild(worker, 'SIGTERM');
		await op.close();
		await s.close();
	}
});
