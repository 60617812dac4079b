/**
 * Ids and text in the CLI: `secsvc holds` / `holds release` / `block list|extend|remove` refuse a SITE, DP or --dp that
 * breaks the ids' rule (api/limits.ts) with an error naming it, before anything is sent (no "nothing held", exit 0);
 * control characters in a site id, an abort reason or any other text of a runbook, block or hold are printed escaped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../worker/src/commands/cli.mts';
import { formatRunbookList, formatTimeline } from '../../workflows/attackResponse/client.mts';
import { formatBlocks } from '../../workflows/blocks/client.mts';
import { printable } from '../../worker/src/temporal/printable.mts';
import type { Block } from '../../workflows/blocks/shared.mts';

async function cli(argv: string[]) {
	let out = '';
	let err = '';
	// An address nobody listens on: a command that got past its checks would fail to connect, not answer.
	const saved = process.env.TEMPORAL_ADDRESS;
	process.env.TEMPORAL_ADDRESS = '127.0.0.1:1';
	try {
		const code = await run(argv, { out: (s) => void (out += s), err: (s) => void (err += s) });
		return { code, out, err };
	} finally {
		if (saved === undefined) delete process.env.TEMPORAL_ADDRESS;
		else process.env.TEMPORAL_ADDRESS = saved;
	}
}

const BAD_IDS = ['..', 'a/b', 'x?y', 'k'.repeat(10_240), 'a\nb', '20001\u001b[2J'];

test('holds and block commands refuse a bad SITE / DP / --dp, naming it, before anything is sent', async () => {
	for (const v of BAD_IDS)
		for (const [argv, field] of [
			[['holds', v], 'SITE'],
			[['holds', 'release', v, '--owner', 'attack-response-1'], 'SITE'],
			[['holds', 'release', '20001', '--owner', v], '--owner'],
			[['block', 'list', v], 'SITE'],
			[['block', 'list', '20001', '--dp', v], '--dp'],
			[['block', 'extend', v, '30001', '1.2.3.4', '--seconds', '60', '--by', 'x'], 'SITE'],
			[['block', 'remove', '20001', v, '1.2.3.4', '--by', 'x'], 'DP'],
			[['block', 'add', v, '30001', '1.2.3.4', '--seconds', '60', '--by', 'x', '--reason', 'y'], 'SITE'],
		] as [string[], string][]) {
			const r = await cli(argv);
			const what = `${argv.slice(0, 2).join(' ')} ${JSON.stringify(v.slice(0, 12))}`;
			assert.equal(r.code, 2, `${what}: exit ${r.code}: ${r.err.slice(0, 200)}`);
			assert.ok(r.err.includes(`${field}: `), `${what}: names ${field}: ${r.err.slice(0, 200)}`);
			assert.equal(r.out, '', `${what}: printed nothing else`);
			assert.ok(r.err.length < 600, `${what}: short error`);
			assert.doesNotMatch(
				r.err.replace(/\n$/, ''),
				/[\u0000-\u001f]/,
				`${what}: no raw control characters in the error`,
			);
		}
});

test("abort and extend are held to the runbook's signal rules before sending (it would refuse them silently)", async () => {
	for (const [argv, re] of [
		[['abort', '20001', '--by', 'b'.repeat(201)], /^secsvc: --by: must be text of at most 200 characters/],
		[['abort', '20001', '--reason', 'r'.repeat(1001)], /^secsvc: --reason: must be text of at most 1000 characters/],
		[
			['extend', '20001', '--seconds', '60', '--by', 'b'.repeat(201)],
			/^secsvc: --by: must be text of at most 200 characters/,
		],
	] as [string[], RegExp][]) {
		const r = await cli(argv);
		assert.equal(r.code, 2, `${argv[0]}: ${r.err.slice(0, 200)}`);
		assert.match(r.err, re);
	}
});

test('list, timeline and block list print control characters escaped: one line per entry, no escape sequences', () => {
	const site = '20001\u001b[2J\nFORGED';
	const reason = 'done\r\n2026-01-01T00:00:00Z  [signal] approve (by alice) — forged\u001b]0;x\u0007';
	const tl = formatTimeline([
		{ at: '2026-11-25T00:00:00Z', step: 'signal', what: 'abort', why: reason, result: 'mallory\u0085' },
	]);
	assert.equal(tl.split('\n').length, 1);
	assert.doesNotMatch(tl, /[\u0000-\u001f\u007f-\u009f]/);
	assert.match(tl, /done\\r\\n2026-01-01T00:00:00Z {2}\[signal\] approve/);
	assert.match(tl, /\\u001b\]0;x\\u0007/);
	const list = formatRunbookList([
		{
			workflowId: 'attack-response-x',
			status: 'RUNNING',
			site,
			phase: 'waiting',
			startTime: '2026-11-25T00:00:00Z',
		} as never,
	]);
	assert.equal(list.split('\n').length, 2, 'header + one row');
	assert.match(list, /20001\\u001b\[2J\\nFORGED/);
	const b: Block = {
		site_id: site,
		domain_port_id: '30001',
		range: '1.2.3.4',
		entry: '1.2.3.4',
		expiresAt: 'x',
		by: 'a\u2028b',
		reason,
		via: 'cli',
		state: 'active',
		addedAt: 'x',
	};
	const bl = formatBlocks([b]);
	assert.equal(bl.split('\n').length, 1);
	assert.doesNotMatch(bl, /[\u0000-\u001f\u007f-\u009f\u2028]/);
	assert.equal(printable('plain 20001 — ok é 🙂'), 'plain 20001 — ok é 🙂', 'printable text is unchanged');
});
