import type { Client as TemporalClient } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { catalog, getOperation } from '../../../api/catalog/index.ts';
import type { CatalogEntry } from '../../../api/catalog/types.ts';
import { isClientRefusal, type Client } from '../../../api/client.ts';
import { redactDeep, redactText } from '../../../api/redact.ts';
import { EXACT_SETTINGS, exactList, exactSet } from './exactWrites.mts';
import { filterOnceActivities } from './httpFilterOnce.mts';
import { beating, sendOnce } from './writeRecord.mts';
import { serializedFilterWrite } from './filterLease.mts';
import { parsePlan, PlanError } from '../../../api/runbook/plan.ts';
import {
	ADD_EACH_ACTIVITY,
	CHECK_INPUT_ACTIVITY,
	PARSE_PLAN_ACTIVITY,
	WRITE_STEPS_ACTIVITY,
	WRITE_STEPS_HELD_ACTIVITY,
	type AddEachInput,
	type WriteStepsInput,
} from '../../../workflows/pure/activityNames.mts';
import { exactAddEach, exactWriteSteps } from './exactBatch.mts';
import { checkInput } from './inputCheck.mts';
import type { WriteCondition } from '../../../workflows/pure/activityTypes.mts';

/**
 * Activities for every catalog operation, generated: activity name = operation id
 * (e.g. `applicationProtection.ipBlacklist.add`). The client holds the credentials; activity inputs and results
 * (which Temporal records in history) never carry a secret or a token.
 *
 * Error mapping:
 *  - ValidationError → ApplicationFailure.nonRetryable type 'ValidationError' (nothing was sent)
 *  - ApiError → nonRetryable type 'ApiError' unless its code is a rate-limit code → retryable 'RateLimited'
 *  - TransportError → retryable 'TransportError', except a write of an unsafe operation whose outcome is
 *    unknown (maybe applied) → nonRetryable 'OutcomeUnknown' (repeating it could duplicate the write)
 */

export type Activity = (params?: Record<string, unknown>, when?: WriteCondition) => Promise<unknown>;

export interface ActivityOptions {
	/**
	 * API codes that are retried (the service refused, nothing was applied, trying later may succeed):
	 * rate limited (42901), HTTP-filter busy (40901), internal error (50001). The spec lists no codes (§7);
	 * configurable (SECSVC_RETRYABLE_API_CODES).
	 */
	retryableApiCodes?: readonly number[];
	/**
	 * The worker's Temporal client: HTTP-filter create/edit take a lease at the site's coordinator
	 * (workflows/coordinator/siteCoordinator.mts) so they never overlap across worker processes and hosts (§4.3.1/§7).
	 * Without it (activities used outside a worker) they are serialized in this process only.
	 */
	coordination?: () => TemporalClient;
	/** Values for secret-bearing fields of the authorization operations, taken from the worker's configuration. */
	authInputs?: { appId?: string; secret?: string; refreshToken?: string; authCode?: string };
}

/** Fields that must never travel through Temporal (inputs are recorded in history). */
const SECRET_FIELDS = new Set(['secret', 'refresh_token', 'code', 'access_token']);
const FROM_CONFIG: Record<string, keyof NonNullable<ActivityOptions['authInputs']>> = {
	app_id: 'appId',
	secret: 'secret',
	refresh_token: 'refreshToken',
	code: 'authCode',
};

/**
 * Operations this module makes idempotent, whatever the catalog says: IP-list add / remove and the settings of
 * EXACT_SETTINGS read first (exactWrites.mts), so a retry after an unknown outcome finds its own write.
 */
const IDEMPOTENT_HERE = (op: CatalogEntry) =>
	op.id in EXACT_SETTINGS ||
	(op.resource === 'applicationProtection' &&
		(op.group === 'ipBlacklist' || op.group === 'ipWhitelist') &&
		(op.action === 'add' || op.action === 'remove'));

export const DEFAULT_RETRYABLE_API_CODES: readonly number[] = [42901, 40901, 50001];

