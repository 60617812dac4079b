/** Detection thresholds (§4.5): a number, or a number with suffix K, M or G. Pure helpers. */

export function thresholdValue(s: string): number {
	const m = /^(\d+(?:\.\d+)?)([KMG]?)$/.exec(String(s).trim());
	if (!m) return NaN;
	const mult = m[2] === 'K' ? 1e3 : m[2] === 'M' ? 1e6 : m[2] === 'G' ? 1e9 : 1;
	return Number(m[1]) * mult;
}

/** Writes a value in the shortest exact notation (integers only; K/M/G when the value divides evenly). */
export function formatThreshold(n: number): string {
	const v = Math.max(1, Math.round(n));
	if (v % 1e9 === 0) return `${v / 1e9}G`;
	if (v % 1e6 === 0) return `${v / 1e6}M`;
	if (v % 1e3 === 0) return `${v / 1e3}K`;
	return String(v);
}

/** Current threshold times factor (never below 1). Unparseable values are returned unchanged. */
export function scaleThreshold(current: string, factor: number): string {
	const v = thresholdValue(current);
	if (!Number.isFinite(v)) return current;
	return formatThreshold(v * factor);
}

export function sameThreshold(a: string, b: string): boolean {
	const x = thresholdValue(a);
	const y = thresholdValue(b);
	if (Number.isNaN(x) || Number.isNaN(y)) return String(a).trim() === String(b).trim();
	return x === y;
}
