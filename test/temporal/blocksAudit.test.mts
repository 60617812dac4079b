/**
 * Expiring blocks say what we did, and only that, real dev server, the worker as a child process:
 * 30 blocks added in bulk; before their expiry an operator removes 3 entries and replaces 3 others by a wider range;
 * at the expiry the service holds the DELETE 3 s and the worker is SIGKILLed meanwhile (its workflow task times
 * out; the removal runs again on a new worker at attempt 1). Every block's state must equal what the simulator's
 * request log shows we did: `removed` exactly for the entries our DELETEs named, `taken-over` for the others.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addBlocks, listBlocks } from '../../workflows/blocks/client.mts';
import {
	env,
	killChild,
	operatorClient,
	spawnWorker,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';

useDevServer({ bundle: false });

test("a kill mid-DELETE: removed = exactly what our DELETEs named, the operator's removals and replacements taken over", async () => {
	const s = await startSim(31);
	const ids = s.sim.firstIds();
	const { site_id, domain_port_id } = ids;
	const op = operatorClient(s.url);
	const queue = uniqueQueue('blocks-audit');
	let child = spawnWorker(env, s.url, queue);
	try {
		const entries = Array.from({ length: 30 }, (_, i) => `100.64.0.${2 * i + 1}`);
		const r = await addBlocks(env.client, queue, site_id, domain_port_id, {
			blocks: entries.map((entry) => ({
				entry,
				seconds: 12,
				by: 'feed@soc',
				reason: 'threat feed',
				via: 'cli' as const,
			})),
		});
		assert.equal(r.blocks.length, 30, JSON.stringify(r.refused));
		// The operator: 3 entries removed, 3 replaced by a range that still blocks them (not the entry as written).
		const removedByOperator = entries.slice(0, 3);
		const replaced = entries.slice(3, 6);
		// (A single address is listed as `a-a`: a DELETE names entries as the list shows them.)
		await op.call('applicationProtection.ipBlacklist.remove', {
			site_id,
			domain_port_id,
			ip_black_list: [...removedByOperator, ...replaced].map((e) => `${e}-${e}`),
		});
		assert.equal(s.sim.requests({ op: 'applicationProtection.ipBlacklist.remove' }).length, 1);
		for (const e of replaced) {
			const last = Number(e.split('.')[3]);
			await op.call('applicationProtection.ipBlacklist.add', {
				site_id,
				domain_port_id,
				ip_black_list: `${e}-100.64.0.${last + 1}`,
			});
		}
		// At the expiry the service holds our DELETE 3 s (then applies it); the worker dies meanwhile.
		s.sim.addFault({ op: 'applicationProtection.ipBlacklist.remove', kind: 'delay', delayMs: 3000 });
		const ours = () =>
			s.sim
				.requests({ op: 'applicationProtection.ipBlacklist.remove' })
				.filter((x) => x.method === 'DELETE' && x.fault === 'delay');
		await waitFor('our DELETE in flight', async () => ours().length > 0, 40_000, 50);
		await killChild(child);
		child = spawnWorker(env, s.url, queue);
		const id = `blocks-${site_id}-${domain_port_id}`;
		await waitFor(
			`${id} completed`,
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			90_000,
			300,
		);

		// What the request log shows we did: the entries named by DELETEs after the operator's own (the first DELETE).
		const deletes = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.remove' })
			.filter((x) => x.method === 'DELETE' && x.code !== null);
		const asBlocked = (n: string) => (n.split('-')[0] === n.split('-')[1] ? n.split('-')[0] : n);
		const namedByUs = new Set(
			deletes.slice(1).flatMap((x) =>
				String(x.query.ip_black_list ?? '')
					.split(',')
					.filter(Boolean)
					.map(asBlocked),
			),
		);
		const blocks = (await listBlocks(env.client, site_id, domain_port_id)).filter((b) => entries.includes(b.range));
		assert.equal(blocks.length, 30);
		const state = new Map(blocks.map((b) => [b.range, b.state]));
		const wrong = entries
			.filter((e) => state.get(e) !== (namedByUs.has(e) ? 'removed' : 'taken-over'))
			.map(
				(e) =>
					`${e}: ${state.get(e)} (named by our DELETE: ${namedByUs.has(e)}) ${blocks.find((b) => b.range === e)?.note ?? ''}`,
			);
		assert.deepEqual(wrong, [], 'every state is what the request log shows');
		assert.equal(blocks.filter((b) => b.state === 'removed').length, 24);
		assert.deepEqual(
			blocks
				.filter((b) => b.state === 'taken-over')
				.map((b) => b.range)
				.sort(),
			[...removedByOperator, ...replaced].sort(),
		);
		// Nothing of the operator's was touched: their ranges are still listed.
		const live = (await op.call('applicationProtection.ipBlacklist.get', { site_id, domain_port_id })) as {
			p_info: { ipv4: { black_soc: { start_ip?: string }[] } };
		};
		assert.equal(live.p_info.ipv4.black_soc.filter((x) => replaced.includes(String(x.start_ip))).length, 3);
	} finally {
		await killChild(child);
		await op.close();
		await s.close();
	}
});
