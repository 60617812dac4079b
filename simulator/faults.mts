// Injected faults (simulator/README.md "Faults"): a spec checked naming its field, and the one that matches a call.
import type { FaultKind, FaultSpec } from './options.mts';
import type { Router } from './router.mts';

export type ActiveFault = FaultSpec & { count: number; until?: number };

const KINDS: FaultKind[] = ['http5xx', 'code', 'delay', 'lateAnswer', 'reset', 'ratelimit', 'expireToken', 'hang'];

/** The fault as it is kept (its count, its window's end on the simulator clock); throws naming a bad field. */
export function checkedFault(f: FaultSpec, router: Router, nowMs: number): ActiveFault {
	if (!KINDS.includes(f.kind)) throw new Error(`kind must be one of ${KINDS.join(', ')}`);
	if (f.op !== '*' && !router.routes.some((r) => r.id === f.op))
		throw new Error(`op must be an operation id or '*' (got '${f.op}')`);
	const count = f.count ?? 1;
	if (!(Number.isInteger(count) && count > 0)) throw new Error('count must be a positive integer');
	if (f.pathContains !== undefined && (typeof f.pathContains !== 'string' || f.pathContains === ''))
		throw new Error('pathContains must be a non-empty string');
	if (
		f.retryAfterSeconds !== undefined &&
		!(typeof f.retryAfterSeconds === 'number' && f.retryAfterSeconds >= 0 && f.retryAfterSeconds <= 3600)
	)
		throw new Error('retryAfterSeconds must be 0–3600');
	if (f.forMs !== undefined && !(Number.isFinite(f.forMs) && f.forMs > 0 && f.forMs <= 3_600_000))
		throw new Error('forMs must be a number of ms from 1 to 3600000');
	return { ...f, count, ...(f.forMs !== undefined ? { until: nowMs + f.forMs } : {}) };
}

/** The first fault matching the call, counted down; faults whose window ended are dropped on the way. */
export function takeFault(faults: ActiveFault[], opId: string, path: string, nowMs: number) {
	for (let i = 0; i < faults.length; i++) {
		const f = faults[i];
		if (f.until !== undefined && nowMs > f.until) {
			faults.splice(i--, 1);
			continue;
		}
		if ((f.op === '*' || f.op === opId) && (f.pathContains === undefined || path.includes(f.pathContains))) {
			if (f.until === undefined && --f.count <= 0) faults.splice(i, 1);
			return f;
		}
	}
	return undefined;
}
