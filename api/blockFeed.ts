import { aggregate, formatRange, parseEntry } from './ranges';
import { DEFAULT_MAX_PREFIX, normalizeEntry } from './blockRules';

/**
 * A threat feed for expiring blocks, merged before it is held (docs/expiring-blocks-capacity.md): every line checked
 * as a single block's entry (the field named by its line), then the addresses merged into the fewest ranges that cover
 * exactly the same addresses (overlapping and adjacent entries join; gaps are never bridged), a merged range never
 * wider than the widest block allowed (`maxPrefix`: cut into consecutive ranges of at most that many addresses).
 * Limits count these ranges, not lines: one range is one POST, one block and one coordinator hold. Pure.
 */
export function mergeFeed(
	lines: readonly { entry: string; label: string }[],
	maxPrefix = DEFAULT_MAX_PREFIX,
): string[] {
	const ranges = lines.map(
		(l) => parseEntry(normalizeEntry(l.entry, maxPrefix, l.label)) as { start: number; end: number },
	);
	const widest = 2 ** (32 - maxPrefix);
	const out: string[] = [];
	for (const r of aggregate(ranges))
		for (let start = r.start; start <= r.end; start += widest)
			out.push(formatRange({ start, end: Math.min(r.end, start + widest - 1) }));
	return out;
}
