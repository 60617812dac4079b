/**
 * Issue 37 item 3 for fleet-started runbooks (dev server + in-process worker + simulator fleet): the fleet watch
 * starts `attack-response-<site>` with its template's plan (approval required here); the attack's 8 sources blocked by
 * hand between the runbook's snapshot and its write stay after its revert, "already present, not ours".
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunningSimulator } from '../../simulator/index.mts';
import type { AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import { runFleet } from '../../workflows/fleet/command.mts';
import { decide } from '../../workflows/attackResponse/client.mts';
import type { RunningWorker } from '../../worker/src/process/worker.mts';
import { env, startSim, useDevServer, operatorClient, startInProcessWorker, uniqueQueue, waitFor } from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

let s: RunningSimulator;
let worker: RunningWorker;
const queue = uniqueQueue('exact-fleet');
const dir = scratchDir('secsvc-exact-fleet-');

useDevServer({
	start: async () => {
		s = await startSim(43, { fleet: { customers: 1, sitesPerCustomer: 2 } });
		worker = await startInProcessWorker(env, s.url, queue);
	},
	stop: async () => {
		await worker?.shutdown();
		await s?.close();
	},
});

const fleet = async (...args: string[]) => {
	const pos = args.filter((a) => !a.startsWith('--'));
	const o: Record<string, string | boolean> = {};
	for (let i = 0; i < args.length; i++) if (args[i].startsWith('--')) o[args[i].slice(2)] = args[++i];
	assert.equal(
		await runFleet(
			pos,
			o,
			async () => env.client,
			queue,
			() => undefined,
		),
		0,
	);
};
const fleetFile = (sites: string[]) => {
	const f = join(dir, `fleet-${sites.length}.json`);
	writeFileSync(
		f,
		JSON.stringify({
			fleet: 'xfleet',
			intervalSeconds: 2,
			sitesPerWatcher: 5,
			template: {
				detection: { rapidMode: false, thresholds: [] },
				blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0 },
				approval: { required: true, timeoutSeconds: 600 },
				cooldownSeconds: 1,
				pollSeconds: 1,
				maxDurationSeconds: 600,
			},
			sites: sites.map((id) => ({ customer_id: '110001', site_id: id, domain_ports: [String(100000 + Number(id))] })),
		}),
	);
	return f;
};

test('a fleet-started runbook leaves the entries a person added before its write, and says so', async () => {
	const site = '210001';
	const dp = { site_id: site, domain_port_id: '310001' };
	const op = operatorClient(s.url);
	const eight = [11, 22, 33, 44, 55, 66, 77, 88].map((n) => `203.0.113.${n}`);
	const listed = async () =>
		(
			(await op.call('applicationProtection.ipBlacklist.get', dp)) as {
				p_info: { ipv4: { black_soc: { start_ip: string }[] } };
			}
		).p_info.ipv4.black_soc.map((e) => e.start_ip);
	try {
		await fleet('apply', fleetFile([site]));
		const attack = s.sim.startAttack({ site_id: site, duration: 0, sources: eight.map((ip) => ({ ip })) });
		const h = env.client.workflow.getHandle(`attack-response-${site}`);
		await waitFor(
			'the fleet-started runbook at its gate',
			async () => (await h.query(stateQuery)).phase === 'awaiting-approval',
			60_000,
			300,
		);
		for (const ip of eight) await op.call('applicationProtection.ipBlacklist.add', { ...dp, ip_black_list: ip });
		await decide(env.client, h.workflowId, { approved: true, by: 'alice', via: 'api' });
		await waitFor('the wait', async () => (await h.query(stateQuery)).phase === 'waiting', 30_000);
		s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const bl = r.changes.find((c) => c.kind === 'blacklistAdd');
		assert.equal(bl?.status, 'unchanged');
		assert.match(bl?.note ?? '', /^already present, not ours: 203\.0\.113\.11/);
		assert.deepEqual((await listed()).sort(), [...eight].sort(), 'all 8 stay');
		assert.equal(s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' }).length, 0, 'no DELETE');
		assert.equal(
			s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).filter((x) => x.method === 'POST').length,
			8,
			"only the person's 8 POSTs",
		);
	} finally {
		await fleet('apply', fleetFile([])).catch(() => undefined);
		await op.close();
	}
});
