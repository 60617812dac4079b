import { boundIssues, issuesText } from './limits';
import { redactText } from './redact';
import type { PriorityClass } from './rateBudget';

/** Errors thrown by the client. Messages and properties never carry a secret or a token. */

export interface FieldIssue {
	field: string;
	rule: string;
}

const BRAND = Symbol.for('security-service.error');

/**
 * Base of the client's errors. `instanceof` checks a global brand and the name, so it holds across duplicate
 * copies of this module (ESM/CJS loaders, bundles).
 */
export class SecurityServiceError extends Error {
	readonly opId: string;
	static [Symbol.hasInstance](v: unknown): boolean {
		if (typeof v !== 'object' || v === null || !(BRAND in v)) return false;
		if (this.name === 'SecurityServiceError') return true;
		for (let p = Object.getPrototypeOf(v); p; p = Object.getPrototypeOf(p))
			if (p.constructor?.name === this.name) return true;
		return false;
	}
	constructor(opId: string, message: string, options?: { cause?: unknown }) {
		super(redactText(message));
		Object.defineProperty(this, BRAND, { value: true });
		this.name = new.target.name;
		this.opId = opId;
		if (options?.cause !== undefined) this.cause = scrubCause(options.cause);
		if (this.stack) this.stack = redactText(this.stack);
	}
	toJSON(): Record<string, unknown> {
		return { name: this.name, message: this.message, opId: this.opId };
	}
}

/** Invalid input: nothing was sent. */
export class ValidationError extends SecurityServiceError {
	/** The first MAX_ISSUES issues (field and rule clipped); `moreIssues` counts the rest. */
	readonly issues: FieldIssue[];
	readonly moreIssues: number;
	constructor(opId: string, issues: FieldIssue[]) {
		super(opId, `${opId}: invalid input — ${issuesText(issues)}`);
		const { shown, more } = boundIssues(issues);
		this.issues = shown;
		this.moreIssues = more;
	}
	override toJSON() {
		return { ...super.toJSON(), issues: this.issues, ...(this.moreIssues ? { moreIssues: this.moreIssues } : {}) };
	}
}

/**
 * A refusal of the blast-radius guard (api/blastRadius.ts): a ValidationError (field, rule, conflicting range;
 * nothing sent) that hosts can tell apart — a runbook skips such an entry with the reason instead of failing.
 */
export class BlastRadiusError extends ValidationError {}

/** The service answered with an envelope whose code is not 0. */
export class ApiError extends SecurityServiceError {
	readonly code: number;
	readonly msg: string;
	constructor(opId: string, code: number, msg: string) {
		super(opId, `${opId}: the service answered code ${code}: ${msg}`);
		this.code = code;
		this.msg = redactText(msg);
	}
	override toJSON() {
		return { ...super.toJSON(), code: this.code, msg: this.msg };
	}
}

export type TransportFailure = 'network' | 'timeout' | 'http' | 'decode' | 'result' | 'too_large';

/** HTTP status other than 2xx/3xx, network failure, timeout, or a body that is not the documented envelope. */
export class TransportError extends SecurityServiceError {
	readonly kind: TransportFailure;
	readonly status?: number;
	/** True when the request may have reached the service (the outcome of a write is unknown). */
	readonly maybeApplied: boolean;
	constructor(
		opId: string,
		kind: TransportFailure,
		message: string,
		opts: { status?: number; maybeApplied: boolean; cause?: unknown },
	) {
		super(opId, `${opId}: ${message}`, { cause: opts.cause });
		this.kind = kind;
		this.status = opts.status;
		this.maybeApplied = opts.maybeApplied;
	}
	override toJSON() {
		return { ...super.toJSON(), kind: this.kind, status: this.status, maybeApplied: this.maybeApplied };
	}
}

/** Keeps a cause's name, message and code, redacted; drops request objects that may hold tokens. */
function scrubCause(cause: unknown): unknown {
	if (cause instanceof Error) {
		const e = new Error(redactText(cause.message));
		e.name = cause.name;
		const code = (cause as { code?: unknown }).code;
		if (typeof code === 'string' || typeof code === 'number') (e as Error & { code?: unknown }).code = code;
		e.stack = redactText(cause.stack ?? '');
		return e;
	}
	return typeof cause === 'string' ? redactText(cause) : undefined;
}

/** A call whose turn in the request budget did not come before its `budgetDeadline`: nothing was sent. */
export class BudgetDeferredError extends SecurityServiceError {
	constructor(opId: string, cls: PriorityClass) {
		super(opId, `no turn in the request budget (class ${cls}) before the call's deadline; nothing was sent`);
		this.name = 'BudgetDeferredError';
	}
}
