// One HTTP request to the simulator: the control API under /__sim/, else the catalog's route, the injected fault, the
// token and rate limit, the body as the operation's encoding reads it, and the operation's answer in the envelope.
import type http from 'node:http';
import { CODES } from './codes.mts';
import { handleControl } from './control.mts';
import { handlers, Redirect } from './handlers.mts';
import { requestCtx } from './handlers/shared.mts';
import { drain, EMPTY_BUF, HANG_MAX_MS, holdOpen, maskFields, maskJson, readBody, sendJson } from './http.mts';
import type { Simulator } from './index.mts';
import { boundaryOf, MultipartError, parseMultipart, parseUrlEncoded, type Fields } from './multipart.mts';
import type { LogEntry } from './options.mts';
import { authenticate } from './auth.mts';
import { Input, JsonBoundError, SimError, parseBoundedJson, sleep, validationError } from './util.mts';

const EMPTY: Fields = new Map();

type Finish = (
	status: number,
	body: { code: number } & Record<string, unknown>,
	headers?: Record<string, string>,
) => void;

export async function handleRequest(sim: Simulator, req: http.IncomingMessage, res: http.ServerResponse) {
	const recvAt = Date.now();
	const url = req.url ?? '/';
	const qi = url.indexOf('?');
	const [path, qs] = qi < 0 ? [url, ''] : [url.slice(0, qi), url.slice(qi + 1)];
	const method = req.method ?? 'GET';
	if (path.startsWith('/__sim/') || path === '/__sim') {
		const body = await readBody(req);
		const r = await handleControl(sim, method, path, parseUrlEncoded(qs), body, req.headers);
		return sendJson(res, r.status, r.body);
	}
	const m = sim.router.match(method, path);
	if (!m) {
		drain(req);
		return sendJson(res, 404, { code: CODES.NOT_FOUND, msg: `no operation at ${method} ${path}` });
	}
	if ('methods' in m) {
		drain(req);
		return sendJson(res, 405, {
			code: CODES.NOT_FOUND,
			msg: `${method} is not allowed on ${path} (allowed: ${m.methods.join(', ')})`,
		});
	}
	const hasBody =
		req.headers['content-length'] !== undefined
			? req.headers['content-length'] !== '0'
			: req.headers['transfer-encoding'] !== undefined;
	const raw = hasBody ? await readBody(req) : (drain(req), EMPTY_BUF);
	const query = parseUrlEncoded(qs);
	const entry = sim.logRequest({
		time: sim.nowMs(),
		opId: m.opId,
		method,
		path,
		query: maskFields(query),
		body: undefined,
		status: 200,
		code: null,
		recvAt,
	});
	let lateMs = 0;
	const finish: Finish = (status, body, headers) => {
		entry.status = status;
		entry.code = body.code;
		answer(lateMs, () => sendJson(res, status, body, headers));
	};
	if (sim.faults.length && (await injectFault(sim, req, entry, query, finish, (ms) => (lateMs = ms)))) return;
	try {
		const def = handlers[m.opId];
		if (!def) throw new SimError(CODES.INTERNAL, `operation ${m.opId} is not implemented`);
		if (path.startsWith('/api/')) {
			entry.caller = authenticate(sim, m.opId, query, m.params, entry);
			if (rateLimited(sim, query, entry, recvAt, finish)) return;
		}
		const { fields, json } =
			(method === 'POST' || method === 'PUT') && def.enc !== 'query' && def.enc !== 'redirect'
				? readFields(sim, def.enc, String(req.headers['content-type'] ?? ''), raw, entry)
				: { fields: EMPTY, json: undefined };
		const ctx = requestCtx(
			m.params,
			new Input(query, ['access_token']),
			new Input(fields),
			json,
			sim.opts.unknownFields === 'reject',
		);
		const result = await def.fn(sim, ctx);
		entry.caller ??= ctx.caller;
		if (result instanceof Redirect) {
			entry.status = 302;
			entry.code = 0;
			res.writeHead(302, { location: result.location, 'content-length': '0' });
			res.end();
			return;
		}
		finish(200, result === undefined ? { code: 0, msg: 'success' } : { code: 0, msg: 'success', result });
	} catch (e) {
		if (e instanceof SimError) finish(200, { code: e.code, msg: e.message });
		else finish(200, { code: CODES.INTERNAL, msg: `internal error: ${(e as Error).message}` });
	}
}

/** Sends the answer; `ms` later when a `lateAnswer` fault holds it (the call took effect, a client gone meanwhile never reads it). */
function answer(ms: number, send: () => void): void {
	if (ms) setTimeout(send, ms);
	else send();
}

