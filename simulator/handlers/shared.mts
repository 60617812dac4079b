/** Types and helpers every handler file shares: the request context, the handler shape, application-protection policy access. */
import type { Simulator } from '../index.mts';
import { type ApPolicy } from '../state.mts';
import { Input, validationError } from '../util.mts';

export type Encoding = 'multipart' | 'json' | 'form' | 'query' | 'redirect';

export interface Ctx {
	params: Record<string, string>;
	/** Query string, access_token excluded. */
	q: Input;
	/** multipart / urlencoded body. */
	b: Input;
	/** JSON body (json encoding). */
	json: unknown;
	/** Throws the collected validation issues (query and body) and unknown fields. */
	done(): void;
	/** Who the call names without an access token (a refresh: its refresh token's customer), for the request log. */
	caller?: string;
}

/** A handler's context: path params, query and body inputs; `done()` throws every issue of both at once. */
export function requestCtx(params: Record<string, string>, q: Input, b: Input, json: unknown, strict: boolean): Ctx {
	return {
		params,
		q,
		b,
		json,
		done: () => {
			const issues = [...q.issues, ...b.issues];
			q.issues = [];
			b.issues = [];
			for (const i of [q, b]) {
				try {
					i.finish(strict);
				} catch {
					/* collected below */
				}
			}
			issues.push(...q.issues, ...b.issues);
			if (issues.length) throw validationError(issues);
		},
	};
}

export class Redirect {
	constructor(readonly location: string) {}
}

export interface HandlerDef {
	enc: Encoding;
	fn: (sim: Simulator, c: Ctx) => unknown;
}

export const deep = <T,>(v: T): T => structuredClone(v);

export function isRegex(s: string): boolean {
	try {
		new RegExp(s);
		return true;
	} catch {
		return false;
	}
}

export const ap = (fn: (sim: Simulator, c: Ctx, p: ApPolicy) => unknown, enc: Encoding = 'query'): HandlerDef => ({
	enc,
	fn: (sim, c) => fn(sim, c, sim.dp(c.params).policy),
});

/** A GET that takes no parameters: reject unknown query names, then answer. */
export const apGet = (fn: (p: ApPolicy) => unknown): HandlerDef =>
	ap((_s, c, p) => {
		c.done();
		return fn(p);
	});