export function createActivities(client: Client, opts: ActivityOptions = {}): Record<string, Activity> {
	const rateCodes = new Set(opts.retryableApiCodes ?? DEFAULT_RETRYABLE_API_CODES);
	const acts: Record<string, Activity> = {};
	for (const op of catalog) {
		if (op.encoding === 'redirect') {
			acts[op.id] = async (params = {}) =>
				wrap(op, rateCodes, async () => redactDeep(await client.connect(withAuthInputs(op, params, opts))));
			continue;
		}
		acts[op.id] = async (params = {}, when?: WriteCondition) =>
			wrap(op, rateCodes, () => run(client, op, withAuthInputs(op, params, opts), opts.coordination, when));
	}
	// Plans are parsed here, in the worker, so zod stays out of the workflow bundle (workflows/input/parsePlan.mts).
	acts[PARSE_PLAN_ACTIVITY] = async (plan?: unknown) => {
		try {
			return parsePlan(plan) as unknown as Record<string, unknown>;
		} catch (e) {
			// bounded (first 10 issues + a count): a huge invalid plan must fail the run, not exceed gRPC's message limit
			if (e instanceof PlanError)
				throw ApplicationFailure.nonRetryable(e.message, 'ValidationError', {
					issues: e.issues,
					moreIssues: e.moreIssues,
				});
			throw e;
		}
	};
	// A runbook's blacklist adds of one domain-port in one task, each entry as the add above writes it (exactBatch.mts).
	acts[ADD_EACH_ACTIVITY] = async (input?: unknown) =>
		exactAddEach(client, (input ?? {}) as AddEachInput, opts.coordination, (e) =>
			toFailure('applicationProtection.ipBlacklist.add', e, rateCodes),
		);
	// A runbook's write groups in one task, each write as its own activity writes it (exactBatch.mts).
	acts[WRITE_STEPS_ACTIVITY] = async (input?: unknown) =>
		exactWriteSteps(client, { ...(input as WriteStepsInput), hold: undefined }, opts.coordination, (op, e) =>
			toFailure(op, e, rateCodes),
		);
	// The same, its list entries held by the calling workflow beside their reads (entriesHold.mts).
	acts[WRITE_STEPS_HELD_ACTIVITY] = async (input?: unknown) =>
		exactWriteSteps(client, (input ?? {}) as WriteStepsInput, opts.coordination, (op, e) =>
			toFailure(op, e, rateCodes),
		);
	// Inputs of workflows started directly, checked by the CLI's own rules (workflows/input/checkInWorker.mts).
	acts[CHECK_INPUT_ACTIVITY] = async (kind?: unknown, input?: unknown) => checkInput(client, kind, input);
	// The durable call's HTTP-filter create, made idempotent (httpFilterOnce.mts), serialized like every create/edit.
	const serialized = <T,>(site: string, dp: string, fn: () => Promise<T>) =>
		serializedFilterWrite(opts.coordination, site, dp, fn);
	Object.assign(
		acts,
		filterOnceActivities(client, serialized, (op, e) => toFailure(op, e, rateCodes)),
	);
	// Every activity heartbeats while it runs (writeRecord.mts): a killed worker's attempt is retried within the
	// caller's heartbeat timeout, not after its start-to-close.
	const beatingActs: Record<string, Activity> = {};
	for (const [k, f] of Object.entries(acts) as [string, (...a: unknown[]) => Promise<unknown>][])
		beatingActs[k] = (...a: unknown[]) => beating(() => f(...a));
	return beatingActs;
}

async function run(
	client: Client,
	op: CatalogEntry,
	params: Record<string, unknown>,
	coordination?: () => TemporalClient,
	when?: WriteCondition,
): Promise<unknown> {
	if (when?.expect !== undefined && !(op.id in EXACT_SETTINGS))
		throw ApplicationFailure.nonRetryable(
			`${op.id}: invalid input — when.expect: only a setting's write takes a condition`,
			'ValidationError',
			{ opId: op.id, issues: [{ field: 'when.expect', rule: "only a setting's write takes a condition" }] },
		);
	if (op.resource === 'applicationProtection' && op.group === 'httpFilter' && /^(create|update)$/.test(op.action)) {
		// §4.3.1 / §7: no concurrent create/edit of a domain-port's filters: one at a time inside this process, and a
		// lease at the site's coordinator across processes and hosts. An edit is checked against the policy first.
		const valid = client.validate(op.id, params); // bad input fails before any lease is taken
		return serializedFilterWrite(coordination, String(valid.site_id), String(valid.domain_port_id), () =>
			op.action === 'update'
				? exactSet(client, op, params, coordination)
				: sendOnce(op.id, coordination, () => client.call(op.id, params)),
		);
	}
	// Writes answer with what they changed (exactWrites.mts): IP-list add / remove, and the settings playbooks write.
	if (IDEMPOTENT_HERE(op))
		return op.id in EXACT_SETTINGS
			? exactSet(client, op, params, coordination, when?.expect)
			: exactList(client, op, params, coordination);
	// Any other write that a retry cannot check is sent at most once (writeRecord.mts).
	const r =
		op.safety === 'unsafe'
			? await sendOnce(op.id, coordination, () => client.call(op.id, params))
			: await client.call(op.id, params);
	return op.resource === 'authorization' ? redactDeep(r) : r;
}

