import type { Client as TemporalClient } from '@temporalio/client';
import {
	BlockInputError,
	checkBulkRequest,
	MAX_BULK_BLOCKS,
	normalizeEntry,
	type BlockRequest,
	type BulkBlockResult,
} from './shared.mts';
import { addBlock, addBlocks, extendBlock, formatBlocks, listBlocks, removeBlock } from './client.mts';
import { siteArg, UsageError, type Command } from '../../worker/src/commands/args.mts';
import { addFeed, feedLines, siteLimit } from './commandFeed.mts';
import { escalateBlocks, offendersKey } from '../../worker/src/temporal/offenders.mts';

/** `secsvc block add | list | extend | remove`: expiring blocks (workflows/blocks/blocks.mts). */
export const block: Command = async ({ pos, o, conn, t, out }) => {
	const a = argsOf(pos, o);
	const sub = Object.hasOwn(SUBCOMMANDS, pos[0] ?? '') ? SUBCOMMANDS[pos[0]] : undefined;
	if (!sub) throw new UsageError(`block ${pos[0] ?? ''}: must be add, list, extend or remove`);
	return sub(a, conn, t.taskQueue, out);
};

type Out = (v: unknown) => void;
type Conn = () => Promise<TemporalClient>;
type Args = ReturnType<typeof argsOf>;

/** The argument checks every subcommand shares; each names the argument and its rule. */
function argsOf(pos: string[], o: Record<string, string | boolean>) {
	return {
		pos,
		o,
		arg: (i: number, what: string) => {
			if (!pos[i]) throw new UsageError(`${what}: is required`);
			// SITE and DP name the workflow `blocks-<SITE>-<DP>` and API paths: the ids' rule (api/limits.ts).
			return what === 'SITE' || what === 'DP' ? siteArg(pos[i], what) : pos[i];
		},
		int: (k: string) => {
			const v = o[k];
			if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new UsageError(`--${k}: must be an integer`);
			return Number(v);
		},
		by: () => {
			if (typeof o.by !== 'string') throw new UsageError('--by: is required (who asks)');
			return o.by;
		},
	};
}

const SUBCOMMANDS: Record<string, (a: Args, conn: Conn, taskQueue: string, out: Out) => Promise<number>> = {
	add,
	list: async ({ arg, o }, conn, _q, out) => {
		if (o.dp === true) throw new UsageError('--dp: a value is required');
		const [site, dp] = [arg(1, 'SITE'), o.dp === undefined ? undefined : siteArg(o.dp, '--dp')];
		const blocks = await listBlocks(await conn(), site, dp);
		out(o.json ? blocks : formatBlocks(blocks));
		return 0;
	},
	extend: async ({ arg, int, by }, conn, _q, out) => {
		const [site, dp, req] = [
			arg(1, 'SITE'),
			arg(2, 'DP'),
			{ entry: arg(3, 'ENTRY'), seconds: int('seconds'), by: by(), via: 'cli' as const },
		];
		out(await extendBlock(await conn(), site, dp, req));
		return 0;
	},
	remove: async ({ arg, by }, conn, _q, out) => {
		const [site, dp, req] = [arg(1, 'SITE'), arg(2, 'DP'), { entry: arg(3, 'ENTRY'), by: by(), via: 'cli' as const }];
		out(await removeBlock(await conn(), site, dp, req));
		return 0;
	},
};

/** The entries of `block add` given as arguments (ENTRY 1, ENTRY 2 …); a feed file is commandFeed.mts. */
function blockEntries(positional: string[]): { entry: string; label: string }[] {
	if (!positional.length) throw new UsageError('ENTRY: is required (or --file FILE)');
	return positional.map((entry, i) => ({ entry, label: positional.length === 1 ? 'ENTRY' : `ENTRY ${i + 1}` }));
}

async function add(a: Args, conn: Conn, taskQueue: string, out: Out): Promise<number> {
	const { pos, o, arg, int, by } = a;
	const maxPrefix = o['max-prefix'] === undefined ? undefined : int('max-prefix');
	if (maxPrefix !== undefined && (maxPrefix < 0 || maxPrefix > 32))
		throw new UsageError('--max-prefix: must be 0 to 32');
	if (typeof o.reason !== 'string') throw new UsageError('--reason: is required (why the block)');
	const site = arg(1, 'SITE');
	if (o.file !== undefined) {
		// A threat feed: merged into ranges, checked whole, then each slice to its shard (commandFeed.mts).
		const dp = pos[2] === undefined ? undefined : arg(2, 'DP');
		if (pos.length > 3)
			throw new UsageError('--file: give the entries either as ENTRY arguments or in --file, not both');
		const lines = feedLines(o.file, dp);
		const block = { seconds: int('seconds'), by: by(), reason: o.reason, via: 'cli' as const };
		const r = await addFeed(conn, taskQueue, site, lines, block, siteLimit(o), maxPrefix);
		out(r);
		return r.refused.length ? 1 : 0;
	}
	const dp = arg(2, 'DP');
	const entries = blockEntries(pos.slice(3));
	const seconds = int('seconds');
	const asked: BlockRequest[] = entries.map((e) => ({
		entry: e.entry,
		seconds,
		by: by(),
		reason: o.reason as string,
		via: 'cli' as const,
	}));
	// Repeat offenders are blocked longer (worker/src/temporal/offenders.mts); --customer names whose history.
	const customer = o.customer === undefined ? undefined : siteArg(o.customer, '--customer');
	const escalated = async () =>
		escalateBlocks(await conn(), taskQueue, offendersKey(site, customer), asked, { maxPrefix });
	if (asked.length === 1) {
		out(await addBlock(await conn(), taskQueue, site, dp, (await escalated())[0], maxPrefix));
		return 0;
	}
	checkEntries(entries, maxPrefix);
	const reqs = await escalated(); // after the checks: a refused command counts no offense
	const chunks: BlockRequest[][] = [];
	for (let i = 0; i < reqs.length; i += MAX_BULK_BLOCKS) chunks.push(reqs.slice(i, i + MAX_BULK_BLOCKS));
	for (const c of chunks) checkBulkRequest({ blocks: c }, maxPrefix);
	const all: BulkBlockResult = { blocks: [], refused: [] };
	for (const c of chunks) {
		const r = await addBlocks(await conn(), taskQueue, site, dp, { blocks: c }, maxPrefix);
		all.blocks.push(...r.blocks);
		all.refused.push(...r.refused);
	}
	out(all);
	return all.refused.length ? 1 : 0;
}

/** Every entry checked before anything is sent; an error names the entry as the user wrote it. */
function checkEntries(entries: { entry: string; label: string }[], maxPrefix: number | undefined) {
	const seen = new Map<string, string>();
	for (const e of entries) {
		let range: string;
		try {
			range = normalizeEntry(e.entry, maxPrefix);
		} catch (x) {
			if (x instanceof BlockInputError) throw new UsageError(`${e.label}: ${x.rule}`);
			throw x;
		}
		if (seen.has(range))
			throw new UsageError(
				`${e.label}: ${e.entry} is the same range as ${seen.get(range)} (${range}): name each range once`,
			);
		seen.set(range, e.label);
	}
}
