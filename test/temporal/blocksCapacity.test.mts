/**
 * Expiring blocks never take on more than they can carry (or they would never expire), real dev server,
 * in-process worker, simulator:
 * - `secsvc block add SITE DP --file feed.txt` with 12,000 lines is refused before anything is sent, naming `--file`
 *   and the rule (was: every entry POSTed, then the blocks workflow TERMINATED at its continue-as-new — payload over
 *   2 MB — and nothing ever removed);
 * - a feed of exactly the site's capacity (2,000) is added, `secsvc holds` answers (was: "Blob data size exceeds
 *   limit"), one more block on another domain-port of the site is refused by the coordinator with nothing sent, and
 *   at the expiry every entry is removed (the runs continue as new on the way).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { MAX_SITE_BLOCKS } from '../../api/blockCapacity.ts';
import { addBlocks, listBlocks } from '../../worker/src/temporal/blocks.mts';
import {
	createEnv,
	operatorClient,
	runCli as cliIn,
	startInProcessWorker,
	startSim,
	uniqueQueue,
	waitFor,
} from './helpers.mts';

let env: TestWorkflowEnvironment;
before(async () => {
	env = await createEnv();
});
after(async () => {
	await env?.teardown();
});

const runCli = (args: string[], queue: string) => cliIn(env, args, queue);

/** `n` distinct addresses from 100.64.0.0 on. */
const feed = (n: number) => Array.from({ length: n }, (_, i) => `100.64.${Math.floor(i / 250)}.${(i % 250) + 1}`);

test('a feed the blocks cannot carry is refused before anything is sent; a feed at capacity is added, held, and removed at its expiry', async () => {
	const s = await startSim(29);
	const ids = s.sim.firstIds();
	const site = s.sim.snapshot().sites.find((x) => x.site_id === ids.site_id) as { domain_port_ids: string[] };
	const [dpA, dpB] = site.domain_port_ids;
	assert.ok(dpB, 'the first site has two domain-ports');
	const queue = uniqueQueue('blocks-capacity');
	const worker = await startInProcessWorker(env, s.url, queue);
	const op = operatorClient(s.url);
	const dir = mkdtempSync(join(tmpdir(), 'blocks-capacity-'));
	const posts = () => s.sim.requests({ op: 'applicationProtection.ipBlacklist.add' }).length;
	try {
		const big = join(dir, 'big.txt');
		writeFileSync(big, feed(12_000).join('\n'));
		const r1 = await runCli(
			['block', 'add', ids.site_id, dpA, '--file', big, '--seconds', '120', '--by', 'x', '--reason', 'y'],
			queue,
		);
		assert.notEqual(r1.code, 0);
		assert.match(
			r1.err,
			/--file: 12000 new blocks: site \S+ would hold 12000 expiring blocks at once, more than 2000 .*Nothing was sent/,
		);
		assert.equal(posts(), 0, 'nothing sent');

		const fits = join(dir, 'fits.txt');
		writeFileSync(fits, feed(MAX_SITE_BLOCKS).join('\n'));
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
				'25',
				'--by',
				'feed@soc',
				'--reason',
				'threat feed',
			],
			queue,
		);
		assert.equal(r2.code, 0, r2.err);
		assert.equal(posts(), MAX_SITE_BLOCKS, 'one POST per entry');
		const added = Date.now() - t0;
		const h = await runCli(['holds', ids.site_id], queue);
		assert.equal(h.code, 0, h.err);
		assert.doesNotMatch(h.out + h.err, /Blob data size exceeds limit/);
		// The site is full: one more block (another domain-port, so not caught by dpA's workflow) is refused by the
		// coordinator's rule, naming it, and nothing is sent.
		const r3 = await addBlocks(env.client, queue, ids.site_id, dpB, {
			blocks: [{ entry: '198.18.9.9', seconds: 60, by: 'x', reason: 'y', via: 'cli' }],
		});
		assert.equal(r3.blocks.length, 0);
		assert.match(r3.refused[0]?.rule ?? '', /2001 on this site, more than 2000/);
		assert.equal(posts(), MAX_SITE_BLOCKS, 'nothing sent for the refused block');
		// At the expiry every entry is removed: the workflow ends with nothing left, each entry named once by a DELETE.
		const id = `blocks-${ids.site_id}-${dpA}`;
		await waitFor(
			`${id} completed`,
			async () => (await env.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
			120_000 + added,
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
		assert.equal(named.length, MAX_SITE_BLOCKS, 'one DELETE naming per entry');
		assert.equal(new Set(named).size, MAX_SITE_BLOCKS);
		assert.ok((await listBlocks(env.client, ids.site_id, dpA)).every((b) => b.state === 'removed'));
		const live = (await op.call('applicationProtection.ipBlacklist.get', {
			site_id: ids.site_id,
			domain_port_id: dpA,
		})) as { p_info: { ipv4: { black_soc: { start_ip?: string }[] } } };
		assert.equal(
			live.p_info.ipv4.black_soc.filter((e) => String(e.start_ip).startsWith('100.64.')).length,
			0,
			'none left on the service',
		);
	} finally {
		await worker.shutdown();
		await op.close();
		await s.close();
	}
});
