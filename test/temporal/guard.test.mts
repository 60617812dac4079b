/**
 * The blast-radius guard through the Temporal paths (real dev server, simulator, in-process worker with a guard
 * configuration): `secsvc call` refuses before anything starts or is sent, the worker refuses the site's own address
 * (looked up from the service) and its configured protected ranges, the override is recorded in history, and an
 * attack response skips — with the guard's reason — the sources it may never block.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAttackResponse } from '../../workflows/attackResponse/client.mts';
import { startWorker } from '../../worker/src/process/worker.mts';
import { type AttackResponseResult } from '../../api/runbook/contract.ts';
import { stateQuery } from '../../workflows/attackResponse/messages.mts';
import {
	env,
	type Ids,
	operatorClient,
	plan,
	runCli as runCliIn,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
	workerConfig,
} from './helpers.mts';

useDevServer();

const WORKER_PROTECTED = '198.51.100.0/30';

async function setup() {
	const s = await startSim(7);
	const ids: Ids = s.sim.firstIds();
	const siteIp = (s.sim.world.sites.get(ids.site_id) as { site_ip: string }).site_ip;
	const queue = uniqueQueue('guard');
	const cfg = {
		...workerConfig(env, s.url, queue),
		guard: {
			widestPrefix: 16,
			protectedRanges: [{ range: WORKER_PROTECTED, source: 'worker guard.protectedRanges' }],
			ownAddressLookup: true,
		},
	};
	const worker = await startWorker(cfg, { connection: env.nativeConnection });
	const op = operatorClient(s.url);
	return {
		s,
		ids,
		siteIp,
		queue,
		op,
		posts: () =>
			s.sim.requests().filter((r) => r.method === 'POST' && r.opId === 'applicationProtection.ipBlacklist.add'),
		async close() {
			await worker.shutdown();
			await op.close();
			await s.close();
		},
	};
}

const runCli = (args: string[], queue: string, extraEnv: Record<string, string> = {}) =>
	runCliIn(env.address, args, queue, extraEnv);

const addParams = (ids: Ids, entry: string) =>
	JSON.stringify({ site_id: ids.site_id, domain_port_id: ids.domain_port_id, ip_black_list: entry });

test("secsvc call: 0.0.0.0/0, a /15 and a configured protected range refused before anything starts; the worker refuses the site's own address; the override is recorded", async () => {
	const t = await setup();
	try {
		const whole = await runCli(
			['call', 'applicationProtection.ipBlacklist.add', '--params', addParams(t.ids, '0.0.0.0/0'), '--wait'],
			t.queue,
		);
		assert.equal(whole.code, 2, whole.err);
		assert.match(
			whole.err,
			/ip_black_list: 0\.0\.0\.0\/0 covers 4294967296 addresses: wider than the widest block allowed \(\/16/,
		);
		assert.match(whole.err, /0\.0\.0\.0\/0 overlaps the special range 127\.0\.0\.0\/8, loopback/);
		assert.equal(whole.out, '', 'no workflow started');
		// the allow side and user-agent patterns: the same guard, refused before anything starts
		const at = { site_id: t.ids.site_id, domain_port_id: t.ids.domain_port_id };
		for (const [op, params, re] of [
			[
				'applicationProtection.ipWhitelist.add',
				{ ip_white_list: '0.0.0.0/0' },
				/ip_white_list: 0\.0\.0\.0\/0 .*never allowed/,
			],
			['applicationProtection.uaBlacklist.add', { ua_regex: ['.+'] }, /ua_regex\.0: "\.\+" matches every user agent/],
		] as const) {
			const r = await runCli(['call', op, '--params', JSON.stringify({ ...at, ...params }), '--wait'], t.queue);
			assert.equal(r.code, 2, r.err);
			assert.match(r.err, re);
			assert.equal(r.out, '', 'no workflow started');
		}
		const wide = await runCli(
			['call', 'applicationProtection.ipBlacklist.add', '--params', addParams(t.ids, '10.0.0.0/15')],
			t.queue,
		);
		assert.equal(wide.code, 2);
		assert.match(wide.err, /allowWideBlock with a reason/);
		const prot = await runCli(
			['call', 'applicationProtection.ipBlacklist.add', '--params', addParams(t.ids, '192.0.2.9')],
			t.queue,
			{ SECSVC_PROTECTED_RANGES: '192.0.2.0/28' },
		);
		assert.equal(prot.code, 2);
		assert.match(
			prot.err,
			/192\.0\.2\.9 overlaps the protected range 192\.0\.2\.0\/28 \(worker SECSVC_PROTECTED_RANGES\)/,
		);
		const noReason = await runCli(
			[
				'call',
				'applicationProtection.ipBlacklist.add',
				'--params',
				addParams(t.ids, '10.0.0.0/15'),
				'--allow-wide-block',
			],
			t.queue,
		);
		assert.equal(noReason.code, 2);
		assert.match(noReason.err, /--allow-wide-block: needs a reason/);

		// The site's own address: only the worker knows it (the service's events), so the durable call fails there.
		const own = await runCli(
			['call', 'applicationProtection.ipBlacklist.add', '--params', addParams(t.ids, t.siteIp), '--wait'],
			t.queue,
		);
		assert.equal(own.code, 1, own.out);
		assert.match(
			own.err,
			new RegExp(
				`${t.siteIp.replace(/\./g, '\\.')} overlaps the site's own address ${t.siteIp.replace(/\./g, '\\.')} \\(cidr of active mitigation|site_ip of DDoS event`,
			),
		);
		assert.equal(t.posts().length, 0, 'nothing was written');

		const ok = await runCli(
			[
				'call',
				'applicationProtection.ipBlacklist.add',
				'--params',
				addParams(t.ids, '10.0.0.0/15'),
				'--allow-wide-block',
				'botnet spread over a /15',
				'--by',
				'oncall-alice',
				'--wait',
			],
			t.queue,
		);
		assert.equal(ok.code, 0, ok.err);
		assert.equal(t.posts().length, 1);
		const listed = (
			(await t.op.call('applicationProtection.ipBlacklist.get', {
				site_id: t.ids.site_id,
				domain_port_id: t.ids.domain_port_id,
			})) as { p_info: { ipv4: { black_soc: { start_ip?: string; end_ip?: string }[] } } }
		).p_info.ipv4.black_soc;
		assert.ok(listed.some((e) => e.start_ip === '10.0.0.0' && e.end_ip === '10.1.255.255'));
		// the audit: the durable call's input (Temporal history) carries the override with its reason and who
		const calls = [];
		for await (const w of env.client.workflow.list({
			query: `WorkflowType = 'durableCall' AND TaskQueue = '${t.queue}'`,
		}))
			calls.push(w.workflowId);
		const histories = await Promise.all(calls.map((id) => env.client.workflow.getHandle(id).fetchHistory()));
		const text = JSON.stringify(
			histories.map((h) =>
				h.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.map(
					(p) => JSON.parse(Buffer.from(p.data ?? []).toString('utf8')) as unknown,
				),
			),
		);
		assert.match(text, /"allowWideBlock":\{"reason":"botnet spread over a \/15","by":"oncall-alice"\}/);
	} finally {
		await t.close();
	}
});

test("attack response: sources that are the site's own address, a special range or a worker-protected range are skipped with the guard's reason; the rest is blocked", async () => {
	const t = await setup();
	try {
		const sources = [{ ip: '203.0.113.200' }, { ip: t.siteIp }, { ip: '127.0.0.1' }, { cidr: WORKER_PROTECTED }];
		const attack = t.s.sim.startAttack({ site_id: t.ids.site_id, duration: 0, sources });
		const h = await startAttackResponse(
			env.client,
			t.queue,
			plan(t.ids, {
				blacklist: { enabled: true, topN: 10, metric: 'bps', minPercent: 0, protectedRanges: [] },
				switches: [],
				ipAuth: undefined,
			}),
		);
		await waitFor('phase waiting', async () => (await h.query(stateQuery)).phase === 'waiting', 60_000);
		const listed = (
			(await t.op.call('applicationProtection.ipBlacklist.get', {
				site_id: t.ids.site_id,
				domain_port_id: t.ids.domain_port_id,
			})) as { p_info: { ipv4: { black_soc: { start_ip?: string; end_ip?: string; ip?: string }[] } } }
		).p_info.ipv4.black_soc;
		const texts = listed.map((e) => (e.start_ip ? `${e.start_ip}-${e.end_ip}` : e.ip));
		assert.deepEqual(texts, ['203.0.113.200-203.0.113.200'], 'only the attacker outside every guarded range');
		t.s.sim.stopAttack(attack.id);
		const r = (await h.result()) as AttackResponseResult;
		assert.equal(r.outcome, 'reverted');
		const reasons = r.skipped.map((s) => `${s.source} → ${s.reason}`).join('\n');
		assert.match(
			reasons,
			new RegExp(
				`:${t.siteIp.replace(/\./g, '\\.')} → refused by the blast-radius guard: .* overlaps the site's own address`,
			),
		);
		assert.match(
			reasons,
			/:127\.0\.0\.1 → refused by the blast-radius guard: 127\.0\.0\.1 overlaps the special range 127\.0\.0\.0\/8/,
		);
		assert.match(
			reasons,
			/:198\.51\.100\.[\d.-]+ → refused by the blast-radius guard: 198\.51\.100\.[\d.-]+ overlaps the protected range 198\.51\.100\.0\/30 \(worker guard\.protectedRanges\)/,
		);
		assert.equal(t.posts().length, 1, 'one write: the allowed attacker');
	} finally {
		await t.close();
	}
});
