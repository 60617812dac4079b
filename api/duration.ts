/**
 * Durations as people type them: seconds (`3600`, a number) or a number with a unit — `90s`, `30m`, `2h`, `1d`,
 * `1h30m`, `1.5h`. Pure; returns whole seconds, or undefined when the text is not a duration.
 */
const UNIT: Record<string, number> = { s: 1, sec: 1, m: 60, min: 60, h: 3600, hr: 3600, d: 86_400, w: 604_800 };

export const DURATION_RULE = 'must be seconds or a number with a unit: 90s, 30m, 2h, 1d, 1h30m';

export function parseDuration(v: unknown): number | undefined {
	if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
	if (typeof v !== 'string') return undefined;
	const s = v.trim().toLowerCase().replace(/\s+/g, '');
	if (/^\d+$/.test(s)) return Number(s);
	if (!/^(\d+(\.\d+)?(s|sec|min|m|hr|h|d|w))+$/.test(s)) return undefined;
	let total = 0;
	for (const [, n, , u] of s.matchAll(/(\d+(\.\d+)?)(sec|min|hr|s|m|h|d|w)/g)) total += Number(n) * UNIT[u];
	return Math.round(total);
}
