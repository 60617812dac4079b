import { readFileSync, statSync } from 'node:fs';
import type { Client as TemporalClient } from '@temporalio/client';
import type { BlockInputError, BlockRequest } from './shared.mts';
import { DEFAULT_SITE_BLOCK_LIMIT, siteBlockLimitProblem } from '../../api/blockCapacity.ts';
import { mergeFeed } from '../../api/blockFeed.ts';
import { planFeed, sendFeed } from './clientFeed.mts';
import { siteArg, UsageError } from '../../worker/src/commands/args.mts';

/**
 * `secsvc block add SITE [DP] --file FEED` (docs/expiring-blocks-capacity.md): one entry a line (`DP ENTRY` a line when
 * no DP argument is given; blank lines and # comments skipped), merged per domain-port into the fewest ranges, the whole
 * feed checked (site limit, shards, already blocked) before anything is sent, then each slice to its shard.
 */

/** The feed's lines: `{dp, entry, label}` (label: `--file line N`, how a refusal names the line). */
export function feedLines(file: string | boolean, dp: string | undefined) {
	if (typeof file !== 'string') throw new UsageError('--file: needs a file name');
	let text: string;
	try {
		if (statSync(file).size > 10 * 2 ** 20) throw new Error('larger than 10 MB');
		text = readFileSync(file, 'utf8');
	} catch (e) {
		throw new UsageError(`--file ${file}: must be a readable text file (${(e as Error).message})`);
	}
	const out = text.split(/\r?\n/).flatMap((line, i) => {
		const label = `--file line ${i + 1}`;
		const words = line.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
		if (!words.length) return [];
		if (dp !== undefined) {
			if (words.length > 1) throw new UsageError(`${label}: one entry a line (got "${words.join(' ').slice(0, 60)}")`);
			return [{ dp, entry: words[0], label }];
		}
		if (words.length !== 2) throw new UsageError(`${label}: must be "DP ENTRY" (no DP argument was given)`);
		return [{ dp: siteArg(words[0], `${label} DP`), entry: words[1], label }];
	});
	if (!out.length) throw new UsageError(`--file ${file}: names no entry (one address, start-end range or CIDR a line)`);
	return out;
}

/** The senders' limit of expiring blocks per site: --max-site-blocks, else SECSVC_MAX_SITE_BLOCKS, else the default. */
export function siteLimit(o: Record<string, string | boolean>): number {
	const [v, what] =
		o['max-site-blocks'] !== undefined
			? [o['max-site-blocks'], '--max-site-blocks']
			: [process.env.SECSVC_MAX_SITE_BLOCKS, 'SECSVC_MAX_SITE_BLOCKS'];
	if (v === undefined || v === '') return DEFAULT_SITE_BLOCK_LIMIT;
	const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
	const problem = siteBlockLimitProblem(n);
	if (problem) throw new UsageError(`${what}: ${problem}`);
	return n;
}

/**
 * A refusal of the feed (field + rule) as a usage error (exit 2). By name: api/ is loaded as CommonJS, so its
 * BlockInputError may be another class object than the one workflows/blocks/shared.mts re-exports.
 */
function usage<T>(fn: () => T): T {
	const named = (e: unknown) => {
		const x = e as BlockInputError;
		return x?.name === 'BlockInputError' ? new UsageError(`${x.field}: ${x.rule}`) : e;
	};
	try {
		const r = fn();
		return (r instanceof Promise ? r.catch((e) => Promise.reject(named(e))) : r) as T;
	} catch (e) {
		throw named(e);
	}
}

export async function addFeed(
	conn: () => Promise<TemporalClient>,
	taskQueue: string,
	site: string,
	lines: { dp: string; entry: string; label: string }[],
	block: Omit<BlockRequest, 'entry'>,
	limit: number,
	maxPrefix?: number,
) {
	const byDp = new Map<string, { entry: string; label: string }[]>();
	for (const l of lines) {
		const list = byDp.get(l.dp);
		if (list) list.push(l);
		else byDp.set(l.dp, [l]);
	}
	const feed = new Map<string, BlockRequest[]>();
	for (const [dp, ls] of byDp) {
		const ranges = usage(() => mergeFeed(ls, maxPrefix));
		feed.set(
			dp,
			ranges.map((entry) => ({ ...block, entry })),
		);
	}
	const client = await conn();
	const slices = await usage(() => planFeed(client, site, feed, '--file', limit));
	const r = await sendFeed(client, taskQueue, site, slices, maxPrefix);
	const ranges = [...feed.values()].reduce((n, x) => n + x.length, 0);
	// `blocks` is the list of blocks added, as every `block add` prints it (docs/cli-json/); never a count.
	return { lines: lines.length, ranges, blocks: r.blocks, shards: r.shards, refused: r.refused };
}
