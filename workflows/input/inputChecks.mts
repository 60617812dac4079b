import { ApplicationFailure } from '@temporalio/common';
import { idProblem, issuesText, sizeIssues, type Issue } from '../../api/limits.ts';

/**
 * Input checks of workflow code (pure: no zod, no commands, so a valid input replays exactly as before). A workflow
 * started directly (SDK, HTTP API, `temporal workflow start`) checks its input before it does anything and FAILS THE
 * RUN — `ApplicationFailure` non-retryable, type `ValidationError`, "invalid <what> — <field>: <rule>" (bounded like
 * the plan's errors) — never the workflow task, which Temporal would retry forever. Update validators and signal
 * handlers use `problems()` (the first issue as `field: rule`). The rules are the CLI's and the node's: ids by
 * api/limits.ts, numbers by the same bounds (fleetShared FLEET_BOUNDS, blocksShared, the plan's limits).
 */

/** Sizes every input of workflow code is held to before its own rules run: 64 KB strings, 10,000 entries, 16 levels. */
export const INPUT_SIZE: { maxString: number; maxList: number; maxDepth: number } = {
	maxString: 64 * 1024,
	maxList: 10_000,
	maxDepth: 16,
};

export const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Collects `field: rule` issues of one input. */
export class Rules {
	readonly issues: Issue[] = [];
	bad(field: string, rule: string): false {
		this.issues.push({ field, rule });
		return false;
	}
	obj(field: string, v: unknown, optional = false): v is Record<string, unknown> {
		if (v === undefined && optional) return false;
		return isObj(v) || this.bad(field, 'must be an object');
	}
	id(field: string, v: unknown, optional = false): boolean {
		if (v === undefined && optional) return true;
		const p = idProblem(v);
		return p ? this.bad(field, p) : true;
	}
	int(field: string, v: unknown, min: number, max: number, optional = false): boolean {
		if (v === undefined && optional) return true;
		return (
			(typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) ||
			this.bad(field, `must be an integer from ${min} to ${max}`)
		);
	}
	num(field: string, v: unknown, min: number, max: number, optional = false): boolean {
		if (v === undefined && optional) return true;
		return (
			(typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max) ||
			this.bad(field, `must be a number from ${min} to ${max}`)
		);
	}
	text(field: string, v: unknown, max: number, optional = false, min = 1): boolean {
		if (v === undefined && optional) return true;
		if (typeof v !== 'string') return this.bad(field, 'must be a string');
		return (
			(v.length >= min && v.length <= max) ||
			this.bad(field, `must be ${min ? `${min}–` : 'at most '}${max} characters (got ${v.length})`)
		);
	}
	bool(field: string, v: unknown, optional = true): boolean {
		if (v === undefined && optional) return true;
		return typeof v === 'boolean' || this.bad(field, 'must be true or false');
	}
	oneOf(field: string, v: unknown, allowed: readonly unknown[], optional = true): boolean {
		if (v === undefined && optional) return true;
		return allowed.includes(v) || this.bad(field, `must be one of ${allowed.join(', ')}`);
	}
	list(field: string, v: unknown, max: number, optional = true): v is unknown[] {
		if (v === undefined && optional) return false;
		if (!Array.isArray(v)) return this.bad(field, 'must be a list');
		return v.length <= max || this.bad(field, `must have at most ${max} entries (got ${v.length})`);
	}
	/** Only these keys (unknown fields are refused, as the CLI's strict schemas do). */
	keys(field: string, v: Record<string, unknown>, allowed: readonly string[]): void {
		for (const k of Object.keys(v))
			if (!allowed.includes(k)) this.bad(field ? `${field}.${k}` : k, 'is not a known field');
	}
}

/** The issues of an input: its sizes first (a huge input gets one issue per oversized part), then `rules`. */
export function problems(
	input: unknown,
	rules: (r: Rules, input: unknown) => void,
	size: Partial<typeof INPUT_SIZE> = {},
): Issue[] {
	const sized = sizeIssues(input, { ...INPUT_SIZE, ...size });
	if (sized.length) return sized;
	const r = new Rules();
	rules(r, input);
	return r.issues;
}

/** Throws the failure that ends the run when `issues` is not empty. */
export function failOn(what: string, issues: Issue[]): void {
	if (issues.length)
		throw ApplicationFailure.nonRetryable(`invalid ${what} — ${issuesText(issues)}`, 'ValidationError');
}

/** For Update validators and signal handlers: throws `field: rule` (the first issues) when the input breaks a rule. */
export function refuseOn(issues: Issue[]): void {
	if (issues.length) throw new Error(issuesText(issues, 3));
}
