/** A Prometheus text exposition (a worker's /metrics) as `name{labels} → value` rows, for the tests' checks. */
export function parsePrometheus(text: string): { name: string; labels: Record<string, string>; value: number }[] {
	const out: { name: string; labels: Record<string, string>; value: number }[] = [];
	for (const line of text.split('\n')) {
		if (!line || line.startsWith('#')) continue;
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
		if (!m) continue;
		const labels: Record<string, string> = {};
		for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
		out.push({ name: m[1], labels, value: Number(m[3]) });
	}
	return out;
}
