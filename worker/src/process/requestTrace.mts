// The request trace (SECSVC_REQUEST_TRACE=<file>; docs/rate-budget.md "Tracing"): one JSON line per event of the
// worker's API traffic, so each request the service saw can be followed back to this process — when it got its turn
// in the budget, when it was handed to the transport, when its bytes were written to a socket (undici's
// `undici:client:sendHeaders`), its answer, and each refresh of this worker's share of the cluster's budget.
// Off unless set. No secrets: paths only (the query, which carries the access token, is cut off).
import diagnosticsChannel from 'node:diagnostics_channel';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { ClientEvent } from '../../../api/client.ts';

export interface RequestTrace {
	/** The API client's events (chained after the metrics listener). */
	onEvent(e: ClientEvent): void;
	/** One refresh of the cluster share (worker/src/service/budgetShare.mts). */
	share(s: Record<string, unknown>): void;
	close(): void;
}

const pathOf = (url: string) => {
	const q = url.indexOf('?');
	const p = q < 0 ? url : url.slice(0, q);
	const s = p.indexOf('://');
	return s < 0 ? p : p.slice(p.indexOf('/', s + 3));
};

/** The trace of SECSVC_REQUEST_TRACE, or undefined when unset. */
export function requestTraceFromEnv(env: Record<string, string | undefined> = process.env): RequestTrace | undefined {
	const file = env.SECSVC_REQUEST_TRACE;
	if (!file) return undefined;
	const out: WriteStream = createWriteStream(file, { flags: 'a' });
	const line = (o: Record<string, unknown>) => out.write(`${JSON.stringify({ t: Date.now(), ...o })}\n`);
	const onSend = (m: unknown) => {
		const r = (m as { request?: { method?: string; path?: string } }).request;
		if (r?.path?.startsWith('/api/')) line({ e: 'send', m: r.method, p: pathOf(r.path) });
	};
	diagnosticsChannel.subscribe('undici:client:sendHeaders', onSend);
	line({ e: 'start', pid: process.pid });
	return {
		onEvent(e) {
			if (e.type === 'budget') line({ e: 'turn', op: e.opId, cls: e.cls, wait: e.waitMs, ok: e.granted });
			else if (e.type === 'request') line({ e: 'req', op: e.opId, m: e.method, p: pathOf(e.url), a: e.attempt });
			else if (e.type === 'response') line({ e: 'answer', op: e.opId, s: e.status, ms: e.ms });
			else if (e.type === 'refused') line({ e: 'refused', op: e.opId, s: e.status, code: e.code });
			else if (e.type === 'token') line({ e: 'token', kind: e.kind });
		},
		share(s) {
			line({ e: 'share', ...s });
		},
		close() {
			diagnosticsChannel.unsubscribe('undici:client:sendHeaders', onSend);
			out.end();
		},
	};
}
