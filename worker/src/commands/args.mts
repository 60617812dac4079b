import { readFileSync, statSync } from 'node:fs';
import type { Client as TemporalClient } from '@temporalio/client';
import { idProblem } from '../../../api/limits.ts';
import type { WorkerConfig } from '../process/config.mts';

/** What every command gets: its arguments, the Temporal connection (opened on first use) and the output. */
export interface CommandContext {
	cmd: string;
	pos: string[];
	o: Record<string, string | boolean>;
	/** Temporal settings (address, namespace, task queue …). */
	t: WorkerConfig['temporal'];
	conn: () => Promise<TemporalClient>;
	out: (v: unknown) => void;
	err: (s: string) => void;
	/** Positional argument i, required; SITE|ID is checked as a site or workflow id, other text bounded. */
	need: (i: number, what: string) => string;
}

/** A command: resolves with the exit code. */
export type Command = (c: CommandContext) => Promise<number>;

export function opts(args: string[]) {
	const pos: string[] = [];
	const o: Record<string, string | boolean> = {};
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a.startsWith('--')) {
			const k = a.slice(2);
			const next = args[i + 1];
			if (
				next !== undefined &&
				!next.startsWith('--') &&
				![
					'dry-run',
					'wait',
					'reject',
					'enforce',
					'markdown',
					'running',
					'json',
					'with-html',
					'app',
					'simulator',
				].includes(k)
			) {
				o[k] = next;
				i++;
			} else o[k] = true;
		} else pos.push(a);
	}
	return { pos, o };
}

const MAX_FILE = 4 * 1024 * 1024;
export const readJson = (f: unknown, what: string) => {
	if (typeof f !== 'string') throw new UsageError(`--${what}: is required (a JSON file)`);
	try {
		if (statSync(f).size > MAX_FILE) throw new Error(`larger than ${MAX_FILE} bytes`);
		return JSON.parse(readFileSync(f, 'utf8')) as unknown;
	} catch (e) {
		throw new UsageError(`--${what} ${f}: must be a readable JSON file (${(e as Error).message})`);
	}
};

/** A user's mistake on the command line: printed as `secsvc: <message>`, exit 2. */
export class UsageError extends Error {}

/** Free-text options (--by, --reason) and positional ids: bounded, no control characters. */
const MAX_TEXT = 1024;
export function text(v: unknown, what: string): string | undefined {
	if (v === undefined) return undefined;
	if (typeof v !== 'string') throw new UsageError(`${what}: needs a value`);
	if (v.length > MAX_TEXT) throw new UsageError(`${what}: must be at most ${MAX_TEXT} characters (got ${v.length})`);
	if (/[\u0000-\u001f\u007f]/.test(v)) throw new UsageError(`${what}: must not contain control characters`);
	return v;
}
/** SITE|ID: a site id (the safe id alphabet) or a workflow id (attack-response-<site>…, same alphabet, ≤ 256). */
export function runbookArg(v: unknown, what = 'SITE|ID'): string {
	if (typeof v !== 'string' || v.length > 256 || !/^[A-Za-z0-9][A-Za-z0-9._~-]*$/.test(v))
		throw new UsageError(
			`${what}: must be a site id or a workflow id of at most 256 characters from A–Z a–z 0–9 . _ ~ - (got ${JSON.stringify(String(v).slice(0, 40))}${String(v).length > 40 ? '…' : ''})`,
		);
	return v;
}
export function siteArg(v: unknown, what: string): string {
	if (typeof v !== 'string') throw new UsageError(`${what}: is required`);
	const p = idProblem(v);
	if (p) throw new UsageError(`${what}: ${p}`);
	return v;
}
export function hoursArg(v: unknown): number | undefined {
	if (v === undefined) return undefined;
	const n = Number(v);
	if (!(Number.isInteger(n) && n >= 1 && n <= 2160))
		throw new UsageError('--hours: must be an integer from 1 to 2160 (90 days)');
	return n;
}
/** --every: a whole number of seconds, minutes, hours or days (1s … 365d). */
export function everyArg(v: unknown, dflt: string): string {
	const e = v === undefined ? dflt : v;
	const m = typeof e === 'string' ? /^([1-9]\d{0,5})(s|m|h|d)$/.exec(e) : null;
	const secs = m ? Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's'] : 0;
	if (!m || secs > 365 * 86400)
		throw new UsageError(`--every: must be a duration such as 30s, 5m, 1h or 1d (at most 365d)`);
	return e as string;
}
