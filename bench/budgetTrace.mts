/**
 * Bench 9's explanation of each refusal (bench/budget.mts --trace): the workers' request traces
 * (SECSVC_REQUEST_TRACE, worker/src/process/requestTrace.mts: budget turns, socket writes, share refreshes) joined
 * with the simulator's request log (`recvAt`: when each request reached it; `rlTokens`: its bucket after it) and its
 * event-loop stalls. Every request the service saw is matched to the worker that wrote it to a socket (same method
 * and path, the latest write before it arrived); then the service's bucket is replayed three ways:
 *  - over the arrival times: must give the refusals the simulator logged (the replay is faithful);
 *  - over the socket-write times: what the service would have refused had every request arrived as it was sent;
 *  - over the budget turns: what the workers' buckets let through.
 * A refusal that the send-time replay does not give happened in transit (the simulator read a bunch at once after a
 * stall of its own, or the requests queued in the kernel); one the send-time replay gives but the turn-time replay
 * does not came from requests granted apart and sent together (the transport's connection pool); one the turn-time
 * replay gives was granted too early by the workers (their shares summed over the budget, or their bursts).
 */
import { readFileSync } from 'node:fs';

export interface SimLogEntry {
	seq: number;
	method: string;
	path: string;
	opId: string | null;
	recvAt?: number;
	rlTokens?: number;
	fault?: string;
}
interface TraceLine {
	t: number;
	e: string;
	[k: string]: unknown;
}
interface Matched {
	seq: number;
	recvAt: number;
	worker: number;
	sentAt: number;
	turnAt?: number;
	cls?: string;
	refused: boolean;
}

/** A token bucket replayed over times (ms): which of them it refuses. */
export function replayBucket(times: number[], rps: number, burst: number): boolean[] {
	let tokens = burst;
	let at = times.length ? times[0] : 0;
	return times.map((t) => {
		if (t > at) {
			tokens = Math.min(burst, tokens + ((t - at) / 1000) * rps);
			at = t;
		}
		if (tokens < 1) return true;
		tokens -= 1;
		return false;
	});
}

const readTrace = (file: string): TraceLine[] =>
	readFileSync(file, 'utf8')
		.split('\n')
		.filter(Boolean)
		.map((l) => JSON.parse(l) as TraceLine);

