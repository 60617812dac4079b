/**
 * Expiring blocks never take on more than they can carry (or they would never expire), real dev server,
 * in-process worker, simulator (docs/expiring-blocks-capacity.md):
 * - a feed over the site's limit (here SECSVC_MAX_SITE_BLOCKS=1000, 1,001 lone addresses) is refused by
 *   `secsvc block add SITE DP --file` before anything is sent, naming `--file` and the limit; a limit past what the
 *   coordinator can carry is refused naming the setting;
 * - a feed of exactly a shard's capacity (2,000 lone addresses) fills shard 0, `secsvc holds` answers, one more block
 *   sent to shard 0 is refused by its validator with nothing sent, the same block through `addBlock` goes to shard 1,
 *   and at the expiry every entry is removed, each named once by a DELETE (the runs continue as new on the way).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { MAX_SHARD_BLOCKS } from '../../api/blockCapacity.ts';
import { addBlock, addBlocks, listBlocks } from '../../workflows/blocks/client.mts';
import {
	env,
	operatorClient,
	runCli as cliIn,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	useDevServer,
	waitFor,
} from './helpers.mts';
import { scratchDir } from '../helpers/scratch.mts';

useDevServer({ bundle: false });

const runCli = (args: string[], queue: string, extra: Record<string, string> = {}) => cliIn(env, args, queue, extra);

/** `n` addresses from 100.64.0.1 on that merge with nothing (every other address). */
const feed = (n: number) => Array.from({ length: n }, (_, i) => `100.64.${Math.floor(i / 125)}.${2 * (i % 125) + 1}`);

test('a feed the blocks cannot carry is refused before anything is sent; a feed at capacity is added, held, and removed at its expiry', async () => {
	const s = await startSim(29);
	const ids = s.sim.firstIds();
	const site = s.sim.snapshot().sites.find((x) => x.site_id === ids.site_id) as { domain_port_ids: string[] };
	const [dpA, dpB] = site.domain_port_ids;
	assert.ok(dpB, 'the first site has two domain-ports');
	const queue = uniqueQueue('blocks-capacity');
	const worker = await startInProcessWorker(env, s.url, queue);
	const op = operatorClient(s.url);
	const dir = scratchDir('blocks-capacity-');
	const posts = () => s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).length;
	try {
		const big = join(dir, 'big.txt');
		writeFileSync(big, feed(1001).join('\n'));
		const add = ['block', 'add', ids.site_id, dpA, '--file', big, '--seconds', '120', '--by', 'x', '--reason', 'y'];
		const r1 = await runCli(add, queue, { SECSVC_MAX_SITE_BLOCKS: '1000' });
		assert.equal(r1.code, 2);
		assert.match(
			r1.err,
			/--file: 1001 new blocks \(merged ranges\): site \S+ would hold 1001 expiring blocks at once, more than 1000 .*SECSVC_MAX_SITE_BLOCKS.*Nothing was sent/,
		);
		const r0 = await runCli(add, queue, { SECSVC_MAX_SITE_BLOCKS: '30000' });
		assert.equal(r0.code, 2);
		assert.match(r0.err, /SECSVC_MAX_SITE_BLOCKS: must be an integer from 1 to 24000/);
		assert.equal(posts(), 0, 'nothing sent');

		// The feed must outlive its own add for the shard to be full at the next add: 2,000 POSTs took more than the 25 s
		// this once gave at load 30 (its first entries had expired, and the 2,001st block was not refused).
		const fits = join(dir, 'fits.txt');
		writeFileSync(fits, feed(MAX_SHARD_BLOCKS).join('\n'));
		const t0 = Date.now();
		const r2 = await runCli(
			[
				'block',
				'add',
				ids.site_id,
				dpA,
				'--file',
				fits,
				'--seconds',
				'60',
				'--by',
				'feed@soc',
				'--reason',
				'threat feed',
			],
			queue,
		);
		assert.equal(r2.code, 0, r2.err);
		assert.equal(posts(), MAX_SHARD_BLOCKS, 'one POST per entry');
		const added = Date.now() - t0;
		const h = await runCli(['holds', ids.site_id], queue);
		assert.equal(h.code, 0, h.err);
		assert.doesNotMatch(h.out + h.err, /Blob data size exceeds limit/);
		// Shard 0 is full: one more block sent to it is refused by its validator, nothing sent; `addBlock` takes the
		// same block to shard 1.
		const one = { entry: '198.18.9.9', seconds: 20, by: 'x', reason: 'y', via: 'cli' as const };
		await assert.rejects(
			addBlocks(env.client, queue, ids.site_id, dpA, { blocks: [one] }),
			/blocks: 1 new blocks: this shard of \S+ would carry 2001 active blocks, more than 2000/,
		);
		assert.equal(posts(), MAX_SHARD_BLOCKS, 'nothing sent for the refused block');
		const b1 = await addBlock(env.client, queue, ids.site_id, dpA, one);
		assert.equal(b1.state, 'active');
		assert.equal(posts(), MAX_SHARD_BLOCKS + 1);
		assert.ok(
			(await listBlocks(env.client, ids.site_id, dpA)).some((b) => b.range === '198.18.9.9' && b.state === 'active'),
		);
		assert.equal(
			(await env.client.workflow.getHandle(`blocks-${ids.site_id}-${dpA}-1`).describe()).status.name,
			'RUNNING',
		);
		// At the expiry every entry is removed: the workflow ends with nothing left, each entry named once by a DELETE.
		const id = `blocks-${ids.site_id}-${dpA}`;
		await waitFor(
			`${id} completed`,
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			120_000 + added,
			1000,
		);
		await waitFor(
			'shard 1 completed',
			async () => (await env.client.workflow.getHandle(`${id}-1`).describe()).status.name === 'COMPLETED',
			60_000,
			1000,
		);
		const named = s.sim
			.requests({ op: 'applicationProtection.ipBlacklist.remove' })
			.filter((x) => x.method === 'DELETE' && x.code === 0)
			.flatMap((x) =>
				String(x.query.ip_black_list ?? '')
					.split(',')
					.filter(Boolean),
			);
		assert.equal(named.length, MAX_SHARD_BLOCKS + 1, 'one DELETE naming per entry');
		assert.equal(new Set(named).size, MAX_SHARD_BLOCKS + 1);
		assert.ok((await listBlocks(env.client, ids.site_id, dpA)).every((b) => b.state === 'removed'));
		const live = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: dpA,
		})) as { p_info: { ipv4: { black_soc: { ip?: string; start_ip?: string }[] } } };
		assert.equal(
			live.p_info.ipv4.black_soc.filter((e) => /^(100\.64\.|198\.18\.9\.9)/.test(String(e.ip ?? e.start_ip))).length,
			0,
			'none left on the service',
		);
	} finally {
		await worker.shutdown();
		await op.close();
		await s.close();
	}
});