/** Applies the first matching injected fault; true when it answered (or dropped) the request itself. */
async function injectFault(
	sim: Simulator,
	req: http.IncomingMessage,
	entry: LogEntry,
	query: Fields,
	finish: Finish,
	answerLate: (ms: number) => void,
): Promise<boolean> {
	const fault = sim.takeFault(entry.opId ?? '', entry.path);
	if (!fault) return false;
	entry.fault = fault.kind;
	switch (fault.kind) {
		case 'delay':
			await sleep(fault.delayMs ?? 1000);
			return false;
		case 'lateAnswer':
			answerLate(fault.delayMs ?? 1000);
			return false;
		case 'hang':
			// A frozen service: the connection stays open and nothing is answered until the client gives up, the
			// fault's window ends or 10 minutes pass; then the connection is closed without an answer.
			entry.status = 0;
			await holdOpen(req.socket, fault.until !== undefined ? Math.max(0, fault.until - sim.nowMs()) : HANG_MAX_MS);
			req.socket.destroy();
			return true;
		case 'reset':
			entry.status = 0;
			req.socket.destroy();
			return true;
		case 'http5xx':
			finish(fault.status ?? 503, { code: CODES.INTERNAL, msg: 'injected fault: service unavailable' });
			return true;
		case 'code':
			finish(200, { code: fault.code ?? CODES.INTERNAL, msg: 'injected fault' });
			return true;
		case 'ratelimit':
			finish(
				fault.status ?? 200,
				{ code: CODES.RATE_LIMITED, msg: 'rate limited: too many requests' },
				fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : undefined,
			);
			return true;
		case 'expireToken': {
			const t = query.get('access_token')?.[0];
			const rec = t ? sim.tokens.get(t) : undefined;
			if (rec) rec.expiresAtMs = Math.min(rec.expiresAtMs, sim.nowMs());
			return false;
		}
	}
}

/** Counts the call against the rate limit; true when it refused (and answered) it. */
function rateLimited(sim: Simulator, query: Fields, entry: LogEntry, recvAt: number, finish: Finish): boolean {
	const limiter = sim.rateLimiter;
	if (!limiter) return false;
	const rec = sim.tokens.get(query.get('access_token')?.[0] ?? '');
	const refusedBy = limiter.check(rec?.kind === 'user' ? rec.customer_id : undefined, recvAt);
	entry.rlTokens = Math.round(limiter.appTokens * 100) / 100;
	if (refusedBy === undefined) return false;
	entry.fault = 'ratelimit';
	const a = limiter.answer();
	finish(a.status, a.body, a.headers);
	return true;
}

/** The body's fields as the operation's encoding reads them (a JSON operation: its JSON), logged masked. */
function readFields(
	sim: Simulator,
	enc: string | undefined,
	ct: string,
	raw: Buffer,
	entry: LogEntry,
): { fields: Fields; json?: unknown } {
	const want =
		enc === 'multipart'
			? 'multipart/form-data'
			: enc === 'json'
				? 'application/json'
				: 'application/x-www-form-urlencoded';
	const type = ct.toLowerCase();
	if (sim.opts.strictContentType && !type.startsWith(want))
		throw new SimError(CODES.BAD_CONTENT_TYPE, `content-type: this operation takes ${want} (got '${ct || 'none'}')`);
	if (enc === 'json') {
		const json = raw.length ? jsonBody(raw) : undefined;
		entry.body = maskJson(json);
		return { fields: EMPTY, json };
	}
	let fields: Fields;
	if (type.startsWith('multipart/form-data')) {
		const boundary = boundaryOf(ct);
		if (!boundary) throw new SimError(CODES.BAD_CONTENT_TYPE, 'content-type: multipart/form-data needs a boundary');
		try {
			fields = parseMultipart(raw, boundary);
		} catch (e) {
			throw validationError([
				{ field: 'body', rule: e instanceof MultipartError ? e.message : 'malformed multipart body' },
			]);
		}
	} else if (type.startsWith('application/json')) {
		const o = raw.length ? jsonBody(raw) : {};
		if (!o || typeof o !== 'object' || Array.isArray(o))
			throw validationError([{ field: 'body', rule: 'must be a JSON object' }]);
		fields = new Map(Object.entries(o).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]));
	} else fields = parseUrlEncoded(raw.toString('utf8'));
	entry.body = maskFields(fields);
	return { fields };
}

function jsonBody(raw: Buffer): unknown {
	try {
		return parseBoundedJson(raw.toString('utf8'));
	} catch (e) {
		throw validationError([{ field: 'body', rule: e instanceof JsonBoundError ? e.message : 'must be valid JSON' }]);
	}
}