export function explainRefusals(
	log: SimLogEntry[],
	traceFiles: string[],
	stalls: { at: number; ms: number }[],
	service: { rps: number; burst: number },
	budget: { rps: number; burst: number },
) {
	const traces = traceFiles.map(readTrace);
	// socket writes per worker, keyed by method+path, with the budget turn that let each through (turn → req → send,
	// in order per operation and per path)
	const sends = new Map<string, { worker: number; t: number; turnAt?: number; cls?: string; used: boolean }[]>();
	traces.forEach((lines, w) => {
		const turns = new Map<string, TraceLine[]>();
		const reqs = new Map<string, { turnAt?: number; cls?: string }[]>();
		for (const l of lines) {
			if (l.e === 'turn' && l.ok) {
				const k = String(l.op);
				turns.set(k, [...(turns.get(k) ?? []), l]);
			} else if (l.e === 'req') {
				const q = turns.get(String(l.op));
				const turn = q?.shift();
				const k = `${l.m} ${l.p}`;
				reqs.set(k, [...(reqs.get(k) ?? []), { turnAt: turn?.t, cls: turn?.cls as string | undefined }]);
			} else if (l.e === 'send') {
				const k = `${l.m} ${l.p}`;
				const r = reqs.get(k)?.shift();
				sends.set(k, [...(sends.get(k) ?? []), { worker: w, t: l.t, turnAt: r?.turnAt, cls: r?.cls, used: false }]);
			}
		}
	});
	const api = log.filter((r) => r.opId !== null && r.path.startsWith('/api/') && r.recvAt !== undefined);
	const sorted = [...api].sort((a, b) => (a.recvAt as number) - (b.recvAt as number) || a.seq - b.seq);
	const matched: Matched[] = [];
	let unmatched = 0;
	for (const r of sorted) {
		const c = sends.get(`${r.method} ${r.path}`);
		// the latest unused write at or before the arrival (same clock; 5 ms for the two processes' reading of it)
		let best: (typeof c extends (infer X)[] | undefined ? X : never) | undefined;
		for (const s of c ?? []) if (!s.used && s.t <= (r.recvAt as number) + 5 && (!best || s.t > best.t)) best = s;
		if (!best) {
			unmatched++;
			continue;
		}
		best.used = true;
		matched.push({
			seq: r.seq,
			recvAt: r.recvAt as number,
			worker: best.worker,
			sentAt: best.t,
			turnAt: best.turnAt,
			cls: best.cls,
			refused: r.fault === 'ratelimit',
		});
	}
	const byRecv = replayBucket(
		sorted.map((r) => r.recvAt as number),
		service.rps,
		service.burst,
	);
	const replayRefused = byRecv.filter(Boolean).length;
	const bySend = [...matched].sort((a, b) => a.sentAt - b.sentAt);
	const sendRefused = new Set(
		replayBucket(
			bySend.map((m) => m.sentAt),
			service.rps,
			service.burst,
		).flatMap((x, i) => (x ? [bySend[i].seq] : [])),
	);
	const byTurn = matched.filter((m) => m.turnAt !== undefined).sort((a, b) => (a.turnAt ?? 0) - (b.turnAt ?? 0));
	const turnRefused = new Set(
		replayBucket(
			byTurn.map((m) => m.turnAt as number),
			service.rps,
			service.burst,
		).flatMap((x, i) => (x ? [byTurn[i].seq] : [])),
	);
	// the budget's own bucket over the turns: did the workers together grant more than the budget allows?
	const overBudget = replayBucket(
		byTurn.map((m) => m.turnAt as number),
		budget.rps,
		budget.burst,
	).filter(Boolean).length;
	// each worker's share over time (refreshes), to add them up at any moment
	const shares = traces.map((lines) =>
		lines.filter((l) => l.e === 'share').map((l) => ({ t: l.t, share: Number(l.share), computed: Number(l.computed) })),
	);
	const shareAt = (w: number, t: number) => {
		let s: number | undefined;
		for (const x of shares[w]) if (x.t <= t) s = x.share;
		return s;
	};
	let shareSumMax = 0;
	for (const lines of shares)
		for (const x of lines) {
			const sum = traces.reduce((a, _, w) => a + (shareAt(w, x.t) ?? 0), 0);
			shareSumMax = Math.max(shareSumMax, sum);
		}
	const refusals = matched
		.filter((m) => m.refused)
		.map((m) => {
			const near = matched.filter((x) => x.recvAt > m.recvAt - 1000 && x.recvAt <= m.recvAt);
			const stall = stalls.find((s) => s.at <= m.recvAt && s.at + s.ms + 20 >= m.recvAt - 50);
			const cause = !sendRefused.has(m.seq)
				? stall
					? `in transit: read after a ${stall.ms} ms stall of the simulator`
					: 'in transit: sent within the limit, arrived bunched'
				: !turnRefused.has(m.seq)
					? 'granted apart, sent together (transport queue)'
					: 'granted over the limit (shares or bursts)';
			const last200 = matched.filter((x) => x.recvAt > m.recvAt - 200 && x.recvAt <= m.recvAt);
			return {
				seq: m.seq,
				recvAt: m.recvAt,
				worker: m.worker,
				cls: m.cls,
				transitMs: m.recvAt - m.sentAt,
				queuedMs: m.turnAt !== undefined ? m.sentAt - m.turnAt : null,
				arrivedLast1s: near.length,
				arrivedLast200ms: last200.length,
				sentSpanOfLast200ms: last200.length
					? Math.max(...last200.map((x) => x.sentAt)) - Math.min(...last200.map((x) => x.sentAt))
					: 0,
				shareSum: Math.round(traces.reduce((a, _, w) => a + (shareAt(w, m.recvAt) ?? 0), 0) * 1000) / 1000,
				cause,
			};
		});
	const transit = matched.map((m) => m.recvAt - m.sentAt).sort((a, b) => a - b);
	const queued = matched
		.filter((m) => m.turnAt !== undefined)
		.map((m) => m.sentAt - (m.turnAt as number))
		.sort((a, b) => a - b);
	const q = (a: number[], p: number) => (a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))] : null);
	return {
		requests: api.length,
		matched: matched.length,
		unmatched,
		refusedLogged: api.filter((r) => r.fault === 'ratelimit').length,
		refusedReplayArrival: replayRefused,
		refusedReplaySend: sendRefused.size,
		refusedReplayTurn: turnRefused.size,
		overBudgetTurns: overBudget,
		shareSumMax: Math.round(shareSumMax * 1000) / 1000,
		transitMs: { p50: q(transit, 0.5), p99: q(transit, 0.99), max: transit.at(-1) ?? null },
		queuedMs: { p50: q(queued, 0.5), p99: q(queued, 0.99), max: queued.at(-1) ?? null },
		simStalls: { count: stalls.length, maxMs: Math.max(0, ...stalls.map((s) => s.ms)) },
		refusals,
		causes: refusals.reduce<Record<string, number>>((a, r) => ({ ...a, [r.cause]: (a[r.cause] ?? 0) + 1 }), {}),
	};
}
