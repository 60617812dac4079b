/**
 * Issue 37 item 3, the other playbooks that write, on a real dev server + in-process worker + simulator: each write
 * answers what it changed (WriteResult), and a value someone else set is not ours.
 *  - drift enforce: a switch someone sets to the desired value between the audit's read and the enforce's write is
 *    "already present, not ours" and nothing is sent for it;
 *  - `secsvc call` (the durable call): a blacklist add of an entry already listed and a switch already at the value
 *    answer `notOurs` and send nothing; a real change answers what it replaced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requirePollers } from '../../worker/src/temporal/pollers.mts';
import { env, runCli, siteWorld, startSim, useDevServer, waitFor } from './helpers.mts';
import { startDriftAudit } from '../../workflows/drift/client.mts';

useDevServer();

async function setup(seed: number) {
	const w = await siteWorld(seed, 'exact-writes');
	return { ...w, dp: { site_id: w.ids.site_id, domain_port_id: w.ids.domain_port_id } };
}
type Sim = Awaited<ReturnType<typeof startSim>>;
const lastSeq = (s: Sim) => s.sim.requests().at(-1)?.seq ?? 0;
const writesSince = (s: Sim, seq: number) =>
	s.sim.requests({ since: seq }).filter((r) => r.method !== 'GET' && r.opId && !r.opId.startsWith('authorization.'));

test('drift enforce: a value someone sets between the audit\'s read and the write is "already present, not ours"; nothing sent', async () => {
	const t = await setup(41);
	try {
		const seq = lastSeq(t.s);
		// Both switch-tree reads (the audit's, then the enforce's at write time) answer 1.5 s after they arrive.
		t.s.sim.addFault({ op: 'applicationProtection.switch.list', kind: 'delay', delayMs: 1500, count: 2 });
		const run = startDriftAudit(
			env.client,
			t.queue,
			{
				desired: { site_id: t.ids.site_id, domain_ports: { [t.ids.domain_port_id]: { switches: { p_auth: 1 } } } },
				enforce: true,
			},
			`drift-exact-${t.queue}`,
		).then((h) => h.result());
		await waitFor(
			"the enforce's write-time read",
			async () => t.s.sim.requests({ op: 'applicationProtection.switch.list', since: seq }).length >= 2,
			20_000,
			20,
		);
		await t.op.call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 1 });
		const person = lastSeq(t.s);
		const r = await run;
		assert.deepEqual(
			r.drifts.map((d) => [d.setting, d.live, d.enforced, d.written, d.note]),
			[['switch.p_auth', 0, 'fixed', { notOurs: 1 }, 'already present, not ours: 1']],
		);
		assert.deepEqual(writesSince(t.s, person), [], 'the enforce sent nothing');
	} finally {
		await t.close();
	}
});

test('secsvc call answers what it wrote: an entry already listed and a switch already set are not ours, nothing sent', async () => {
	const t = await setup(42);
	try {
		await t.op.call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: '192.0.2.77' });
		await t.op.call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 1 });
		const seq = lastSeq(t.s);
		// The CLI refuses a queue nobody polls yet (issue 29): the new worker's pollers first.
		await waitFor('the worker polling', async () => (await requirePollers(env.client, t.queue), true), 20_000);
		const call = async (op: string, params: Record<string, unknown>) => {
			const r = await runCli(env, ['call', op, '--params', JSON.stringify(params), '--wait'], t.queue);
			assert.equal(r.code, 0, r.err);
			return JSON.parse(r.out);
		};
		const add = await call('applicationProtection.ipBlacklist.add', { ...t.dp, ip_black_list: '192.0.2.77' });
		assert.deepEqual([add.wrote, add.notOurs], [[], ['192.0.2.77']]);
		const sw = await call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 1 });
		assert.deepEqual(sw, { notOurs: 1 });
		assert.deepEqual(writesSince(t.s, seq), [], 'nothing sent');
		const off = await call('applicationProtection.switch.set', { ...t.dp, name: 'p_auth', enable: 0 });
		assert.deepEqual(off, { wrote: 0, replaced: 1 });
		assert.deepEqual(
			writesSince(t.s, seq).map((w) => w.opId),
			['applicationProtection.switch.set'],
		);
	} finally {
		await t.close();
	}
});