/** Authorization operations take their secrets from the worker configuration, never from activity input. */
function withAuthInputs(
	op: CatalogEntry,
	params: Record<string, unknown>,
	opts: ActivityOptions,
): Record<string, unknown> {
	const p = { ...(params ?? {}) };
	const given = Object.keys(p).filter(
		(k) => SECRET_FIELDS.has(k) && p[k] !== undefined && p[k] !== null && p[k] !== '',
	);
	if (given.length) {
		throw ApplicationFailure.nonRetryable(
			`${op.id}: invalid input — ${given.map((k) => `${k}: must not be passed through Temporal (secrets never enter workflow history); the worker takes it from its configuration`).join('; ')}`,
			'ValidationError',
			{ opId: op.id, issues: given.map((field) => ({ field, rule: 'must not be passed through Temporal' })) },
		);
	}
	if (op.resource !== 'authorization') return p;
	for (const f of op.fields) {
		const src = FROM_CONFIG[f.name];
		if (src && p[f.name] === undefined && opts.authInputs?.[src] !== undefined) p[f.name] = opts.authInputs[src];
	}
	return p;
}

async function wrap(op: CatalogEntry, rateCodes: Set<number>, fn: () => Promise<unknown>): Promise<unknown> {
	try {
		return await fn();
	} catch (err) {
		throw toFailure(op, err, rateCodes);
	}
}

export function toFailure(
	op: CatalogEntry | string,
	err: unknown,
	rateCodes: Set<number> = new Set(DEFAULT_RETRYABLE_API_CODES),
): Error {
	const o = typeof op === 'string' ? getOperation(op) : op;
	if (err instanceof ApplicationFailure) return err;
	const e = (err ?? {}) as Error & {
		issues?: unknown;
		code?: number;
		msg?: string;
		kind?: string;
		status?: number;
		maybeApplied?: boolean;
		rateLimited?: boolean;
	};
	const message = redactText(e.message ?? String(err));
	switch (e.name) {
		case 'ValidationError':
			return ApplicationFailure.nonRetryable(message, 'ValidationError', { opId: o.id, issues: e.issues });
		case 'BlastRadiusError':
			// the blast-radius guard refused a block (nothing sent): a runbook skips the entry with this reason
			return ApplicationFailure.nonRetryable(message, 'BlastRadius', { opId: o.id, issues: e.issues });
		case 'ApiError':
			if (typeof e.code === 'number' && rateCodes.has(e.code))
				return ApplicationFailure.retryable(message, e.code === 42901 ? 'RateLimited' : 'ApiErrorRetryable', {
					opId: o.id,
					code: e.code,
				});
			return ApplicationFailure.nonRetryable(message, 'ApiError', {
				opId: o.id,
				code: e.code,
				msg: e.msg === undefined ? undefined : redactText(e.msg),
			});
		case 'TransportError': {
			const details = { opId: o.id, kind: e.kind, status: e.status, maybeApplied: e.maybeApplied };
			if (e.rateLimited) return ApplicationFailure.retryable(message, 'RateLimited', details);
			// a 4xx refusal (no such path, headers too large, …) gets the same answer every time
			if (e.kind === 'http' && typeof e.status === 'number' && isClientRefusal(e.status))
				return ApplicationFailure.nonRetryable(message, 'HttpRefused', details);
			if (o.safety === 'unsafe' && !IDEMPOTENT_HERE(o) && e.maybeApplied !== false)
				return ApplicationFailure.nonRetryable(
					`${message} (outcome unknown; not repeated automatically)`,
					'OutcomeUnknown',
					details,
				);
			return ApplicationFailure.retryable(message, 'TransportError', details);
		}
		default:
			return ApplicationFailure.retryable(message, e.name || 'Error', { opId: o.id });
	}
}
