/**
 * Where a worker process's memory goes, read from outside (bench T's diagnosis; any bench with worker processes):
 *  - smapsOf(pid): resident MB by mapping kind (file-backed by file, `[heap]` = malloc's main arena, anonymous by size:
 *    ≥ 60 MB = malloc arenas / V8 reservations), to tell native memory from the V8 heaps;
 *  - gaugeByQueue(metrics, name): an SDK gauge (e.g. temporal_sticky_cache_size) per task queue from /metrics.
 */
import { readFileSync } from 'node:fs';

export function smapsOf(pid: number): Record<string, number> {
	const by: Record<string, number> = {};
	let cur = '';
	for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
		const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
		if (m) {
			const size = (parseInt(m[2], 16) - parseInt(m[1], 16)) / 2 ** 20;
			cur = m[3]
				? m[3].startsWith('/')
					? `file ${m[3].split('/').pop()}`
					: m[3]
				: size >= 60
					? 'anon ≥60MB'
					: size >= 1
						? 'anon 1–60MB'
						: 'anon <1MB';
			continue;
		}
		const r = /^Rss:\s+(\d+) kB/.exec(line);
		if (r) by[cur] = (by[cur] ?? 0) + Number(r[1]) / 1024;
	}
	return Object.fromEntries(
		Object.entries(by)
			.filter(([, v]) => v >= 1)
			.sort((a, b) => b[1] - a[1])
			.map(([k, v]) => [k, Math.round(v)]),
	);
}

/** A gauge's value per `task_queue` label (summed over the other labels). */
export function gaugeByQueue(metrics: string, name: string): Record<string, number> {
	const out: Record<string, number> = {};
	for (const m of metrics.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\d+(?:\\.\\d+)?)`, 'gm'))) {
		const q = /task_queue="([^"]*)"/.exec(m[1])?.[1] ?? '';
		out[q] = (out[q] ?? 0) + Number(m[2]);
	}
	return out;
}
